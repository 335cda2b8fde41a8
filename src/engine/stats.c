/* The engine's counters and the cache's, the backend's and object
 * storage's, as members of a JSON object (/.stats.json's, after the front
 * end's identity members).
 *
 * The counters are a table: one row per member, its JSON name, its kind
 * and the field of a snapshot it reads. The snapshot is gathered once per
 * rendering (each module's counters under its own lock or atomics), so
 * every row reads the same moment; a row is rendered by its kind, in the
 * table's order. A new counter is a field in stats_snap, a line in
 * gather and a row in ROWS; docs/performance.md lists them for users. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dsview/xform.h"
#include "engine/engine_i.h"
#include "net/net.h"
#include "source/index.h"
#include "source/source.h"

/* What a counter is: how it moves and how it is written. */
typedef enum stat_kind {
	STAT_COUNT,  /* events since the start, only grows */
	STAT_BYTES,  /* bytes since the start, only grows */
	STAT_GAUGE,  /* a size or a level now: goes up and down */
	STAT_BOOL,   /* true or false */
	STAT_STRING, /* text */
	STAT_HIST,   /* DSV_LAT_BUCKETS counts (engine_i.h, lat_hist) */
} stat_kind;

/* Every counter at one moment. */
typedef struct stats_snap {
	dsv_cache_stats cache;
	dsv_backend_stats be;
	dsv_hints_stats hints;
	dsv_net_stats net;
	const char *backend, *kernel;
	uint64_t views, read_requests, bytes_served, bytes_decoded, read_errors, opens;
	uint64_t chunks_decoded, readahead_chunks, readahead_decoded, bytes_readahead, bytes_hinted;
	uint64_t bytes_dropped, page_budget, page_budget_held, bytes_shed, tiles_made;
	uint64_t make_us[DSV_LAT_BUCKETS], make_us_sum, reply_us[DSV_LAT_BUCKETS], reply_us_sum;
	dsv_source_fd_stats fds;
	dsv_index_stats index;
	uint64_t source_fds, source_fd_budget;
	uint64_t errors;
} stats_snap;

typedef struct stat_row {
	const char *name;
	stat_kind kind;
	size_t off; /* of the field in stats_snap */
} stat_row;

/* The offset of field f, which must have type t (a histogram's decays to
 * uint64_t *): a row naming a field of another type does not compile. */
#define FIELD(t, f) (offsetof(stats_snap, f) + 0 * sizeof(_Generic(((stats_snap *)0)->f, t : 1)))
#define ROW(name, kind, t, f)           \
	{                               \
		name, kind, FIELD(t, f) \
	}
#define COUNT(name, f) ROW(name, STAT_COUNT, uint64_t, f)
#define BYTES(name, f) ROW(name, STAT_BYTES, uint64_t, f)
#define GAUGE(name, f) ROW(name, STAT_GAUGE, uint64_t, f)
#define BOOL(name, f) ROW(name, STAT_BOOL, int, f)
#define STRING(name, f) ROW(name, STAT_STRING, const char *, f)
#define HIST(name, f) ROW(name, STAT_HIST, uint64_t *, f)

static const stat_row ROWS[] = {
	/* where chunks are decoded (backend.h, dsv_backend_stats) */
	STRING("backend", backend),
	STRING("gpu_device", be.device),
	STRING("gpu_off_why", be.why_cpu),
	COUNT("gpu_chunks", be.gpu_chunks),
	BYTES("gpu_bytes", be.gpu_bytes),
	COUNT("gpu_batches", be.gpu_batches),
	COUNT("gpu_fallbacks", be.gpu_fallbacks),
	COUNT("gpu_busy", be.gpu_busy),
	BOOL("gpu_failed", be.gpu_failed),
	BOOL("gpu_emulated", be.gpu_emulated),
	BYTES("gpu_readahead_bytes", be.made_bytes),
	COUNT("gpu_readahead_fallbacks", be.made_fallbacks),
	GAUGE("gpu_batch_bytes", be.batch_bytes),
	GAUGE("gpu_pinned_bytes", be.pinned_bytes),
	GAUGE("gpu_cache_size", be.tier_bytes),
	GAUGE("gpu_cache_used", be.tier_used),
	GAUGE("gpu_cache_chunks", be.tier_chunks),
	COUNT("gpu_cache_hits", be.tier_hits),
	COUNT("gpu_cache_misses", be.tier_misses),
	STRING("kernel", kernel),
	GAUGE("views", views),
	/* requests and what they were served */
	COUNT("read_requests", read_requests),
	BYTES("bytes_served", bytes_served),
	BYTES("bytes_decoded", bytes_decoded),
	COUNT("read_errors", read_errors),
	COUNT("opens", opens),
	/* the sources' descriptors (source/fds.c, dsv_source_fd_stats) */
	GAUGE("source_fds", source_fds),
	GAUGE("source_fd_budget", source_fd_budget),
	COUNT("source_reopens", fds.reopens),
	COUNT("source_replaced", fds.replaced),
	COUNT("source_header_opens", fds.firsts),
	/* the index cache (source/index.h, dsv_index_stats) */
	COUNT("index_hits", index.hits),
	COUNT("index_stale", index.stale),
	COUNT("index_rejected", index.rejected),
	/* the chunk cache (cache.h, dsv_cache_stats) */
	COUNT("chunks_decoded", chunks_decoded),
	COUNT("decode_errors", cache.fill_errors),
	COUNT("cache_hits", cache.hits),
	COUNT("cache_misses", cache.misses),
	COUNT("cache_waits", cache.waits),
	COUNT("cache_evictions", cache.evictions),
	GAUGE("cache_entries", cache.entries),
	COUNT("cache_ghost_hits", cache.ghost_hits),
	COUNT("cache_reuses", cache.reuses),
	GAUGE("cache_bytes_probation", cache.bytes_probation),
	GAUGE("cache_bytes", cache.bytes_used),
	GAUGE("cache_budget", cache.budget),
	/* made ahead of the reader through the sink, and dropped from it */
	COUNT("readahead_chunks", readahead_chunks),
	COUNT("readahead_decoded", readahead_decoded),
	BYTES("bytes_readahead", bytes_readahead),
	BYTES("bytes_hinted", bytes_hinted),
	BYTES("bytes_dropped", bytes_dropped),
	GAUGE("page_budget", page_budget),
	GAUGE("page_budget_held", page_budget_held),
	BYTES("bytes_shed", bytes_shed),
	COUNT("tiles_made", tiles_made),
	/* sampler hints (hints.h), in rows */
	COUNT("hints_queued", hints.queued),
	COUNT("hints_stored", hints.stored),
	COUNT("hints_dropped", hints.dropped),
	COUNT("hints_failed", hints.failed),
	/* how long a read's two halves took */
	HIST("read_make_us", make_us),
	COUNT("read_make_us_sum", make_us_sum),
	HIST("read_reply_us", reply_us),
	COUNT("read_reply_us_sum", reply_us_sum),
	/* object storage and its disk cache (net.h, dsv_net_stats) */
	COUNT("net_heads", net.heads),
	COUNT("net_gets", net.gets),
	BYTES("net_bytes", net.bytes),
	COUNT("net_retries", net.retries),
	COUNT("net_failures", net.failures),
	COUNT("disk_cache_hits", net.disk_hits),
	COUNT("disk_cache_misses", net.disk_misses),
	BYTES("disk_cache_hit_bytes", net.disk_bytes),
	COUNT("disk_cache_evictions", net.disk_evictions),
	COUNT("disk_cache_corrupt", net.disk_corrupt),
	GAUGE("disk_cache_size", net.disk_size),
	GAUGE("disk_cache_used", net.disk_used),
	COUNT("errors", errors),
};

