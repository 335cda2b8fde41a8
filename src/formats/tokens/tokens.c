/* What the token formats share: a token stream in one run of a file. */
#include <stdio.h>

#include "common/arith.h"
#include "formats/tokens/tokens.h"
#include "source/source_i.h"

int dsv_tokens_read_head(const char *file, void *buf, size_t n, const char *what, uint64_t *size,
			 dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(file, NULL);
	int err = s ? dsv_source_open_file(s, eb)
		    : dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
	if (!err && dsv_source_pread(s, buf, n, 0))
		err = dsv_errf_at(eb, DSV_ERR_TRUNCATED, file, NULL, "shorter than %s", what);
	if (!err)
		*size = s->file_size;
	dsv_source_close(s);
	return err;
}

void dsv_tokens_mark(dsv_source *s, const char *why)
{
	s->info.tokens = 1;
	dsv_source_why(s, "%s", why);
}

int dsv_tokens_open_run(const char *path, dsv_dtype dtype, uint64_t off, uint64_t count,
			const char *why, dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(path, NULL);
	uint64_t bytes;
	int err;

	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)))
		goto fail;
	s->info.dtype = dtype;
	if (dsv_mul_u64(count, dsv_dtype_size(dtype), &bytes) || off > s->file_size ||
	    bytes > s->file_size - off) {
		err = dsv_errf_at(eb, DSV_ERR_TRUNCATED, path, NULL,
				  "file is %llu bytes but its header declares %llu %s tokens at "
				  "byte %llu",
				  (unsigned long long)s->file_size, (unsigned long long)count,
				  dsv_dtype_name(dtype), (unsigned long long)off);
		goto fail;
	}
	if ((err = dsv_source_set_shape(s, 1, &count))) {
		err = dsv_errf_at(eb, err, path, NULL, "token count overflows");
		goto fail;
	}
	s->data_offset = off;
	s->info.kind = DSV_SRC_RUN;
	s->info.stored_bytes = bytes;
	dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	dsv_tokens_mark(s, why);
	*out = s;
	return 0;
fail:
	dsv_source_close(s);
	return err;
}
