/* Raw binary sources: little-endian elements, C order, declared dtype and shape. */
#include <stdlib.h>

#include "common/arith.h"
#include "dsview/source.h"
#include "formats/raw/raw.h"
#include "source/source_i.h"

/* The bytes of shape's elements but its -1 one (at *unknown, -1: none)
 * into *bytes. @return 0, or a dsv_err with eb set. */
static int known_bytes(const char *path, dsv_dtype dtype, int ndim, const int64_t *shape,
		       int *unknown, uint64_t *bytes, dsv_errbuf *eb)
{
	*unknown = -1;
	*bytes = dsv_dtype_size(dtype);
	for (int i = 0; i < ndim; i++) {
		if (shape[i] == -1 && *unknown < 0) {
			*unknown = i;
			continue;
		}
		if (shape[i] < (i ? 1 : 0))
			return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
					   "source_shape dimension %d must be positive (or the "
					   "one -1)",
					   i);
		if (dsv_mul_u64(*bytes, (uint64_t)shape[i], bytes))
			return dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, NULL,
					   "source_shape overflows");
	}
	return 0;
}

/* dims from shape and the file's size: the -1 one from the size; the
 * elements must fill the file exactly (a shape that covers part of it
 * is refused: `rows` serves part of a view). */
static int fit_shape(const dsv_source *s, int ndim, const int64_t *shape, uint64_t *dims,
		     dsv_errbuf *eb)
{
	const char *path = s->path;
	uint64_t bytes, size = s->file_size;
	int unknown, err = known_bytes(path, s->info.dtype, ndim, shape, &unknown, &bytes, eb);
	if (err)
		return err;
	for (int i = 0; i < ndim; i++)
		dims[i] = (uint64_t)shape[i];
	if (unknown >= 0) {
		if (!bytes || size % bytes)
			return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
					   "size %llu is not a whole number of %s of %llu bytes",
					   (unsigned long long)size,
					   unknown ? "steps along source_shape's -1 axis" : "rows",
					   (unsigned long long)bytes);
		dims[unknown] = size / bytes;
		return 0;
	}
	if (bytes > size)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, path, NULL,
				   "source_shape declares %llu bytes but the file holds %llu",
				   (unsigned long long)bytes, (unsigned long long)size);
	if (bytes < size)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				   "source_shape covers %llu of the file's %llu bytes (give -1 on "
				   "one axis to take them all; a view's rows = a:b serves part)",
				   (unsigned long long)bytes, (unsigned long long)size);
	return 0;
}

int dsv_source_open_raw(const char *path, dsv_dtype dtype, int ndim, const int64_t *shape,
			dsv_source **out, dsv_errbuf *eb)
{
	uint64_t dims[DSV_MAX_DIMS];
	int err;
	dsv_source *s;

	*out = NULL;
	if (dtype == DSV_DTYPE_INVALID || dtype == DSV_BF16)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "unsupported source_dtype");
	if (ndim < 1 || ndim > DSV_MAX_DIMS)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				   "source_shape needs 1 to %d dimensions", DSV_MAX_DIMS);
	s = dsv_source_alloc(path, NULL);
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)))
		goto fail;
	s->info.dtype = dtype;
	if ((err = fit_shape(s, ndim, shape, dims, eb)))
		goto fail;
	if ((err = dsv_source_set_shape(s, ndim, dims))) {
		err = dsv_errf_at(eb, err, path, NULL, "source_shape overflows");
		goto fail;
	}
	s->info.kind = DSV_SRC_RAW;
	s->info.stored_bytes = s->file_size;
	dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	*out = s;
	return 0;
fail:
	dsv_source_close(s);
	return err;
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
