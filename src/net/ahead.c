/*
 * Readahead of an object (net_i.h): a sequential stream of reads keeps
 * several large ranged GETs in flight ahead of it, and its reads are
 * served from what they fetched.
 *
 * The object is cut into blocks of DSVIEW_NET_GET_KB, each one GET. An
 * object's window is a few slots, each holding one block: queued, being
 * fetched, fetched or failed. A read that continues a chain of earlier
 * reads (chain_on: near where they ended; CHAIN_MIN bytes and half a
 * block read, at least half of those it spans) queues the blocks from the
 * one holding its next byte on, DSVIEW_NET_AHEAD_KB worth; a read whose
 * bytes all lie in slots waits for them and copies out; any other read is
 * one GET of its own bytes, as without readahead.
 *
 * The GETs run on a pool of DSVIEW_NET_GETS threads for the process (made
 * at the first queued block), each with its own connection. Every GET
 * carries the object's If-Match as any other, so a window never holds
 * bytes of two versions. A block whose GET failed (after its retries)
 * fails the reads that need it, once: its slot is emptied, and the next
 * read of those bytes GETs them again.
 *
 * Memory: a slot's buffer is freed once its bytes have been read (a
 * sequential pass reads each once) or when the slot is taken for another
 * block, the least recently used first; an object has at most
 * AHEAD_KB / GET_KB + 1 slots, and the process the bytes of STREAMS_MAX
 * objects' full windows, past which a stream reads without readahead.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "net/net_i.h"

#define CHAIN_MIN (512u << 10) /* bytes a chain reads before readahead starts */
#define NEAR (1u << 20)        /* how far from a chain's end a read continues it */
#define ENDS 8                 /* read ends remembered per object */
#define SLOTS_PER_OBJ 65       /* at most; the knobs give fewer */
#define STREAMS_MAX 8          /* full windows the process holds at most */
#define QUEUE_MAX 1024         /* blocks queued in the pool, at most */

enum { S_EMPTY, S_QUEUED, S_FETCHING, S_READY, S_FAILED };

typedef struct slot {
	int state;
	uint64_t block;
	char *buf;     /* the block's bytes, once S_READY */
	size_t len;    /* the block's length (the last block is shorter) */
	size_t used;   /* bytes reads copied out */
	uint64_t tick; /* last use, for taking the least recently used */
} slot;

typedef struct chain {
	uint64_t start; /* where the chain's reads begin */
	uint64_t end;   /* where the chain's last read ended */
	uint64_t bytes; /* read by the chain so far */
} chain;

struct dsv_net_ahead {
	const dsv_net_obj *obj;
	uint64_t size, block;   /* the object's size, the block size */
	unsigned nslots, depth; /* slots; blocks queued ahead of a read */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a slot's GET ended; pending reached 0 */
	slot s[SLOTS_PER_OBJ];
	chain ends[ENDS];
	unsigned next_end; /* the ring's entry replaced next */
	unsigned pending;  /* slots queued or being fetched */
	uint64_t tick;
};

typedef struct job {
	dsv_net_ahead *a;
	unsigned slot;
} job;

static struct {
	pthread_once_t once;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	job q[QUEUE_MAX];
	unsigned head, len;
	uint64_t bytes, cap; /* slot buffers allocated, all objects; their bound */
	int threads;
	int off; /* in a forked child: no readahead */
} pool = { .once = PTHREAD_ONCE_INIT,
	   .mu = PTHREAD_MUTEX_INITIALIZER,
	   .cv = PTHREAD_COND_INITIALIZER };

/* Fetches one queued slot's block. */
static void run_job(job j)
{
	dsv_net_ahead *a = j.a;
	slot *sl = &a->s[j.slot];

	pthread_mutex_lock(&a->mu);
	sl->state = S_FETCHING;
	uint64_t off = sl->block * a->block;
	size_t len = sl->len;
	char *buf = sl->buf;
	pthread_mutex_unlock(&a->mu);
	int err = dsv_net_get(a->obj, buf, len, off);
	pthread_mutex_lock(&a->mu);
	sl->state = err ? S_FAILED : S_READY;
	sl->tick = ++a->tick;
	a->pending--;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

static void *pool_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.mu);
	for (;;) {
		while (!pool.len)
			pthread_cond_wait(&pool.cv, &pool.mu);
		job j = pool.q[pool.head];
		pool.head = (pool.head + 1) % QUEUE_MAX;
		pool.len--;
		pthread_mutex_unlock(&pool.mu);
		run_job(j);
		pthread_mutex_lock(&pool.mu);
	}
	return NULL;
}

