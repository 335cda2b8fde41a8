/*
 * Raw binary sources: a header of source_offset bytes, then little-endian
 * elements in C order, of the declared dtype and shape. int24 samples
 * (3 bytes, signed, as BDF and many acquisition systems write them) are
 * served as int32, sign-extended at read time (raw24_read), so the view's
 * transform takes them as any other int32 source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "common/samples.h"
#include "common/tlsbuf.h"
#include "dsview/source.h"
#include "formats/raw/raw.h"
#include "source/source_i.h"

/* Source bytes of one chunk of an int24 source (its cache's unit). */
#define RAW24_CHUNK_BYTES (4u << 20)

int dsv_raw_dtype_parse(const char *name, dsv_raw_layout *l)
{
	if (name && (!strcmp(name, "int24") || !strcmp(name, "i3") || !strcmp(name, "<i3"))) {
		l->dtype = DSV_I32;
		l->int24 = 1;
		return 0;
	}
	l->dtype = dsv_dtype_parse(name);
	l->int24 = 0;
	return l->dtype == DSV_DTYPE_INVALID || l->dtype == DSV_BF16 ? -1 : 0;
}

/* The bytes of shape's elements but its -1 one (at *unknown, -1: none)
 * into *bytes. @return 0, or a dsv_err with eb set. */
static int known_bytes(const char *path, const dsv_raw_layout *l, int *unknown, uint64_t *bytes,
		       dsv_errbuf *eb)
{
	*unknown = -1;
	*bytes = l->int24 ? 3 : dsv_dtype_size(l->dtype);
	for (int i = 0; i < l->ndim; i++) {
		if (l->shape[i] == -1 && *unknown < 0) {
			*unknown = i;
			continue;
		}
		if (l->shape[i] < (i ? 1 : 0))
			return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
					   "source_shape dimension %d must be positive (or the "
					   "one -1)",
					   i);
		if (dsv_mul_u64(*bytes, (uint64_t)l->shape[i], bytes))
			return dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, NULL,
					   "source_shape overflows");
	}
	return 0;
}

/* The bytes after the header, or an error naming both sizes. */
static int data_bytes(const dsv_source *s, uint64_t offset, uint64_t *size, dsv_errbuf *eb)
{
	if (offset > s->file_size)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, s->path, NULL,
				   "source_offset %llu is past the end of the file's %llu bytes",
				   (unsigned long long)offset, (unsigned long long)s->file_size);
	*size = s->file_size - offset;
	return 0;
}

/* dims from the layout and the file's size after the header: the -1
 * one from the size; the elements must fill it exactly (a shape that
 * covers part of it is refused: `rows` serves part of a view). */
static int fit_shape(const dsv_source *s, const dsv_raw_layout *l, uint64_t *dims, dsv_errbuf *eb)
{
	const char *path = s->path;
	const char *after = l->offset ? " after source_offset" : "";
	uint64_t bytes, size = 0;
	int unknown, err;
	if ((err = data_bytes(s, l->offset, &size, eb)) ||
	    (err = known_bytes(path, l, &unknown, &bytes, eb)))
		return err;
	for (int i = 0; i < l->ndim; i++)
		dims[i] = (uint64_t)l->shape[i];
	if (unknown >= 0) {
		if (!bytes || size % bytes)
			return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
					   "size %llu%s is not a whole number of %s of %llu bytes",
					   (unsigned long long)size, after,
					   unknown ? "steps along source_shape's -1 axis" : "rows",
					   (unsigned long long)bytes);
		dims[unknown] = size / bytes;
		return 0;
	}
	if (bytes > size)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, path, NULL,
				   "source_shape declares %llu bytes but the file holds %llu%s",
				   (unsigned long long)bytes, (unsigned long long)size, after);
	if (bytes < size)
		return dsv_errf_at(
			eb, DSV_ERR_INVALID, path, NULL,
			"source_shape covers %llu of the file's %llu bytes%s (give -1 on "
			"one axis to take them all; a view's rows = a:b serves part)",
			(unsigned long long)bytes, (unsigned long long)size, after);
	return 0;
}

