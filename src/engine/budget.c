/* The page budget; see budget.h. */
#include <pthread.h>
#include <stdlib.h>

#include "engine/budget.h"

#define REGION_MIN (2u << 20)
#define REGIONS_MAX (256u << 10) /* regions grow past REGION_MIN to stay under this */
#define DROP_CAP 1024            /* drops queued for the thread */
#define NONE UINT32_MAX

typedef struct drop {
	uint32_t file;
	uint64_t off, len, held;
} drop;

struct dsv_budget {
	dsv_budget_drop_fn fn;
	void *ctx;
	uint64_t budget, region;
	size_t nfiles;
	uint64_t *sizes;
	uint32_t *first; /* first[i]: file i's first region; first[nfiles]: all */

	pthread_mutex_t mu; /* everything below */
	pthread_cond_t cv;
	uint32_t *held;        /* bytes counted in each region */
	uint32_t *prev, *next; /* regions with bytes, least recently added first */
	uint32_t lru, mru;
	uint64_t total;
	drop q[DROP_CAP];
	unsigned head, len;
	int stopping;
	pthread_t tid;
	int started;
};

static void *budget_thread(void *arg)
{
	dsv_budget *b = arg;
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->stopping && b->len == 0)
			pthread_cond_wait(&b->cv, &b->mu);
		if (b->stopping)
			break;
		drop d = b->q[b->head];
		b->head = (b->head + 1) % DROP_CAP;
		b->len--;
		pthread_mutex_unlock(&b->mu);
		b->fn(b->ctx, d.file, d.off, d.len, d.held);
		pthread_mutex_lock(&b->mu);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

dsv_budget *dsv_budget_start(const uint64_t *sizes, size_t nfiles, uint64_t budget,
			     dsv_budget_drop_fn fn, void *ctx)
{
	uint64_t all = 0, n = 0;
	dsv_budget *b;

	if (budget == 0 || nfiles == 0)
		return NULL;
	for (size_t i = 0; i < nfiles; i++)
		all += sizes[i];
	uint64_t region = REGION_MIN;
	while (all / region + nfiles > REGIONS_MAX)
		region *= 2;
	if (!(b = calloc(1, sizeof(*b))))
		return NULL;
	b->fn = fn;
	b->ctx = ctx;
	b->budget = budget;
	b->region = region;
	b->nfiles = nfiles;
	b->lru = b->mru = NONE;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->sizes = malloc(nfiles * sizeof(*b->sizes));
	b->first = malloc((nfiles + 1) * sizeof(*b->first));
	if (!b->sizes || !b->first)
		goto fail;
	for (size_t i = 0; i < nfiles; i++) {
		b->sizes[i] = sizes[i];
		b->first[i] = (uint32_t)n;
		n += (sizes[i] + region - 1) / region;
	}
	b->first[nfiles] = (uint32_t)n;
	b->held = calloc(n ? n : 1, sizeof(*b->held));
	b->prev = malloc((n ? n : 1) * sizeof(*b->prev));
	b->next = malloc((n ? n : 1) * sizeof(*b->next));
	if (!b->held || !b->prev || !b->next)
		goto fail;
	if (pthread_create(&b->tid, NULL, budget_thread, b))
		goto fail;
	b->started = 1;
	return b;
fail:
	dsv_budget_stop(b);
	return NULL;
}

static void unlink_region(dsv_budget *b, uint32_t r)
{
	if (b->prev[r] == NONE)
		b->lru = b->next[r];
	else
		b->next[b->prev[r]] = b->next[r];
	if (b->next[r] == NONE)
		b->mru = b->prev[r];
	else
		b->prev[b->next[r]] = b->prev[r];
}

static void append_region(dsv_budget *b, uint32_t r)
{
	b->prev[r] = b->mru;
	b->next[r] = NONE;
	if (b->mru == NONE)
		b->lru = r;
	else
		b->next[b->mru] = r;
	b->mru = r;
}

