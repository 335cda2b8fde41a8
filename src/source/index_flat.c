/*
 * Flat sources (elements one run of the file from data_offset: .npy and
 * raw files) kept in the index cache (index.h) and made again from it,
 * with no read of the file: its descriptor is opened by the cache
 * (fds.c) at the source's first read, and checked then against the
 * stamp the entry was found by.
 */
#include <stdlib.h>

#include "common/arith.h"
#include "source/index.h"
#include "source/source_i.h"

/* The saved fields, in order: kind, dtype, ndim, shape[ndim],
 * data_offset, stored_bytes. */

int dsv_index_save_flat(const dsv_source *s, dsv_index_buf *out)
{
	if (s->chunked || s->grid || s->fallback || s->more->vpread || s->net || !s->fd_file)
		return DSV_ERR_UNSUPPORTED;
	dsv_index_put_u64(out, (uint64_t)s->info.kind);
	dsv_index_put_u64(out, (uint64_t)s->info.dtype);
	dsv_index_put_u64(out, (uint64_t)s->info.ndim);
	for (int i = 0; i < s->info.ndim; i++)
		dsv_index_put_u64(out, s->info.shape[i]);
	dsv_index_put_u64(out, s->data_offset);
	dsv_index_put_u64(out, s->info.stored_bytes);
	return out->bad ? DSV_ERR_NOMEM : 0;
}

int dsv_source_stamp(const dsv_source *s, dsv_index_stamp *out)
{
	if (!s->fd_file || s->net)
		return -1;
	*out = (dsv_index_stamp){ .size = s->file_size,
				  .mtime_ns = (uint64_t)s->info.mtime.tv_sec * 1000000000u +
					      (uint64_t)s->info.mtime.tv_nsec,
				  .ino = (uint64_t)s->ino,
				  .dev = (uint64_t)s->dev };
	return 0;
}

dsv_source *dsv_index_unopened(const char *file, const char *dataset, const dsv_index_stamp *st)
{
	dsv_source *s = dsv_source_alloc(file, dataset);
	if (!s)
		return NULL;
	s->fd_file = 1;
	s->file_size = st->size;
	s->info.mtime.tv_sec = (time_t)(st->mtime_ns / 1000000000u);
	s->info.mtime.tv_nsec = (long)(st->mtime_ns % 1000000000u);
	s->dev = (dev_t)st->dev;
	s->ino = (ino_t)st->ino;
	return s;
}

/* The fields of blob into s (its dtype, shape, data_offset, stored
 * bytes), each checked against the file's size. */
static int fill(dsv_source *s, const void *blob, size_t len, dsv_source_kind kind)
{
	dsv_index_cur c = { blob, (const unsigned char *)blob + len, 0 };
	uint64_t shape[DSV_MAX_DIMS], k = dsv_index_get_u64(&c), dt = dsv_index_get_u64(&c);
	uint64_t nd = dsv_index_get_u64(&c), bytes, end;

	if (c.bad || k != (uint64_t)kind || dt >= DSV_DTYPE__COUNT || nd < 1 || nd > DSV_MAX_DIMS)
		return DSV_ERR_CORRUPT;
	s->info.dtype = (dsv_dtype)dt;
	if (s->info.dtype == DSV_DTYPE_INVALID || s->info.dtype == DSV_BF16)
		return DSV_ERR_CORRUPT;
	for (uint64_t i = 0; i < nd; i++)
		shape[i] = dsv_index_get_u64(&c);
	s->data_offset = dsv_index_get_u64(&c);
	s->info.stored_bytes = dsv_index_get_u64(&c);
	if (c.bad || c.p != c.end || dsv_source_set_shape(s, (int)nd, shape))
		return DSV_ERR_CORRUPT;
	bytes = s->info.nelems * dsv_dtype_size(s->info.dtype); /* checked by set_shape */
	if (dsv_add_u64(s->data_offset, bytes, &end) || end > s->file_size ||
	    s->info.stored_bytes < bytes || s->info.stored_bytes > s->file_size)
		return DSV_ERR_CORRUPT;
	s->info.kind = kind;
	dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	return 0;
}

int dsv_index_revive(const char *file, const char *dataset, const void *blob, size_t len,
		     const dsv_index_stamp *st, dsv_source_kind kind, dsv_index_fill_fn fill_kind,
		     dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_index_unopened(file, dataset, st);
	int err;

	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
	if ((err = fill_kind(s, blob, len, kind))) {
		dsv_source_close(s);
		if (err == DSV_ERR_NOMEM)
			return dsv_errf_at(eb, err, file, dataset, "out of memory");
		return dsv_errf_at(eb, err, file, dataset,
				   "its entry in the index cache is damaged");
	}
	*out = s;
	return 0;
}

int dsv_index_load_flat(const char *file, const char *dataset, const void *blob, size_t len,
			const dsv_index_stamp *st, dsv_source_kind kind, dsv_source **out,
			dsv_errbuf *eb)
{
	return dsv_index_revive(file, dataset, blob, len, st, kind, fill, out, eb);
}
