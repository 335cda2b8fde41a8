/* CPU backend: decode a chunk in the calling thread, into the cache's
 * buffer (the stored bytes staged in the thread's own buffer). */
#include "backend/backend.h"
#include "view/view_i.h"

int dsv_cpu_decode(const dsv_view *v, uint64_t g, void *out, size_t size)
{
	dsv_chunk_ref ref;
	size_t si;
	int err = dsv_view_chunk_ref(v, g, &si, &ref);
	if (err)
		return err;
	const dsv_source *s = v->sources[si];
	if (size != ref.nelems * dsv_dtype_size(dsv_source_get_info(s)->dtype))
		return DSV_ERR_INTERNAL;
	err = dsv_source_decode_chunk(s, &ref, out, size);
	if (err)
		dsv_view_log_chunk_error(v, si, &ref, err);
	return err;
}