/* The file that region r belongs to. */
static uint32_t file_of(const dsv_budget *b, uint32_t r)
{
	size_t lo = 0, hi = b->nfiles; /* first[lo] <= r < first[hi] */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (b->first[mid] <= r)
			lo = mid;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/* Queues the drops of the least recently added regions until the count is
 * an eighth below the budget (or the queue is full: the next add goes on). */
static void shed(dsv_budget *b)
{
	uint64_t floor = b->budget - b->budget / 8;
	int queued = 0;
	while (b->total > floor && b->lru != NONE && b->len < DROP_CAP) {
		uint32_t r = b->lru, file = file_of(b, r);
		uint64_t off = (uint64_t)(r - b->first[file]) * b->region;
		uint64_t len = b->sizes[file] - off < b->region ? b->sizes[file] - off : b->region;
		unlink_region(b, r);
		b->total -= b->held[r];
		b->q[(b->head + b->len) % DROP_CAP] = (drop){
			.file = file, .off = off, .len = len, .held = b->held[r]
		};
		b->held[r] = 0;
		b->len++;
		queued = 1;
	}
	if (queued)
		pthread_cond_signal(&b->cv);
}

/* Calls fn(b, region, bytes of [off, end) in it) for each region of file
 * the range touches, under the lock. */
static void each_region(dsv_budget *b, uint32_t file, uint64_t off, uint64_t len,
			void (*fn)(dsv_budget *b, uint32_t r, uint64_t bytes))
{
	if (!b || file >= b->nfiles || off >= b->sizes[file] || len == 0)
		return;
	uint64_t end = len > b->sizes[file] - off ? b->sizes[file] : off + len;
	pthread_mutex_lock(&b->mu);
	while (off < end) {
		uint64_t stop = (off / b->region + 1) * b->region;
		if (stop > end)
			stop = end;
		fn(b, b->first[file] + (uint32_t)(off / b->region), stop - off);
		off = stop;
	}
	if (b->total > b->budget)
		shed(b);
	pthread_mutex_unlock(&b->mu);
}

static void add_region(dsv_budget *b, uint32_t r, uint64_t bytes)
{
	uint64_t room = b->region - b->held[r], d = bytes < room ? bytes : room;
	if (b->held[r])
		unlink_region(b, r);
	b->held[r] += (uint32_t)d;
	b->total += d;
	if (b->held[r])
		append_region(b, r);
}

static void forget_region(dsv_budget *b, uint32_t r, uint64_t bytes)
{
	uint64_t d = bytes < b->held[r] ? bytes : b->held[r];
	if (!d)
		return;
	b->held[r] -= (uint32_t)d;
	b->total -= d;
	if (!b->held[r])
		unlink_region(b, r);
}

void dsv_budget_add(dsv_budget *b, uint32_t file, uint64_t off, uint64_t len)
{
	each_region(b, file, off, len, add_region);
}

void dsv_budget_forget(dsv_budget *b, uint32_t file, uint64_t off, uint64_t len)
{
	each_region(b, file, off, len, forget_region);
}

void dsv_budget_lower(dsv_budget *b, uint64_t budget)
{
	if (!b || budget == 0)
		return;
	pthread_mutex_lock(&b->mu);
	if (budget < b->budget) {
		b->budget = budget;
		if (b->total > budget)
			shed(b);
	}
	pthread_mutex_unlock(&b->mu);
}

uint64_t dsv_budget_held(dsv_budget *b)
{
	if (!b)
		return 0;
	pthread_mutex_lock(&b->mu);
	uint64_t t = b->total;
	pthread_mutex_unlock(&b->mu);
	return t;
}

uint64_t dsv_budget_size(dsv_budget *b)
{
	if (!b)
		return 0;
	pthread_mutex_lock(&b->mu);
	uint64_t t = b->budget;
	pthread_mutex_unlock(&b->mu);
	return t;
}

uint64_t dsv_budget_region(const dsv_budget *b)
{
	return b ? b->region : 0;
}

void dsv_budget_stop(dsv_budget *b)
{
	if (!b)
		return;
	if (b->started) {
		pthread_mutex_lock(&b->mu);
		b->stopping = 1;
		pthread_cond_signal(&b->cv);
		pthread_mutex_unlock(&b->mu);
		pthread_join(b->tid, NULL);
	}
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b->held);
	free(b->prev);
	free(b->next);
	free(b->sizes);
	free(b->first);
	free(b);
}
