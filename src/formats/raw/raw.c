/* Raw binary sources: little-endian elements, C order, declared dtype and shape. */
#include <stdlib.h>

#include "common/arith.h"
#include "dsview/source.h"
#include "formats/raw/raw.h"
#include "source/source_i.h"

int dsv_source_open_raw(const char *path, dsv_dtype dtype, int ndim, const int64_t *shape,
			dsv_source **out, dsv_errbuf *eb)
{
	uint64_t dims[DSV_MAX_DIMS], row_bytes = dsv_dtype_size(dtype);
	int err;
	dsv_source *s;

	*out = NULL;
	if (dtype == DSV_DTYPE_INVALID || dtype == DSV_BF16)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "unsupported source_dtype");
	if (ndim < 1 || ndim > DSV_MAX_DIMS)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				   "source_shape needs 1 to %d dimensions", DSV_MAX_DIMS);
	for (int i = 1; i < ndim; i++) {
		if (shape[i] <= 0)
			return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
					   "source_shape dimension %d must be positive", i);
		if (dsv_mul_u64(row_bytes, (uint64_t)shape[i], &row_bytes))
			return dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, NULL,
					   "source_shape overflows");
	}
	if (shape[0] < -1)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				   "source_shape rows must be -1 or >= 0");

	s = dsv_source_alloc(path, NULL);
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)))
		goto fail;
	s->info.dtype = dtype;
	if (s->file_size % row_bytes) {
		err = dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				  "size %llu is not a whole number of rows of %llu bytes",
				  (unsigned long long)s->file_size, (unsigned long long)row_bytes);
		goto fail;
	}
	dims[0] = shape[0] < 0 ? s->file_size / row_bytes : (uint64_t)shape[0];
	for (int i = 1; i < ndim; i++)
		dims[i] = (uint64_t)shape[i];
	if (dims[0] > s->file_size / row_bytes) {
		err = dsv_errf_at(eb, DSV_ERR_TRUNCATED, path, NULL,
				  "source_shape declares %llu rows but the file holds %llu",
				  (unsigned long long)dims[0],
				  (unsigned long long)(s->file_size / row_bytes));
		goto fail;
	}
	if ((err = dsv_source_set_shape(s, ndim, dims))) {
		err = dsv_errf_at(eb, err, path, NULL, "source_shape overflows");
		goto fail;
	}
	s->info.kind = DSV_SRC_RAW;
	s->info.stored_bytes = dims[0] * row_bytes;
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

const dsv_format dsv_format_raw = {
	.name = "raw",
	.noun = "a raw file with source_dtype and source_shape",
	.traits = DSV_FMT_RAW,
	.open = raw_open,
};
