/*
 * /.stats.json: the daemon's counters and the cache's, as JSON. Its text is
 * rendered at open and owned by the handle (a snapshot), so a reader sees
 * one consistent document however it reads it; the file is direct_io.
 * Its st_size is the snapshot's length: fstat of an open handle gives its
 * own, and a stat by path renders the text that an open within the next
 * second takes, so stat, open, read (cp, tar, rsync) agree on the size.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/str.h"
#include "fs/fs_i.h"
#include "net/net.h"

void dsv_fs_lat_add(lat_hist *h, const struct timespec *t0, const struct timespec *t1)
{
	int64_t ns = (int64_t)(t1->tv_sec - t0->tv_sec) * 1000000000 + (t1->tv_nsec - t0->tv_nsec);
	uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
	unsigned k = 0;
	while (k + 1 < DSV_LAT_BUCKETS && us >= (2ull << k))
		k++;
	atomic_fetch_add(&h->n[k], 1);
	atomic_fetch_add(&h->sum_us, us);
}

/* h's counts as a JSON array, into out (room for 16 numbers of 20 digits). */
#define HIST_TEXT (DSV_LAT_BUCKETS * 22 + 4)
static void render_hist(char out[HIST_TEXT], const lat_hist *h)
{
	size_t at = 0;
	out[at++] = '[';
	for (unsigned k = 0; k < DSV_LAT_BUCKETS; k++)
		at += (size_t)snprintf(out + at, HIST_TEXT - at, "%s%llu", k ? ", " : "",
				       (unsigned long long)h->n[k]);
	snprintf(out + at, HIST_TEXT - at, "]");
}

/* s as the inside of a JSON string (a device name or a reason: printable
 * ASCII in practice; anything else is dropped). */
static const char *json_text(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	for (; *s && n + 3 < cap; s++) {
		if (*s == '"' || *s == '\\')
			out[n++] = '\\';
		if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
			out[n++] = *s;
	}
	out[n] = '\0';
	return out;
}

