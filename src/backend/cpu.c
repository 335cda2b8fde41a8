/* CPU backend: decode a chunk in the calling thread, into the cache's
 * buffer (the stored bytes staged in the thread's own buffer). */
#include <stdlib.h>

#include "backend/backend.h"
#include "source/source.h"
#include "view/view.h"

typedef struct band_log {
	const dsv_view *v;
	size_t si;
	int logged;
} band_log;

static void log_band(void *arg, const dsv_chunk_ref *part, int err, const dsv_errbuf *eb)
{
	band_log *b = arg;
	if (err) {
		dsv_view_log_chunk_error(b->v, b->si, part, err, eb);
		b->logged = 1;
	}
}

/* Logs a chunk that failed. A chunk the HDF5 library decodes spans many of
 * the file's own chunks: the log names the ones that fail, band by band,
 * the rows `verify` names and a mount fails (buf, the failed fill's, is
 * scratch here). A grid's band is read again with an errbuf, which names
 * the grid chunk that failed: the decode itself passes none, so no words
 * are made, and no buffer for them sits on its stack, while chunks
 * succeed. Only on failure, and the cache keeps partial reads from
 * retrying the whole chunk for a second (dsv_cache_failed_lately). */
static void log_failure(const dsv_view *v, size_t si, const dsv_chunk_ref *ref, unsigned flags,
			int err, void *buf, size_t size)
{
	const dsv_source *s = v->sources[si];
	uint64_t band = dsv_source_fallback_band(s);
	band_log b = { v, si, 0 };
	dsv_errbuf *eb = NULL;

	if (ref->fallback && band && band < ref->nelems && err != DSV_ERR_NOMEM &&
	    err != DSV_ERR_INTERNAL)
		(void)dsv_source_read_fallback_bands(s, ref, 0, ref->nelems, buf, size, log_band,
						     &b);
	if (b.logged)
		return;
	if (ref->grid && err != DSV_ERR_NOMEM && (eb = malloc(sizeof(*eb)))) {
		dsv_errbuf_clear(eb);
		(void)dsv_source_decode_chunk_as(s, ref, flags, buf, size, eb);
	}
	dsv_view_log_chunk_error(v, si, ref, err, eb);
	free(eb);
}

int dsv_cpu_decode(const dsv_view *v, uint64_t g, void *out, size_t size, unsigned flags)
{
	dsv_chunk_ref ref;
	size_t si;
	int err = dsv_view_chunk_ref(v, g, &si, &ref);
	if (err)
		return err;
	const dsv_source *s = v->sources[si];
	if (size != ref.nelems * dsv_dtype_size(dsv_source_get_info(s)->dtype))
		return DSV_ERR_INTERNAL;
	err = dsv_source_decode_chunk_as(s, &ref, flags, out, size, NULL);
	if (err)
		log_failure(v, si, &ref, flags, err, out, size);
	return err;
}
