/* CPU backend: pread + decode into a per-thread buffer, then transform. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "dsview/backend.h"

typedef struct thread_bufs {
	void *raw, *stored;
	size_t raw_cap, stored_cap;
} thread_bufs;

static pthread_key_t bufs_key;
static pthread_once_t bufs_once = PTHREAD_ONCE_INIT;

static void bufs_free(void *p)
{
	thread_bufs *b = p;
	free(b->raw);
	free(b->stored);
	free(b);
}

static void bufs_init(void)
{
	pthread_key_create(&bufs_key, bufs_free);
}

static int reserve(void **p, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	void *n = malloc(need);
	if (!n)
		return DSV_ERR_NOMEM;
	free(*p);
	*p = n;
	*cap = need;
	return 0;
}

static thread_bufs *get_bufs(void)
{
	pthread_once(&bufs_once, bufs_init);
	thread_bufs *b = pthread_getspecific(bufs_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (b)
			pthread_setspecific(bufs_key, b);
	}
	return b;
}

int dsv_cpu_fill(const dsv_view *v, uint64_t g, void *out, size_t size)
{
	dsv_chunk_ref ref;
	size_t si;
	int err = dsv_view_chunk_ref(v, g, &si, &ref);
	if (err)
		return err;
	const dsv_source *s = v->sources[si];
	const dsv_source_info *info = dsv_source_get_info(s);
	size_t raw_bytes = (size_t)(ref.nelems * dsv_dtype_size(info->dtype));
	thread_bufs *b = get_bufs();

	if (size != ref.nelems * v->out_esize)
		return DSV_ERR_INTERNAL;
	if (!b || reserve(&b->raw, &b->raw_cap, raw_bytes ? raw_bytes : 1) ||
	    (ref.stored_size && reserve(&b->stored, &b->stored_cap, (size_t)ref.stored_size)))
		err = DSV_ERR_NOMEM;
	else
		err = dsv_source_read_chunk(s, &ref, b->raw, b->raw_cap, b->stored, b->stored_cap);
	if (err) {
		uint64_t row = info->row_elems ? info->row_elems : 1;
		dsv_log_error("view %s: source %s%s%s chunk %llu (rows %llu-%llu, file offset %llu, "
			      "%llu bytes): %s",
			      v->name, info->path, info->dataset ? ":" : "",
			      info->dataset ? info->dataset : "", (unsigned long long)ref.index,
			      (unsigned long long)(ref.elem_start / row),
			      (unsigned long long)((ref.elem_start + ref.nelems + row - 1) / row),
			      (unsigned long long)ref.offset, (unsigned long long)ref.stored_size,
			      dsv_strerror(err));
		return err;
	}
	dsv_xform_run(v->xform, out, b->raw, ref.nelems, v->elem_base[si] + ref.elem_start);
	return 0;
}