/* Elements [ref->elem_start, + ref->nelems) of an int24 source as int32. */
static int raw24_read(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap)
{
	uint64_t e = ref->elem_start, n = ref->nelems;
	if (e > s->info.nelems || n > s->info.nelems - e || dst_cap / 4 < n)
		return DSV_ERR_INVALID;
	if (n == 0)
		return 0;
	uint8_t *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)(3 * n));
	if (!buf)
		return DSV_ERR_NOMEM;
	int err = dsv_source_pread(s, buf, (size_t)(3 * n), s->data_offset + 3 * e);
	if (err)
		return err;
	dsv_le24s_to_i32(dst, buf, (size_t)n);
	return 0;
}

/* An int24 source: its elements sign-extended by raw24_read. */
static void raw24_layout(dsv_source *s)
{
	s->info.stored_bytes = 3 * s->info.nelems;
	dsv_source_why(s, "int24 samples sign-extended to int32");
	s->fmt = s; /* dsv_source_read_fallback asks for a format's state */
	s->fallback = 1;
	s->more->lib_read = raw24_read;
	dsv_source_flat_chunks(s, RAW24_CHUNK_BYTES);
}

static int check_layout(const char *path, const dsv_raw_layout *l, dsv_errbuf *eb)
{
	if (l->dtype == DSV_DTYPE_INVALID || l->dtype == DSV_BF16 ||
	    (l->int24 && l->dtype != DSV_I32))
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "unsupported source_dtype");
	if (l->ndim < 1 || l->ndim > DSV_MAX_DIMS)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				   "source_shape needs 1 to %d dimensions", DSV_MAX_DIMS);
	return 0;
}

int dsv_source_open_raw_layout(const char *path, const dsv_raw_layout *l, dsv_source **out,
			       dsv_errbuf *eb)
{
	uint64_t dims[DSV_MAX_DIMS];
	int err;
	dsv_source *s;

	*out = NULL;
	if ((err = check_layout(path, l, eb)))
		return err;
	s = dsv_source_alloc(path, NULL);
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)))
		goto fail;
	s->info.dtype = l->dtype;
	if ((err = fit_shape(s, l, dims, eb)))
		goto fail;
	if ((err = dsv_source_set_shape(s, l->ndim, dims))) {
		err = dsv_errf_at(eb, err, path, NULL, "source_shape overflows");
		goto fail;
	}
	s->info.kind = DSV_SRC_RAW;
	s->data_offset = l->offset;
	s->info.stored_bytes = s->file_size - l->offset;
	if (l->int24)
		raw24_layout(s);
	else
		dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	*out = s;
	return 0;
fail:
	dsv_source_close(s);
	return err;
}

int dsv_source_raw_layout_of(const dsv_source *s, dsv_raw_layout *l)
{
	if (s->info.kind != DSV_SRC_RAW)
		return -1;
	memset(l, 0, sizeof(*l));
	l->dtype = s->info.dtype;
	l->int24 = s->more->lib_read == raw24_read;
	l->offset = s->data_offset;
	l->ndim = s->info.ndim;
	for (int i = 0; i < l->ndim; i++)
		l->shape[i] = (int64_t)s->info.shape[i];
	return 0;
}

int dsv_source_open_raw(const char *path, dsv_dtype dtype, int ndim, const int64_t *shape,
			dsv_source **out, dsv_errbuf *eb)
{
	dsv_raw_layout l = { .dtype = dtype, .ndim = ndim };
	if (ndim > 0 && ndim <= DSV_MAX_DIMS)
		memcpy(l.shape, shape, sizeof(*shape) * (size_t)ndim);
	return dsv_source_open_raw_layout(path, &l, out, eb);
}

/* A raw file opened without its dtype and shape. */
static int raw_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	*out = NULL;
	return dsv_errf_at(eb, DSV_ERR_INVALID, file, NULL,
			   "raw source needs source_dtype and source_shape");
}

static int raw_save(const dsv_source *s, dsv_index_buf *out)
{
	return dsv_index_save_flat(s, out);
}

/* dataset: the dtype and shape the source was opened with, which the
 * entry's key holds (dsv_format_open_raw) */
static int raw_load(const char *file, const char *dataset, const void *blob, size_t len,
		    const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	return dsv_index_load_flat(file, NULL, blob, len, st, DSV_SRC_RAW, out, eb);
}

const dsv_format dsv_format_raw = {
	.name = "raw",
	.noun = "a raw file with source_dtype and source_shape",
	.traits = DSV_FMT_RAW,
	.open = raw_open,
	.save = raw_save,
	.load = raw_load,
};
