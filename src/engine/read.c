/* The one maker of a file's bytes (dsv_engine_make: on the device or by
 * the read path), which reads and the pages made ahead both call; and
 * reads, hints and opens: the engine's calls a front end makes for each
 * request, counted and timed. engine.c's DESIGN has the whole walk. */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/cgroup.h"
#include "engine/engine_i.h"

void dsv_engine_lat_add(lat_hist *h, const struct timespec *t0, const struct timespec *t1)
{
	int64_t ns = (int64_t)(t1->tv_sec - t0->tv_sec) * 1000000000 + (t1->tv_nsec - t0->tv_nsec);
	uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
	unsigned k = 0;
	while (k + 1 < DSV_LAT_BUCKETS && us >= (2ull << k))
		k++;
	atomic_fetch_add(&h->n[k], 1);
	atomic_fetch_add(&h->sum_us, us);
}

/* The device path (backend.h, dsv_backend_make): the range made at once
 * from the stored chunks under it, the .npy header copied. @return 0, or
 * non-zero for the read path to make it (and report what is wrong). */
static int make_on_device(dsv_engine *e, uint32_t file, const dsv_read_req *req, char *buf)
{
	uint64_t hdr;
	const dsv_view *v = file_view(e, file, &hdr);
	uint64_t oes = v->out_esize, off = req->off, end = off + req->len, o = off;

	if (!(req->flags & DSV_READ_STREAM) || !dsv_backend_makes(e->backend, v) || off >= end)
		return DSV_ERR_UNSUPPORTED;
	if (o < hdr) { /* the .npy header */
		o = end < hdr ? end : hdr;
		memcpy(buf, v->npy_header + off, (size_t)(o - off));
	}
	if ((o - hdr) % oes || (end - hdr) % oes)
		return DSV_ERR_UNSUPPORTED; /* pages hold whole elements: never */
	return end > o ? dsv_backend_make(e->backend, v, (o - hdr) / oes, (end - o) / oes,
					  buf + (o - off))
		       : 0;
}

/* The read path: the .npy header where it lies in the range, then the
 * view's output. */
static int make_on_cpu(dsv_engine *e, uint32_t file, const dsv_read_req *req, char *buf,
		       dsv_read_info *info)
{
	uint64_t hdr, off = req->off;
	const dsv_view *v = file_view(e, file, &hdr);
	size_t len = req->len;
	int err = 0;
	if (off < hdr) {
		size_t h = (size_t)(hdr - off < len ? hdr - off : len);
		memcpy(buf, v->npy_header + off, h);
		buf += h;
		off += h;
		len -= h;
	}
	if (len) {
		dsv_read_req in_view = { .off = off - hdr, .len = len, .flags = req->flags };
		err = dsv_read(e->cache, e->tiles, v, &in_view, buf, info);
	}
	atomic_fetch_add(&e->bytes_decoded, info->plain_bytes + info->lz4_bytes);
	return err;
}

int dsv_engine_make(dsv_engine *e, uint32_t file, const dsv_read_req *req, char *buf,
		    dsv_read_info *info)
{
	memset(info, 0, sizeof(*info));
	info->first = UINT64_MAX; /* no chunk */
	if (make_on_device(e, file, req, buf) == 0)
		return 0;
	return make_on_cpu(e, file, req, buf, info);
}

int dsv_engine_read(dsv_engine *e, uint32_t file, uint64_t off, size_t len, void *dst)
{
	struct timespec t0, t1;
	dsv_read_info info;
	dsv_read_req req = { .off = off, .len = len };
	if (file >= e->nfiles || off > e->file_size[file] || len > e->file_size[file] - off)
		return DSV_ERR_INVALID;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int err = dsv_engine_make(e, file, &req, dst, &info);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	dsv_engine_lat_add(&e->lat_make, &t0, &t1);
	if (err) {
		atomic_fetch_add(&e->read_errors, 1);
		return err;
	}
	if (info.first <= info.last)
		dsv_prefetch_hint(e->prefetch, file, info.first, info.last, off, len);
	atomic_fetch_add(&e->bytes_served, len);
	if (e->sink.reads_kept)
		dsv_budget_add(e->budget, file, off, len);
	return 0;
}

int dsv_engine_hint(dsv_engine *e, uint32_t file, const uint64_t *rows, size_t n)
{
	uint64_t hdr;
	if (file >= e->nfiles)
		return DSV_ERR_INVALID;
	const dsv_view *v = file_view(e, file, &hdr);
	for (size_t i = 0; i < n; i++)
		if (rows[i] >= v->shape[0])
			return DSV_ERR_INVALID;
	if (e->hints)
		dsv_hints_add(e->hints, file, rows, n);
	return 0;
}

/* A reader in a control group whose memory limit is below the machine's
 * RAM (a job under SLURM or Kubernetes, the daemon started outside it):
 * the pages it faults in count against that limit, so the page budget
 * follows it (pages.c). Each reader process is looked at once in a row: a
 * worker that opens the file for every item costs one look. */
void dsv_engine_opened(dsv_engine *e, int data, int pid)
{
	atomic_fetch_add(&e->opens, 1);
	if (!data || !e->sink.reads_kept)
		return;
	uint64_t ram = dsv_ram_bytes();
	if (pid <= 0 || ram == UINT64_MAX || atomic_exchange(&e->last_opener, pid) == pid)
		return;
	uint64_t limit = dsv_cgroup_mem_limit(pid);
	if (limit < ram)
		dsv_engine_pages_limit(e, limit);
}

void dsv_engine_count_request(dsv_engine *e)
{
	atomic_fetch_add(&e->reads, 1);
}

void dsv_engine_time_reply(dsv_engine *e, const struct timespec *t0, const struct timespec *t1)
{
	dsv_engine_lat_add(&e->lat_reply, t0, t1);
}