static void pool_start(void)
{
	int n = (int)dsv_knob_int(DSV_KNOB_NET_GETS);
	pthread_attr_t at;

	pool.cap = STREAMS_MAX * (((uint64_t)dsv_knob_int(DSV_KNOB_NET_AHEAD_KB) << 10) +
				  ((uint64_t)dsv_knob_int(DSV_KNOB_NET_GET_KB) << 10));
	if (pthread_attr_init(&at))
		return;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &at, pool_thread, NULL))
			break;
		pool.threads++;
	}
	pthread_attr_destroy(&at);
}

void dsv_net_ahead_after_fork(void)
{
	pool.off = 1; /* the pool's threads are the parent's */
}

dsv_net_ahead *dsv_net_ahead_new(const dsv_net_obj *o, uint64_t size)
{
	uint64_t block = (uint64_t)dsv_knob_int(DSV_KNOB_NET_GET_KB) << 10;
	uint64_t ahead = (uint64_t)dsv_knob_int(DSV_KNOB_NET_AHEAD_KB) << 10;
	dsv_net_ahead *a;

	if (!ahead || pool.off || size <= block)
		return NULL; /* one GET of an object this small is its readahead */
	if (!(a = calloc(1, sizeof(*a))))
		return NULL;
	a->obj = o;
	a->size = size;
	a->block = block;
	a->depth = (unsigned)((ahead + block - 1) / block);
	if (a->depth > SLOTS_PER_OBJ - 1)
		a->depth = SLOTS_PER_OBJ - 1;
	a->nslots = a->depth + 1;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	return a;
}

static void slot_free(slot *sl)
{
	if (sl->buf) {
		free(sl->buf);
		pthread_mutex_lock(&pool.mu);
		pool.bytes -= sl->len;
		pthread_mutex_unlock(&pool.mu);
	}
	memset(sl, 0, sizeof(*sl));
}

