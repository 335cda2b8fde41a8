/* CPU backend: pread a chunk's stored bytes into a per-thread buffer and
 * decode them into the cache's buffer. */
#include "common/tlsbuf.h"
#include "dsview/backend.h"

int dsv_cpu_decode(const dsv_view *v, uint64_t g, void *out, size_t size)
{
	dsv_chunk_ref ref;
	size_t si;
	void *stored = NULL;
	int err = dsv_view_chunk_ref(v, g, &si, &ref);
	if (err)
		return err;
	const dsv_source *s = v->sources[si];
	if (size != ref.nelems * dsv_dtype_size(dsv_source_get_info(s)->dtype))
		return DSV_ERR_INTERNAL;
	if (!ref.fallback && !dsv_chunk_is_plain(&ref) &&
	    !(stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)ref.stored_size)))
		err = DSV_ERR_NOMEM;
	else
		err = dsv_source_read_chunk(s, &ref, out, size, stored,
					    stored ? (size_t)ref.stored_size : 0);
	if (err)
		dsv_view_log_chunk_error(v, si, &ref, err);
	return err;
}
