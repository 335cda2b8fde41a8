/*
 * dsview verify's report: each bad chunk named by its source, its rows
 * (or elements) and where it lies, with the reason in words.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/verify_i.h"

int dsv_verify_internal(int err)
{
	return err == DSV_ERR_NOMEM || err == DSV_ERR_INTERNAL || err == DSV_ERR_INVALID;
}

/* b's chunk is read through the HDF5 library (not a recording's records,
 * which its format gathers itself). */
static int through_h5(const vjob *j, const vbad *b)
{
	return b->ref.fallback && dsv_source_get_info(j->srcs[b->src].s)->kind != DSV_SRC_EDF;
}

static const char *bad_reason(const vjob *j, const vbad *b)
{
	if (b->table && b->err == DSV_ERR_CORRUPT)
		return "its row of the block table does not match it (reads of a few rows "
		       "fall back to the whole chunk)";
	switch (b->err) {
	case DSV_ERR_CHECKSUM: return "Fletcher32 checksum mismatch";
	case DSV_ERR_CORRUPT:
		if (b->ref.fallback)
			return "a chunk of the file has the wrong stored size";
		switch (b->ref.codec) {
		case DSV_CODEC_LZ4: return "LZ4 data corrupt or decodes to the wrong size";
		case DSV_CODEC_ZSTD: return "zstd data corrupt or decodes to the wrong size";
		case DSV_CODEC_LZF: return "LZF data corrupt or decodes to the wrong size";
		case DSV_CODEC_BLOSC: return "Blosc data corrupt or decodes to the wrong size";
		case DSV_CODEC_BSHUF: return "bitshuffle data corrupt or decodes to the wrong size";
		case DSV_CODEC_BLOSC2: return "Blosc2 data corrupt or decodes to the wrong size";
		case DSV_CODEC_DEFLATE: return "deflate data corrupt or decodes to the wrong size";
		case DSV_CODEC_NONE:
			if (b->ref.shuffle)
				return "shuffled chunk shorter than its data";
			break;
		}
		return b->ref.grid ? "corrupt, or decodes to the wrong size"
				   : "stored chunk shorter than its data";
	case DSV_ERR_TRUNCATED: return "lies past the end of the file";
	case DSV_ERR_IO:
		return through_h5(j, b) ? "the HDF5 library could not read or decode it"
					: "read error";
	}
	return dsv_strerror(b->err);
}

static int cmp_bad(const void *pa, const void *pb)
{
	const vbad *a = pa, *b = pb;
	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->ref.index != b->ref.index)
		return a->ref.index < b->ref.index ? -1 : 1;
	return a->ref.elem_start < b->ref.elem_start ? -1 : a->ref.elem_start > b->ref.elem_start;
}

static void print_bad(const vjob *j, const vbad *b)
{
	const dsv_source_info *si = dsv_source_get_info(j->srcs[b->src].s);
	uint64_t first = b->ref.elem_start, end = first + b->ref.nelems, row = si->row_elems;

	printf("%s: chunk %llu, ", j->srcs[b->src].label, (unsigned long long)b->ref.index);
	if (row && first % row == 0 && end % row == 0)
		printf("rows %llu-%llu", (unsigned long long)(first / row),
		       (unsigned long long)(end / row - 1));
	else
		printf("elements %llu-%llu", (unsigned long long)first,
		       (unsigned long long)(end - 1));
	if (through_h5(j, b))
		printf(" (through the HDF5 library)");
	else if (b->ref.fallback)
		printf(" (gathered from the data records)");
	else if (b->ref.grid)
		printf(" (%s)", b->file);
	else
		printf(" (%llu bytes at offset %llu)", (unsigned long long)b->ref.stored_size,
		       (unsigned long long)b->ref.offset);
	printf(": %s\n", bad_reason(j, b));
}

int dsv_verify_report(vjob *j)
{
	int internal = 0;
	if (j->nbad)
		qsort(j->bads, j->nbad, sizeof(*j->bads), cmp_bad);
	for (size_t i = 0, b = 0; i < j->nsrcs; i++) {
		if (!j->srcs[i].s)
			printf("%s: not checked: %s\n", j->srcs[i].label, j->srcs[i].reason);
		for (; b < j->nbad && j->bads[b].src == i; b++) {
			print_bad(j, &j->bads[b]);
			if (dsv_verify_internal(j->bads[b].err))
				internal = j->bads[b].err;
		}
	}
	return internal;
}
