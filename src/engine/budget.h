/*
 * The page budget: what a mount has put in the kernel's page cache, kept
 * under a size, the oldest dropped first.
 *
 * Under a memory limit (a SLURM or Kubernetes job's control group, page
 * cache counted: the serving process's, or a reader's, pages.c) a reader's pages
 * of a view stay in the group until the kernel reclaims them. Reclaim runs in whoever needs a page next, the
 * readers' page faults and the daemon's reads, and it is slow for these
 * pages: each is mapped by the readers that read it, so reclaim walks its
 * mappings and interrupts the other cores to flush their TLBs, page by
 * page. Shuffled reads by 4 workers under a 1 GiB limit ran at half the
 * speed they had without one. So the mount keeps count, in regions of the
 * files, of the bytes it served and stored (every reply, every readahead
 * store), and once the count passes the budget it drops the regions it
 * touched least recently, whole (FUSE notify_inval_inode: one walk of
 * the mappings a range), until it is an eighth below. A drop can take
 * pages a reader is still to copy; it reads them again, the same bytes.
 * The count is an estimate: pages the kernel reclaimed or dropped itself
 * are counted until their region is dropped, and a region is never
 * counted above its size.
 *
 * Drops run on a thread of their own: one must never wait for a read
 * that a FUSE thread is serving from inside that thread.
 *
 * Thread safety: add, forget and lower may be called from any thread;
 * start and stop are not concurrent with anything else.
 */
#ifndef DSV_ENGINE_BUDGET_H
#define DSV_ENGINE_BUDGET_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsv_budget dsv_budget;

/* Drops bytes [off, off + len) of file `file` from the page cache, of
 * which `held` were counted. */
typedef void (*dsv_budget_drop_fn)(void *ctx, uint32_t file, uint64_t off, uint64_t len,
				   uint64_t held);

/* sizes[i]: file i's size in bytes (0: never added to). budget: bytes.
 * NULL when budget is 0 or on allocation failure (then nothing is
 * counted or dropped). */
dsv_budget *dsv_budget_start(const uint64_t *sizes, size_t nfiles, uint64_t budget,
			     dsv_budget_drop_fn fn, void *ctx);
/* Bytes [off, off + len) of file are now in its page cache. */
void dsv_budget_add(dsv_budget *b, uint32_t file, uint64_t off, uint64_t len);
/* Bytes [off, off + len) of file left the page cache another way. */
void dsv_budget_forget(dsv_budget *b, uint32_t file, uint64_t off, uint64_t len);
/* Lowers the budget to `budget` bytes (a higher one is ignored), dropping
 * what is then over it. */
void dsv_budget_lower(dsv_budget *b, uint64_t budget);
/* Bytes counted now. */
uint64_t dsv_budget_held(dsv_budget *b);
/* The budget now, in bytes (0 for NULL). */
uint64_t dsv_budget_size(dsv_budget *b);
/* The region size: the unit a drop comes in. */
uint64_t dsv_budget_region(const dsv_budget *b);
/* Stops the thread (drops queued and not yet made are left) and frees b;
 * accepts NULL. */
void dsv_budget_stop(dsv_budget *b);

#endif