static char *render_stats(dsv_fs *fs)
{
	dsv_cache_stats cs;
	char *s = NULL;
	dsv_cache_get_stats(fs->cache, &cs);
	dsv_backend_stats bs;
	dsv_backend_get_stats(fs->backend, &bs);
	char dev[4 * 256 + 4], why[4 * 256 + 4];
	dsv_hints_stats hs = { 0 };
	dsv_net_stats ns;
	dsv_net_get_stats(&ns);
	if (fs->hints)
		dsv_hints_get_stats(fs->hints, &hs);
	/* tiles of windows have a cache of their own (fs->tiles) */
	uint64_t made = fs->made, decoded = cs.fills - cs.fill_errors;
	char make[HIST_TEXT], reply[HIST_TEXT];
	render_hist(make, &fs->lat_make);
	render_hist(reply, &fs->lat_reply);
	if (asprintf(
		    &s,
		    "{\n  \"pid\": %d,\n  \"backend\": \"%s\",\n  \"gpu_device\": \"%s\",\n"
		    "  \"gpu_off_why\": \"%s\",\n  \"gpu_chunks\": %llu,\n  \"gpu_bytes\": %llu,\n"
		    "  \"gpu_batches\": %llu,\n  \"gpu_fallbacks\": %llu,\n  \"gpu_busy\": %llu,\n"
		    "  \"gpu_failed\": %s,\n"
		    "  \"gpu_emulated\": %s,\n  \"gpu_readahead_bytes\": %llu,\n"
		    "  \"gpu_readahead_fallbacks\": %llu,\n"
		    "  \"gpu_batch_bytes\": %llu,\n  \"gpu_pinned_bytes\": %llu,\n"
		    "  \"gpu_cache_bytes\": %llu,\n  \"gpu_cache_used\": %llu,\n"
		    "  \"gpu_cache_chunks\": %llu,\n  \"gpu_cache_hits\": %llu,\n"
		    "  \"gpu_cache_misses\": %llu,\n"
		    "  \"kernel\": \"%s\",\n  \"views\": %zu,\n"
		    "  \"reads\": %llu,\n  \"bytes_served\": %llu,\n  \"bytes_decoded\": %llu,\n"
		    "  \"read_errors\": %llu,\n"
		    "  \"opens\": %llu,\n  \"chunks_decoded\": %llu,\n  \"decode_errors\": %llu,\n"
		    "  \"cache_hits\": %llu,\n  \"cache_misses\": %llu,\n  \"cache_waits\": %llu,\n"
		    "  \"cache_evictions\": %llu,\n  \"cache_entries\": %llu,\n"
		    "  \"cache_ghost_hits\": %llu,\n  \"cache_reuses\": %llu,\n"
		    "  \"cache_bytes_probation\": %llu,\n"
		    "  \"cache_bytes\": %llu,\n  \"cache_budget\": %llu,\n  \"prefetched\": %llu,\n"
		    "  \"bytes_pushed\": %llu,\n  \"bytes_dropped\": %llu,\n"
		    "  \"page_budget\": %llu,\n  \"page_budget_held\": %llu,\n"
		    "  \"bytes_shed\": %llu,\n"
		    "  \"read_entries\": %llu,\n"
		    "  \"hints_queued\": %llu,\n  \"hints_stored\": %llu,\n  \"hints_dropped\": "
		    "%llu,\n"
		    "  \"read_make_us\": %s,\n  \"read_make_us_sum\": %llu,\n"
		    "  \"read_reply_us\": %s,\n  \"read_reply_us_sum\": %llu,\n"
		    "  \"net_heads\": %llu,\n  \"net_gets\": %llu,\n  \"net_bytes\": %llu,\n"
		    "  \"net_retries\": %llu,\n  \"net_failures\": %llu,\n"
		    "  \"disk_cache_hits\": %llu,\n  \"disk_cache_misses\": %llu,\n"
		    "  \"disk_cache_bytes\": %llu,\n  \"disk_cache_evictions\": %llu,\n"
		    "  \"disk_cache_corrupt\": %llu,\n  \"disk_cache_size\": %llu,\n"
		    "  \"disk_cache_used\": %llu,\n"
		    "  \"errors\": %llu\n}\n",
		    (int)getpid(), dsv_backend_name(fs->backend),
		    json_text(bs.device, dev, sizeof(dev)), json_text(bs.why_cpu, why, sizeof(why)),
		    (unsigned long long)bs.gpu_chunks, (unsigned long long)bs.gpu_bytes,
		    (unsigned long long)bs.gpu_batches, (unsigned long long)bs.gpu_fallbacks,
		    (unsigned long long)bs.gpu_busy, bs.gpu_failed ? "true" : "false",
		    bs.gpu_emulated ? "true" : "false", (unsigned long long)bs.made_bytes,
		    (unsigned long long)bs.made_fallbacks, (unsigned long long)bs.batch_bytes,
		    (unsigned long long)bs.pinned_bytes, (unsigned long long)bs.tier_bytes,
		    (unsigned long long)bs.tier_used, (unsigned long long)bs.tier_chunks,
		    (unsigned long long)bs.tier_hits, (unsigned long long)bs.tier_misses,
		    dsv_xform_kernel_name(), fs->m->nviews, (unsigned long long)fs->reads,
		    (unsigned long long)fs->bytes_served, (unsigned long long)fs->bytes_decoded,
		    (unsigned long long)fs->read_errors, (unsigned long long)fs->opens,
		    (unsigned long long)decoded, (unsigned long long)cs.fill_errors,
		    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
		    (unsigned long long)cs.waits, (unsigned long long)cs.evictions,
		    (unsigned long long)cs.entries, (unsigned long long)cs.ghost_hits,
		    (unsigned long long)cs.reuses, (unsigned long long)cs.bytes_probation,
		    (unsigned long long)cs.bytes_used, (unsigned long long)cs.budget,
		    (unsigned long long)dsv_prefetch_done(fs->prefetch),
		    (unsigned long long)fs->bytes_pushed, (unsigned long long)fs->bytes_dropped,
		    (unsigned long long)dsv_budget_size(fs->budget),
		    (unsigned long long)dsv_budget_held(fs->budget),
		    (unsigned long long)fs->bytes_shed, (unsigned long long)made,
		    (unsigned long long)hs.queued, (unsigned long long)hs.stored,
		    (unsigned long long)hs.dropped, make, (unsigned long long)fs->lat_make.sum_us,
		    reply, (unsigned long long)fs->lat_reply.sum_us, (unsigned long long)ns.heads,
		    (unsigned long long)ns.gets, (unsigned long long)ns.bytes,
		    (unsigned long long)ns.retries, (unsigned long long)ns.failures,
		    (unsigned long long)ns.disk_hits, (unsigned long long)ns.disk_misses,
		    (unsigned long long)ns.disk_bytes, (unsigned long long)ns.disk_evictions,
		    (unsigned long long)ns.disk_corrupt, (unsigned long long)ns.disk_size,
		    (unsigned long long)ns.disk_used,
		    (unsigned long long)(fs->read_errors + cs.fill_errors)) < 0)
		return NULL;
	return s;
}

