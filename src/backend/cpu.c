/* CPU backend: decode a chunk in the calling thread, into the cache's
 * buffer (the stored bytes staged in the thread's own buffer). */
#include "backend/backend.h"
#include "view/view_i.h"

typedef struct band_log {
	const dsv_view *v;
	size_t si;
	int logged;
} band_log;

static void log_band(void *arg, const dsv_chunk_ref *part, int err, const char *what)
{
	band_log *b = arg;
	if (err) {
		dsv_view_log_chunk_error(b->v, b->si, part, err, what);
		b->logged = 1;
	}
}

/* Logs a chunk that failed. A chunk the HDF5 library decodes spans many of
 * the file's own chunks: the log names the ones that fail, band by band,
 * the rows `verify` names and a mount fails (buf, the failed fill's, is
 * scratch here). Only on failure, and the cache keeps partial reads from
 * retrying the whole chunk for a second (dsv_cache_failed_lately). what:
 * what failed inside the chunk (dsv_fault). */
static void log_failure(const dsv_view *v, size_t si, const dsv_chunk_ref *ref, int err,
			const char *what, void *buf, size_t size)
{
	const dsv_source *s = v->sources[si];
	uint64_t band = dsv_source_fallback_band(s);
	band_log b = { v, si, 0 };

	if (ref->fallback && band && band < ref->nelems && err != DSV_ERR_NOMEM &&
	    err != DSV_ERR_INTERNAL)
		(void)dsv_source_read_fallback_bands(s, ref, 0, ref->nelems, buf, size, log_band, &b);
	if (!b.logged)
		dsv_view_log_chunk_error(v, si, ref, err, what);
}

int dsv_cpu_decode(const dsv_view *v, uint64_t g, void *out, size_t size, int stream)
{
	dsv_chunk_ref ref;
	size_t si;
	int err = dsv_view_chunk_ref(v, g, &si, &ref);
	if (err)
		return err;
	ref.stream = stream;
	const dsv_source *s = v->sources[si];
	if (size != ref.nelems * dsv_dtype_size(dsv_source_get_info(s)->dtype))
		return DSV_ERR_INTERNAL;
	dsv_fault fault;
	err = dsv_source_decode_chunk(s, &ref, out, size, &fault);
	if (err)
		log_failure(v, si, &ref, err, fault.what, out, size);
	return err;
}
