/* Reads, hints and opens: the engine's calls a front end makes for each
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

/* The .npy header where it lies in the range, then the view's output. */
int dsv_engine_file_bytes(dsv_engine *e, uint32_t file, uint64_t off, size_t len, char *buf,
			  unsigned flags, dsv_read_info *info)
{
	uint64_t hdr;
	const dsv_view *v = file_view(e, file, &hdr);
	int err = 0;
	if (off < hdr) {
		size_t h = (size_t)(hdr - off < len ? hdr - off : len);
		memcpy(buf, v->npy_header + off, h);
		buf += h;
		off += h;
		len -= h;
	}
	memset(info, 0, sizeof(*info));
	info->first = UINT64_MAX; /* no chunk */
	if (len)
		err = dsv_read(e->cache, e->tiles, v, off - hdr, len, buf, flags, info);
	atomic_fetch_add(&e->bytes_decoded, info->plain_bytes + info->lz4_bytes);
	return err;
}

int dsv_engine_read(dsv_engine *e, uint32_t file, uint64_t off, size_t len, void *dst,
		    unsigned flags)
{
	struct timespec t0, t1;
	dsv_read_info info;
	if (file >= e->nfiles || off > e->file_size[file] || len > e->file_size[file] - off)
		return DSV_ERR_INVALID;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int err = dsv_engine_file_bytes(e, file, off, len, dst,
					flags & DSV_ENGINE_STREAM ? DSV_READ_STREAM : 0, &info);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	dsv_engine_lat_add(&e->lat_make, &t0, &t1);
	if (err) {
		atomic_fetch_add(&e->read_errors, 1);
		return err;
	}
	if (info.first <= info.last)
		dsv_prefetch_hint(e->prefetch, file, info.first, info.last, len);
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