/* The mount's identity, what `dsview status` shows besides the counters,
 * put before the counters of render_stats: mountpoint, source (absolute
 * when it can be resolved), start time (Unix seconds) and where the log
 * goes. */
static char *render(dsv_fs *fs)
{
	char *counters = render_stats(fs), *s = NULL;
	/* JSON strings are UTF-8: paths shown as fsname shows them (\xNN) */
	char mp[4 * PATH_MAX + 4], log[4 * PATH_MAX + 4];
	const char *target = dsv_log_target();
	json_t *id = counters ? json_pack("{s:s, s:s, s:I, s:s}", "mountpoint",
					  dsv_shown(fs->mountpoint, strlen(fs->mountpoint),
						    PATH_MAX, mp),
					  "source", fs->source, "started",
					  (json_int_t)fs->mount_time.tv_sec, "log",
					  dsv_shown(target, strlen(target), PATH_MAX, log))
			      : NULL;
	char *head = id ? json_dumps(id, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	size_t n = head ? strlen(head) : 0;
	/* head: "{...\n}"; counters: "{\n  ..." -> one object */
	if (n > 2 && counters[0] == '{' &&
	    asprintf(&s, "%.*s,%s", (int)(n - 2), head, counters + 1) < 0)
		s = NULL;
	json_decref(id);
	free(head);
	free(counters);
	return s;
}

/* seconds from a to b */
static double elapsed(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* The text a stat sized under a second ago, or a new rendering. */
static char *next_text(dsv_fs *fs)
{
	struct timespec now;
	char *s = NULL;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&fs->snap_lock);
	if (fs->stats_next && elapsed(&fs->stats_next_at, &now) < 1.0) {
		s = fs->stats_next;
		fs->stats_next = NULL;
	}
	pthread_mutex_unlock(&fs->snap_lock);
	return s ? s : render(fs);
}

uint64_t dsv_fs_stats_size(dsv_fs *fs, const struct fuse_file_info *fi)
{
	if (fi && fi->fh)
		return strlen(((const stats_snap *)(uintptr_t)fi->fh)->text);
	char *s = render(fs), *old;
	if (!s)
		return 0;
	uint64_t len = strlen(s);
	pthread_mutex_lock(&fs->snap_lock);
	old = fs->stats_next;
	fs->stats_next = s;
	clock_gettime(CLOCK_MONOTONIC, &fs->stats_next_at);
	pthread_mutex_unlock(&fs->snap_lock);
	free(old);
	return len;
}

stats_snap *dsv_fs_snap_new(dsv_fs *fs)
{
	char *s = next_text(fs);
	size_t len = s ? strlen(s) : 0;
	stats_snap *snap = s ? malloc(sizeof(*snap) + len + 1) : NULL;
	if (snap) {
		memcpy(snap->text, s, len + 1);
		pthread_mutex_lock(&fs->snap_lock);
		snap->prev = NULL;
		snap->next = fs->snaps;
		if (fs->snaps)
			fs->snaps->prev = snap;
		fs->snaps = snap;
		pthread_mutex_unlock(&fs->snap_lock);
	}
	free(s);
	return snap;
}

void dsv_fs_snap_free(dsv_fs *fs, stats_snap *snap)
{
	pthread_mutex_lock(&fs->snap_lock);
	if (snap->prev)
		snap->prev->next = snap->next;
	else
		fs->snaps = snap->next;
	if (snap->next)
		snap->next->prev = snap->prev;
	pthread_mutex_unlock(&fs->snap_lock);
	free(snap);
}
