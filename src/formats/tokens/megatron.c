/*
 * Megatron-Core's indexed datasets (megatron/core/datasets/
 * indexed_dataset.py): PREFIX.bin holds the tokens of every sequence one
 * after the other; PREFIX.idx, the source named, describes them: the
 * magic "MMIDIDX\0\0", u64 version 1, u8 dtype code (1 uint8, 2 int8,
 * 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16), u64
 * sequence count S, u64 document count D, then int32 sequence_lengths[S],
 * int64 sequence_pointers[S] (byte offsets into the .bin), int64
 * document_indices[D] (0, then the sequence each document ends at), and
 * for multimodal data int8 modes[S]. Served as the .bin's one token
 * stream, every field checked first: the .idx's size against its counts,
 * each pointer against the lengths before it (the .bin is one run), the
 * document indices rising to S, and the .bin's size against the lengths'
 * sum in the dtype the code says (a .bin whose size fits another dtype
 * is named so). The arrays are read in blocks: an index of millions of
 * sequences costs no more memory than a small one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "common/bytes.h"
#include "common/str.h"
#include "formats/tokens/megatron_i.h"
#include "formats/tokens/tokens.h"
#include "source/source_i.h"

#define MEG_MAGIC "MMIDIDX\0\0"

const dsv_dtype dsv_meg_dtypes[DSV_MEG_CODES] = {
	DSV_DTYPE_INVALID, DSV_U8, DSV_I8, DSV_I16, DSV_I32, DSV_I64, DSV_F64, DSV_F32, DSV_U16,
};

int dsv_meg_read_block(const dsv_meg *g, void *buf, uint64_t n, size_t w, uint64_t off,
		       const char *field, dsv_errbuf *eb)
{
	if (dsv_source_pread(g->s, buf, (size_t)(n * w), off))
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, g->idx, NULL, "cannot read %s", field);
	return 0;
}

/* The lengths and pointers: every length >= 0, every pointer where the
 * lengths before it end; g->total their sum. */
static int check_sequences(dsv_meg *g, dsv_errbuf *eb)
{
	size_t es = dsv_dtype_size(g->dtype);
	uint8_t *len = malloc(MEG_BLOCK * 4), *ptr = malloc(MEG_BLOCK * 8);
	uint64_t at = 0, bytes = 0;
	int err = len && ptr ? 0 : dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");

	for (uint64_t i0 = 0; !err && i0 < g->nseq; i0 += MEG_BLOCK) {
		uint64_t n = g->nseq - i0 < MEG_BLOCK ? g->nseq - i0 : MEG_BLOCK;
		if ((err = dsv_meg_read_block(g, len, n, 4, MEG_HEAD + i0 * 4, "sequence_lengths",
					      eb)) ||
		    (err = dsv_meg_read_block(g, ptr, n, 8, MEG_HEAD + g->nseq * 4 + i0 * 8,
					      "sequence_pointers", eb)))
			break;
		for (uint64_t k = 0; !err && k < n; k++) {
			int32_t l = (int32_t)dsv_load_le32(len + k * 4);
			uint64_t p = dsv_load_le64(ptr + k * 8);
			if (l < 0)
				err = dsv_errf_at(eb, DSV_ERR_FORMAT, g->idx, NULL,
						  "sequence_lengths[%llu] is %d",
						  (unsigned long long)(i0 + k), l);
			else if (p != bytes)
				err = dsv_errf_at(
					eb, DSV_ERR_UNSUPPORTED, g->idx, NULL,
					"sequence_pointers[%llu] is %llu, not %llu where the "
					"sequences before it end (dsview serves a .bin "
					"whose sequences lie one after the other)",
					(unsigned long long)(i0 + k), (unsigned long long)p,
					(unsigned long long)bytes);
			else if (dsv_add_u64(at, (uint64_t)l, &at) || dsv_mul_u64(at, es, &bytes))
				err = dsv_errf_at(eb, DSV_ERR_OVERFLOW, g->idx, NULL,
						  "sequence_lengths overflow");
		}
	}
	free(len);
	free(ptr);
	g->total = at;
	return err;
}

/* document_indices: 0 first, never falling, S last. */
static int check_documents(const dsv_meg *g, dsv_errbuf *eb)
{
	uint8_t *d = malloc(MEG_BLOCK * 8);
	uint64_t prev = 0, off = MEG_HEAD + g->nseq * 12;
	int err = d ? 0 : dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");

	for (uint64_t i0 = 0; !err && i0 < g->ndoc; i0 += MEG_BLOCK) {
		uint64_t n = g->ndoc - i0 < MEG_BLOCK ? g->ndoc - i0 : MEG_BLOCK;
		if ((err = dsv_meg_read_block(g, d, n, 8, off + i0 * 8, "document_indices", eb)))
			break;
		for (uint64_t k = 0; !err && k < n; k++) {
			uint64_t v = dsv_load_le64(d + k * 8), i = i0 + k;
			if ((i == 0 && v != 0) || v < prev || v > g->nseq ||
			    (i == g->ndoc - 1 && v != g->nseq))
				err = dsv_errf_at(
					eb, DSV_ERR_FORMAT, g->idx, NULL,
					"document_indices[%llu] is %llu (they rise from 0 "
					"to the sequence count %llu)",
					(unsigned long long)i, (unsigned long long)v,
					(unsigned long long)g->nseq);
			prev = v;
		}
	}
	free(d);
	return err;
}

