/*
 * dsview pack: dsv_pack, its steps in order. See include/dsview/pack.h
 * for the contract.
 *
 * Everything that can be checked (options, the dataset name, the input,
 * the output directory, free space: estimated by compressing a sample when
 * the worst case would not fit) is checked before a file exists. Then the
 * store is created as OUTPUT.tmp-PID-XXXXXX (O_EXCL; temporaries of dead
 * packs are removed first) with HDF5, filled by the chunk pipeline in
 * chunks.c through dsv_pack_out_write, closed, fsynced, renamed into place
 * (without --force never over a file that appeared meanwhile) and the
 * directory fsynced. Any failure unlinks the temporary. The output file's
 * part of that is output.c's.
 *
 * HDF5 (a serial build) is called only on the calling thread, under the
 * global HDF5 lock: workers reading an HDF5 input through the library
 * fallback take that lock too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/str.h"
#include "dsview/codec.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "formats/formats.h"
#include "pack/pack_i.h"

void dsv_pack_opts_init(dsv_pack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->raw.dtype = DSV_DTYPE_INVALID;
	o->codec = DSV_PACK_LZ4;
	o->level = -1;
}

static const char *codec_name(dsv_pack_codec c)
{
	return dsv_pack_codec_get(c)->name;
}

/* The dataset's name after the input: its HDF5 dataset's last part, or its
 * file's (or Zarr directory's) name without the extension. @return 0 or -1
 * (too long for cap). */
static int default_name(const char *input, char *out, size_t cap)
{
	const char *colon = strstr(input, ":/"), *base, *end;

	if (colon) {
		const char *next;
		while ((next = strstr(colon + 1, ":/")))
			colon = next;
		end = input + strlen(input);
		base = strrchr(colon + 1, '/') + 1;
	} else { /* a file, or a Zarr array's directory ("a.zarr/", "a.zarr/g/x") */
		size_t n = strlen(input);
		while (n > 1 && input[n - 1] == '/')
			n--;
		for (base = input + n; base > input && base[-1] != '/'; base--)
			;
		size_t ext;
		/* x.npy, x.nii.gz: x; another name less its last extension */
		if (dsv_format_by_name(input, &ext) && ext < (size_t)(input + n - base))
			end = input + n - ext;
		else if (!(end = memrchr(base, '.', (size_t)(input + n - base))) || end == base)
			end = input + n;
	}
	if ((size_t)(end - base) >= cap)
		return -1;
	memcpy(out, base, (size_t)(end - base));
	out[end - base] = '\0';
	return 0;
}

uint64_t dsv_pack_block_bytes(uint64_t row_bytes, uint64_t chunk_bytes, uint64_t want)
{
	if (want >= chunk_bytes || row_bytes == 0)
		return chunk_bytes;
	if (row_bytes <= want)
		return want / row_bytes * row_bytes;
	/* the fewest equal parts of a row, each <= want and >= want / 2 */
	uint64_t least = (row_bytes + want - 1) / want, most = 2 * row_bytes / want;
	for (uint64_t parts = least; parts <= most; parts++)
		if (row_bytes % parts == 0)
			return row_bytes / parts;
	return want;
}

/* ---- dsv_pack ---- */

uint64_t dsv_pack_default_chunk(dsv_pack_codec c)
{
	const dsv_pack_codec_info *i = dsv_pack_codec_get(c);
	return !i || i->lz4_blocks || c == DSV_PACK_NONE ? DSV_PACK_DEFAULT_CHUNK
							 : DSV_PACK_DEFAULT_WHOLE_CHUNK;
}

/* Chunks of whole rows, about want bytes (at least a row, at most
 * DSV_PACK_MAX_CHUNK and the whole input). */
static void geometry(packer *p, uint64_t want)
{
	uint64_t rows = (want + p->row_bytes / 2) / p->row_bytes;

	if (rows < 1)
		rows = 1;
	if (rows > DSV_PACK_MAX_CHUNK / p->row_bytes)
		rows = DSV_PACK_MAX_CHUNK / p->row_bytes;
	if (p->in->nrows && rows > p->in->nrows)
		rows = p->in->nrows;
	p->chunk_rows = rows;
	p->chunk_bytes = rows * p->row_bytes;
	p->nchunks = (p->in->nrows + rows - 1) / rows;
}

static int open_input(const dsv_pack_opts *o, dsv_source **src, dsv_errbuf *eb)
{
	if (o->raw.dtype != DSV_DTYPE_INVALID)
		return dsv_source_open_raw_layout(o->input, &o->raw, src, eb);
	char *file, *dataset;
	int err;
	const dsv_format *f = dsv_format_of_spec(o->input, DSV_DETECT_MAGIC, &file, &dataset, NULL,
						 &err);
	if (err)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (f && f->open_packed)
		err = f->open_packed(file, dataset, o->output, src, eb);
	else if (f)
		err = dsv_format_open(f, file, dataset, src, eb);
	else /* its words for a spec no format claims */
		err = dsv_source_open(o->input, src, eb);
	free(file);
	free(dataset);
	return err;
}

/* The options that need no input: codec, level (the codec's default for
 * -1), block size, and the dataset's name into name. */