void dsv_net_ahead_free(dsv_net_ahead *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	/* the queued blocks leave the pool's queue; the ones being fetched
	 * are waited for */
	pthread_mutex_lock(&pool.mu);
	unsigned kept = 0;
	for (unsigned i = 0; i < pool.len; i++) {
		job j = pool.q[(pool.head + i) % QUEUE_MAX];
		if (j.a == a)
			a->pending--;
		else
			pool.q[(pool.head + kept++) % QUEUE_MAX] = j;
	}
	pool.len = kept;
	pthread_mutex_unlock(&pool.mu);
	while (a->pending)
		pthread_cond_wait(&a->cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
	for (unsigned i = 0; i < a->nslots; i++)
		slot_free(&a->s[i]);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	free(a);
}

/* The slot holding block b, or NULL. */
static slot *find(dsv_net_ahead *a, uint64_t b)
{
	for (unsigned i = 0; i < a->nslots; i++)
		if (a->s[i].state != S_EMPTY && a->s[i].block == b)
			return &a->s[i];
	return NULL;
}

/* A slot to hold another block: an empty one, else the least recently
 * used that is fetched (or failed) and holds no block of [keep_lo,
 * keep_hi], the read's and those queued for it; NULL: none. */
static slot *take(dsv_net_ahead *a, uint64_t keep_lo, uint64_t keep_hi)
{
	slot *best = NULL;
	for (unsigned i = 0; i < a->nslots; i++) {
		slot *sl = &a->s[i];
		if (sl->state == S_EMPTY)
			return sl;
		if ((sl->state == S_READY || sl->state == S_FAILED) &&
		    (sl->block < keep_lo || sl->block > keep_hi) &&
		    (!best || sl->tick < best->tick))
			best = sl;
	}
	if (best)
		slot_free(best);
	return best;
}

/* Queues block b into sl (empty) for the pool. @return 0, or -1 when
 * there is no room (no buffer left for the process, a full queue). */
static int queue(dsv_net_ahead *a, slot *sl, uint64_t b)
{
	uint64_t off = b * a->block;
	size_t len = (size_t)(a->size - off < a->block ? a->size - off : a->block);
	int ok = 0;

	pthread_once(&pool.once, pool_start);
	pthread_mutex_lock(&pool.mu);
	if (pool.threads && pool.bytes + len <= pool.cap && pool.len < QUEUE_MAX &&
	    (sl->buf = malloc(len))) {
		pool.bytes += len;
		pool.q[(pool.head + pool.len++) % QUEUE_MAX] = (job){ a, (unsigned)(sl - a->s) };
		pthread_cond_signal(&pool.cv);
		ok = 1;
	}
	pthread_mutex_unlock(&pool.mu);
	if (!ok)
		return -1;
	sl->state = S_QUEUED;
	sl->block = b;
	sl->len = len;
	sl->used = 0;
	sl->tick = ++a->tick;
	a->pending++;
	return 0;
}

/* Queues the blocks ahead of the read [off, end). */
static void fill_ahead(dsv_net_ahead *a, uint64_t off, uint64_t end)
{
	uint64_t first = end / a->block, nblocks = (a->size + a->block - 1) / a->block;
	for (uint64_t b = first; b < first + a->depth && b < nblocks; b++) {
		slot *sl;
		if (find(a, b))
			continue;
		if (!(sl = take(a, off / a->block, first + a->depth - 1)) || queue(a, sl, b))
			return;
	}
}

/* Records the read [off, end) among the chains: @return whether it
 * continues one that has read CHAIN_MIN bytes and half a block, at least
 * half of the bytes it spans. A read continues a chain when it starts
 * within NEAR of where the chain has read to, before or after: a source's
 * reads of one pass come from several threads, a little out of order, and
 * may leave gaps (HDF5's chunk headers) or overlap. The two halves tell a
 * pass from a shuffled reader's sorted batch, whose rows also follow one
 * another within NEAR but leave most bytes between them unread (and whose
 * few neighbouring rows read densely for a while): a window ahead of it
 * would fetch those bytes for nothing. */
static int chain_on(dsv_net_ahead *a, uint64_t off, uint64_t end)
{
	for (unsigned i = 0; i < ENDS; i++) {
		chain *c = &a->ends[i];
		if (c->bytes && off + NEAR >= c->end && off <= c->end + NEAR) {
			c->start = off < c->start ? off : c->start;
			c->end = end > c->end ? end : c->end;
			c->bytes += end - off;
			return c->bytes >= CHAIN_MIN && c->bytes >= a->block / 2 &&
			       c->bytes >= (c->end - c->start) / 2;
		}
	}
	a->ends[a->next_end] = (chain){ off, end, end - off };
	a->next_end = (a->next_end + 1) % ENDS;
	return 0;
}

/* Not in the window: the read GETs its own bytes. */
#define MISS 1

/* Waits until the slots of [off, end) are fetched. @return 0; MISS when
 * a block is in none (taken meanwhile); DSV_ERR_IO when a block's GET
 * failed (its slot emptied, so that the next read GETs it again). */
static int wait_for(dsv_net_ahead *a, uint64_t off, uint64_t end)
{
	for (;;) {
		int busy = 0;
		for (uint64_t b = off / a->block; b * a->block < end; b++) {
			slot *sl = find(a, b);
			if (!sl)
				return MISS;
			if (sl->state == S_FAILED) {
				slot_free(sl);
				return DSV_ERR_IO;
			}
			busy |= sl->state != S_READY;
		}
		if (!busy)
			return 0;
		pthread_cond_wait(&a->cv, &a->mu);
	}
}

/* Copies [off, end), all of it in fetched slots, to buf. */
static void copy_out(dsv_net_ahead *a, char *buf, uint64_t off, uint64_t end)
{
	for (uint64_t o = off; o < end;) {
		slot *sl = find(a, o / a->block);
		uint64_t at = o - sl->block * a->block;
		size_t k = (size_t)(end - o < sl->len - at ? end - o : sl->len - at);
		memcpy(buf + (o - off), sl->buf + at, k);
		sl->used += k;
		sl->tick = ++a->tick;
		if (sl->used >= sl->len)
			slot_free(sl); /* read through: a pass reads it once */
		o += k;
	}
}

int dsv_net_ahead_read(dsv_net_ahead *a, void *buf, size_t n, uint64_t off)
{
	uint64_t end = off + n;
	int err = MISS;

	pthread_mutex_lock(&a->mu);
	if (chain_on(a, off, end))
		fill_ahead(a, off, end);
	if (!(err = wait_for(a, off, end)))
		copy_out(a, buf, off, end);
	pthread_mutex_unlock(&a->mu);
	return err == MISS ? dsv_net_get(a->obj, buf, n, off) : err;
}