/* The header: magic, version, dtype code, counts, and the .idx's size. */
static int read_header(dsv_meg *g, dsv_errbuf *eb)
{
	uint8_t h[MEG_HEAD];
	uint64_t need;
	if (dsv_source_pread(g->s, h, sizeof(h), 0))
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, g->idx, NULL,
				   "shorter than a Megatron index header (34 bytes)");
	if (memcmp(h, MEG_MAGIC, 9))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, g->idx, NULL,
				   "not a Megatron index (magic is not MMIDIDX)");
	if (dsv_load_le64(h + 9) != 1)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, g->idx, NULL,
				   "index version %llu (Megatron writes 1)",
				   (unsigned long long)dsv_load_le64(h + 9));
	g->code = h[17];
	if (g->code < 1 || g->code > 8)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, g->idx, NULL,
				   "dtype code %d is not one of Megatron's (1 to 8)", g->code);
	g->dtype = dsv_meg_dtypes[g->code];
	g->nseq = dsv_load_le64(h + 18);
	g->ndoc = dsv_load_le64(h + 26);
	uint64_t size = g->s->file_size;
	if (g->nseq > size / 12 || g->ndoc > size / 8 ||
	    (need = MEG_HEAD + g->nseq * 12 + g->ndoc * 8) > size)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, g->idx, NULL,
				   "sequence count %llu and document count %llu need more than its "
				   "%llu bytes",
				   (unsigned long long)g->nseq, (unsigned long long)g->ndoc,
				   (unsigned long long)size);
	if (size != need && size != need + g->nseq) /* with modes[S]: multimodal */
		return dsv_errf_at(
			eb, DSV_ERR_FORMAT, g->idx, NULL,
			"is %llu bytes, not the %llu its sequence count %llu and document "
			"count %llu make",
			(unsigned long long)size, (unsigned long long)need,
			(unsigned long long)g->nseq, (unsigned long long)g->ndoc);
	if (g->ndoc == 0)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, g->idx, NULL,
				   "document count is 0 (document_indices starts with 0)");
	return 0;
}

/* The .bin beside the .idx: its size is the tokens' bytes exactly. */
static int check_bin(const dsv_meg *g, const char *bin, dsv_errbuf *eb)
{
	uint64_t size, es = dsv_dtype_size(g->dtype);
	uint8_t b;
	int err = dsv_tokens_read_head(bin, &b, 0, "", &size, eb);
	if (err)
		return err;
	if (size == g->total * es)
		return 0;
	char also[96] = "";
	for (int c = 1; c <= 8; c++) {
		uint64_t e = dsv_dtype_size(dsv_meg_dtypes[c]);
		if (c != g->code && g->total && size == g->total * e) {
			snprintf(also, sizeof(also), "; its size fits %s (code %d)",
				 dsv_dtype_name(dsv_meg_dtypes[c]), c);
			break;
		}
	}
	return dsv_errf_at(eb, DSV_ERR_FORMAT, bin, NULL,
			   "is %llu bytes, but its index %s has %llu tokens of dtype code %d "
			   "(%s): %llu bytes%s",
			   (unsigned long long)size, g->idx, (unsigned long long)g->total, g->code,
			   dsv_dtype_name(g->dtype), (unsigned long long)(g->total * es), also);
}

char *dsv_meg_bin_of(const char *idx)
{
	size_t n = strlen(idx);
	char *bin;
	if (asprintf(&bin, "%.*s.bin", (int)(dsv_has_ext(idx, ".idx") ? n - 4 : n), idx) < 0)
		return NULL;
	return bin;
}

int dsv_meg_open(dsv_meg *g, const char *file, dsv_errbuf *eb)
{
	int err;

	*g = (dsv_meg){ .idx = file };
	if (!(g->s = dsv_source_alloc(file, NULL)))
		return dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
	if (!(err = dsv_source_open_file(g->s, eb)) && !(err = read_header(g, eb)) &&
	    !(err = check_sequences(g, eb)) && !(err = check_documents(g, eb))) {
		if (!(g->bin = dsv_meg_bin_of(file)))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	if (!err)
		err = check_bin(g, g->bin, eb);
	if (err)
		dsv_meg_close(g);
	return err;
}

void dsv_meg_close(dsv_meg *g)
{
	free(g->bin);
	g->bin = NULL;
	dsv_source_close(g->s);
	g->s = NULL;
}

static int meg_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	dsv_meg g;
	char why[96];
	int err;
	(void)dataset;

	*out = NULL;
	if ((err = dsv_meg_open(&g, file, eb)))
		return err;
	snprintf(why, sizeof(why), "Megatron, %llu sequences, %llu documents",
		 (unsigned long long)g.nseq, (unsigned long long)(g.ndoc - 1));
	err = dsv_tokens_open_run(g.bin, g.dtype, 0, g.total, why, out, eb);
	if (!err && !dsv_dtype_is_int(g.dtype))
		(*out)->info.tokens = 0; /* float values: served as any float array */
	dsv_meg_close(&g);
	return err;
}

static size_t meg_by_name(const char *name)
{
	return dsv_has_ext(name, ".idx") ? 4 : 0;
}

static int meg_by_magic(int fd)
{
	uint8_t h[9];
	return dsv_pread_fd(fd, h, sizeof(h), 0) == 0 && !memcmp(h, MEG_MAGIC, 9);
}

const dsv_format dsv_format_megatron = {
	.name = "megatron",
	.noun = "a Megatron .idx",
	.by_name = meg_by_name,
	.by_magic = meg_by_magic,
	.open = meg_open,
	.save = dsv_tokens_index_save,
	.load = dsv_meg_index_load,
};
