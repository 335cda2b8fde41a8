/* The engine's counters and the cache's, the backend's and object
 * storage's, as the members of a JSON object: the front end puts its own
 * (a mount's identity) before them. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/engine_i.h"
#include "net/net.h"

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

char *dsv_engine_stats_text(dsv_engine *e)
{
	dsv_cache_stats cs;
	char *s = NULL;
	dsv_cache_get_stats(e->cache, &cs);
	dsv_backend_stats bs;
	dsv_backend_get_stats(e->backend, &bs);
	char dev[4 * 256 + 4], why[4 * 256 + 4];
	dsv_hints_stats hs = { 0 };
	dsv_net_stats ns;
	dsv_net_get_stats(&ns);
	if (e->hints)
		dsv_hints_get_stats(e->hints, &hs);
	/* tiles of windows have a cache of their own (e->tiles) */
	uint64_t made = e->made, decoded = cs.fills - cs.fill_errors;
	char make[HIST_TEXT], reply[HIST_TEXT];
	render_hist(make, &e->lat_make);
	render_hist(reply, &e->lat_reply);
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
		    (int)getpid(), dsv_backend_name(e->backend),
		    json_text(bs.device, dev, sizeof(dev)), json_text(bs.why_cpu, why, sizeof(why)),
		    (unsigned long long)bs.gpu_chunks, (unsigned long long)bs.gpu_bytes,
		    (unsigned long long)bs.gpu_batches, (unsigned long long)bs.gpu_fallbacks,
		    (unsigned long long)bs.gpu_busy, bs.gpu_failed ? "true" : "false",
		    bs.gpu_emulated ? "true" : "false", (unsigned long long)bs.made_bytes,
		    (unsigned long long)bs.made_fallbacks, (unsigned long long)bs.batch_bytes,
		    (unsigned long long)bs.pinned_bytes, (unsigned long long)bs.tier_bytes,
		    (unsigned long long)bs.tier_used, (unsigned long long)bs.tier_chunks,
		    (unsigned long long)bs.tier_hits, (unsigned long long)bs.tier_misses,
		    dsv_xform_kernel_name(), e->m->nviews, (unsigned long long)e->reads,
		    (unsigned long long)e->bytes_served, (unsigned long long)e->bytes_decoded,
		    (unsigned long long)e->read_errors, (unsigned long long)e->opens,
		    (unsigned long long)decoded, (unsigned long long)cs.fill_errors,
		    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
		    (unsigned long long)cs.waits, (unsigned long long)cs.evictions,
		    (unsigned long long)cs.entries, (unsigned long long)cs.ghost_hits,
		    (unsigned long long)cs.reuses, (unsigned long long)cs.bytes_probation,
		    (unsigned long long)cs.bytes_used, (unsigned long long)cs.budget,
		    (unsigned long long)dsv_prefetch_done(e->prefetch),
		    (unsigned long long)e->bytes_pushed, (unsigned long long)e->bytes_dropped,
		    (unsigned long long)dsv_budget_size(e->budget),
		    (unsigned long long)dsv_budget_held(e->budget),
		    (unsigned long long)e->bytes_shed, (unsigned long long)made,
		    (unsigned long long)hs.queued, (unsigned long long)hs.stored,
		    (unsigned long long)hs.dropped, make, (unsigned long long)e->lat_make.sum_us,
		    reply, (unsigned long long)e->lat_reply.sum_us, (unsigned long long)ns.heads,
		    (unsigned long long)ns.gets, (unsigned long long)ns.bytes,
		    (unsigned long long)ns.retries, (unsigned long long)ns.failures,
		    (unsigned long long)ns.disk_hits, (unsigned long long)ns.disk_misses,
		    (unsigned long long)ns.disk_bytes, (unsigned long long)ns.disk_evictions,
		    (unsigned long long)ns.disk_corrupt, (unsigned long long)ns.disk_size,
		    (unsigned long long)ns.disk_used,
		    (unsigned long long)(e->read_errors + cs.fill_errors)) < 0)
		return NULL;
	return s;
}