static int check_opts(dsv_pack_opts *oc, char *name, size_t cap, dsv_errbuf *eb)
{
	int err;

	if ((unsigned)oc->codec > DSV_PACK_AUTO)
		return dsv_errf(eb, DSV_ERR_INVALID, "unknown codec %d", (int)oc->codec);
	if ((err = dsv_pack_level_check(oc->codec, oc->level, eb)))
		return err;
	if (oc->storage_bytes_s != 0 && oc->codec != DSV_PACK_AUTO)
		return dsv_errf(eb, DSV_ERR_INVALID,
				"--storage is for --codec auto (it says how fast the store will be "
				"read)");
	if (oc->level < 0 && oc->codec != DSV_PACK_AUTO)
		oc->level = dsv_pack_codec_get(oc->codec)->default_level;
	if (oc->block_bytes &&
	    (oc->block_bytes < DSV_PACK_MIN_BLOCK || oc->block_bytes > DSV_PACK_MAX_BLOCK))
		return dsv_errf(eb, DSV_ERR_INVALID, "--block-size must be %uK to %lluM",
				DSV_PACK_MIN_BLOCK >> 10,
				(unsigned long long)(DSV_PACK_MAX_BLOCK >> 20));
	if (oc->dataset) {
		if (strlen(oc->dataset) >= cap || !dsv_name_ok(oc->dataset))
			return dsv_errf(eb, DSV_ERR_INVALID,
					"--dataset '%s': use letters, digits, '_', '-', '.'",
					oc->dataset);
		snprintf(name, cap, "%s", oc->dataset);
	} else if (default_name(oc->input, name, cap) || !dsv_name_ok(name)) {
		return dsv_errf_at(eb, DSV_ERR_INVALID, oc->input, NULL,
				   "cannot name the dataset after the input; give --dataset NAME");
	}
	return 0;
}

/* The input's rows can be packed: it has some, of 1 byte to a chunk. */
static int check_rows(packer *p, dsv_errbuf *eb)
{
	const char *input = p->o->input;

	if (p->in->ndim < 1)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, input, NULL,
				   "a 0-d array has no rows to pack");
	p->row_bytes = p->in->row_elems * dsv_dtype_size(p->in->dtype);
	if (p->row_bytes == 0)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, input, NULL,
				   "rows of 0 bytes (shape has a 0)");
	if (p->row_bytes > DSV_PACK_MAX_CHUNK)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, input, NULL,
				   "a row is %llu bytes, over the %llu-byte chunk limit",
				   (unsigned long long)p->row_bytes,
				   (unsigned long long)DSV_PACK_MAX_CHUNK);
	return 0;
}

/* The codec (--codec auto measures and picks it into oc), the chunk and
 * block sizes, and the room one encoded chunk may need. */
static int plan_chunks(packer *p, dsv_pack_opts *oc, dsv_pack_result *res, dsv_errbuf *eb)
{
	int err;

	if (oc->codec == DSV_PACK_AUTO) {
		geometry(p, oc->chunk_bytes ? oc->chunk_bytes : DSV_PACK_DEFAULT_CHUNK);
		if ((err = dsv_pack_choose(p, oc, res->auto_why, sizeof(res->auto_why), eb)))
			return err;
	}
	res->codec = oc->codec;
	res->level = oc->level;
	geometry(p, oc->chunk_bytes ? oc->chunk_bytes : dsv_pack_default_chunk(oc->codec));
	if (dsv_pack_codec_get(oc->codec)->lz4_blocks)
		p->block_bytes = dsv_pack_block_bytes(p->row_bytes, p->chunk_bytes,
						      oc->block_bytes ? oc->block_bytes
								      : DSV_PACK_DEFAULT_BLOCK);
	p->slot_cap = dsv_pack_codec_bound(oc->codec, (size_t)p->chunk_bytes,
					   (size_t)p->block_bytes, dsv_dtype_size(p->in->dtype));
	if (p->slot_cap == SIZE_MAX || p->slot_cap > SIZE_MAX - 4)
		return dsv_errf_at(eb, DSV_ERR_INVALID, oc->input, NULL,
				   "%s cannot encode chunks of %llu bytes", codec_name(oc->codec),
				   (unsigned long long)p->chunk_bytes);
	p->slot_cap += 4;
	return 0;
}

int dsv_pack(const dsv_pack_opts *opts, dsv_pack_result *res, dsv_errbuf *eb)
{
	dsv_pack_opts oc = *opts;
	const dsv_pack_opts *o = &oc;
	packer p = { .o = o };
	dsv_errbuf local;
	dsv_source *src = NULL;
	char name[232];
	dsv_pack_out f = { .fd = -1, .file = -1, .sets = { .dset = -1, .table = { .dset = -1 } } };
	double t0 = dsv_now_s(), tw;
	int err;

	memset(res, 0, sizeof(*res));
	if (!eb)
		eb = &local;
	eb->msg[0] = '\0';

	/* Everything that can be checked is checked before a file exists. */
	if ((err = check_opts(&oc, name, sizeof(name), eb)) || (err = open_input(o, &src, eb)))
		return err;
	p.src = src;
	p.in = dsv_source_get_info(src);
	if ((err = check_rows(&p, eb)) || (err = plan_chunks(&p, &oc, res, eb)) ||
	    (err = dsv_pack_out_dir(&p, &f, res, eb)) ||
	    (err = dsv_pack_out_create(&p, &f, name, eb)))
		goto out;
	tw = dsv_now_s();
	err = dsv_pack_run_workers(&p, dsv_pack_out_write, &f.sets, res, eb);
	res->write_seconds = dsv_now_s() - tw;
	if (err || (err = dsv_pack_out_finish(o, &f, res, eb)))
		goto out;

	res->rows = p.in->nrows;
	res->chunks = p.nchunks;
	res->chunk_rows = p.chunk_rows;
	res->block_bytes = p.block_bytes;
	res->raw_bytes = p.in->nelems * dsv_dtype_size(p.in->dtype);
	snprintf(res->dataset, sizeof(res->dataset), "/%s", name);
	res->seconds = dsv_now_s() - t0;
out:
	dsv_pack_out_close(&f);
	dsv_source_close(src);
	return err;
}