static void load_hist(uint64_t out[DSV_LAT_BUCKETS], uint64_t *sum, lat_hist *h)
{
	for (unsigned k = 0; k < DSV_LAT_BUCKETS; k++)
		out[k] = atomic_load(&h->n[k]);
	*sum = atomic_load(&h->sum_us);
}

static void gather(dsv_engine *e, stats_snap *s)
{
	*s = (stats_snap){ 0 };
	dsv_cache_get_stats(e->cache, &s->cache);
	dsv_backend_get_stats(e->backend, &s->be);
	if (e->hints)
		dsv_hints_get_stats(e->hints, &s->hints);
	dsv_net_get_stats(&s->net);
	s->backend = dsv_backend_name(e->backend);
	s->kernel = dsv_xform_kernel_name();
	s->views = e->m->nviews;
	s->read_requests = atomic_load(&e->reads);
	s->bytes_served = atomic_load(&e->bytes_served);
	s->bytes_decoded = atomic_load(&e->bytes_decoded);
	s->read_errors = atomic_load(&e->read_errors);
	s->opens = atomic_load(&e->opens);
	dsv_source_fd_counts(&s->fds);
	dsv_index_counts(&s->index);
	s->source_fds = s->fds.open;
	s->source_fd_budget = s->fds.budget;
	s->chunks_decoded = s->cache.fills - s->cache.fill_errors;
	s->readahead_chunks = dsv_prefetch_done(e->prefetch);
	s->readahead_decoded = atomic_load(&e->stream_fills);
	s->bytes_readahead = atomic_load(&e->bytes_readahead);
	s->bytes_hinted = atomic_load(&e->bytes_hinted);
	s->bytes_dropped = atomic_load(&e->bytes_dropped);
	s->page_budget = dsv_budget_size(e->budget);
	s->page_budget_held = dsv_budget_held(e->budget);
	s->bytes_shed = atomic_load(&e->bytes_shed);
	s->tiles_made = atomic_load(&e->tiles_made);
	load_hist(s->make_us, &s->make_us_sum, &e->lat_make);
	load_hist(s->reply_us, &s->reply_us_sum, &e->lat_reply);
	s->errors = s->read_errors + s->cache.fill_errors;
}

/* A string as JSON: the text (a device name or a reason) if it is UTF-8,
 * else "?". */
static json_t *text(const char *s)
{
	json_t *j = json_string(s ? s : "");
	return j ? j : json_string("?");
}

static json_t *hist(const uint64_t n[DSV_LAT_BUCKETS])
{
	json_t *a = json_array();
	for (unsigned k = 0; a && k < DSV_LAT_BUCKETS; k++)
		if (json_array_append_new(a, json_integer((json_int_t)n[k]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *value(const stat_row *r, const stats_snap *s)
{
	const char *at = (const char *)s + r->off;
	switch (r->kind) {
	case STAT_BOOL: return json_boolean(*(const int *)at);
	case STAT_STRING: return text(*(const char *const *)at);
	case STAT_HIST: return hist((const uint64_t *)at);
	default: return json_integer((json_int_t) * (const uint64_t *)at);
	}
}

int dsv_engine_stats_add(dsv_engine *e, json_t *obj)
{
	stats_snap s;
	gather(e, &s);
	for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++)
		if (json_object_set_new(obj, ROWS[i].name, value(&ROWS[i], &s)))
			return DSV_ERR_NOMEM;
	return 0;
}
