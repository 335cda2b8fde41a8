/*
 * What the files of the FUSE front end share (private: only src/fs/
 * includes it, as only src/fs/ includes FUSE headers). The design is
 * written down at the top of fs.c.
 *
 *   fs.c     mount, serve (signals, readahead window, prefetch), teardown
 *   tree.c   the node table built at mount; lookup, getattr, readdir
 *   ops.c    open, read, release, statfs, sampler hints (ioctl), the
 *            read-only refusals; the op table; dsv_err_to_errno, the one
 *            place errno is spoken
 *   hints.c  the queue and threads of sampler hints (hints.h)
 *   stats.c  /.stats.json: its text, and the snapshots open handles own
 *
 * Thread safety: the tree is built before the session serves and never
 * changes, so the workers read it without a lock; the counters are atomic;
 * the snapshot list has its own lock (snap_lock).
 */
#ifndef DSV_FS_FS_I_H
#define DSV_FS_FS_I_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "backend/backend.h"
#include "cache/cache.h"
#include "dsview/fs.h"
#include "fs/budget.h"
#include "fs/hints.h"
#include "fs/prefetch.h"
#include "read/read.h"
#include "view/view.h" /* the view as the rooms above it read it */

#define READ_MAX (1u << 20)

/* N_SKIPPED: /.skipped.json, fixed text (fs->m->skipped_json) */
enum node_kind { N_DIR, N_DAT, N_NPY, N_JSON, N_STATS, N_SKIPPED };

typedef struct node {
	char *name;
	size_t namelen;
	fuse_ino_t parent;
	/* children in the order they were added (0: none); last_child only
	 * while the tree is built */
	fuse_ino_t first_child, last_child, next_sibling;
	enum node_kind kind;
	int view; /* index in the manifest, -1 for dirs and stats */
	uint64_t size;
	/* bytes on disk it stands for (st_blocks; tree.c says which): a V.dat's
	 * are counted when first asked (dsv_fs_node_disk) */
	uint64_t disk;
} node;

/* How long one kind of work took, per request: n[k] counts requests of
 * [2^k, 2^(k+1)) microseconds (n[0] also those under 1 us, the last
 * bucket everything longer); sum_us is their total. */
#define DSV_LAT_BUCKETS 16
typedef struct lat_hist {
	_Atomic uint64_t n[DSV_LAT_BUCKETS];
	_Atomic uint64_t sum_us;
} lat_hist;

struct dsv_fs {
	dsv_manifest *m;
	char *mountpoint;
	char *source; /* the manifest or source, absolute, as fsname shows it */
	dsv_fs_opts o;
	void (*serving)(void *arg); /* dsv_fs_on_serving */
	void *serving_arg;
	struct fuse_session *se;
	int mounted;
	dsv_backend *backend;
	dsv_cache *cache;
	dsv_cache *tiles;       /* tiles of windows (read.h): a small budget of its own */
	dsv_prefetch *prefetch; /* NULL: off */
	dsv_hints *hints;       /* sampler hints (hints.h), NULL: off */
	/* the page budget (budget.h), NULL: off; started, or lowered, under
	 * budget_lock by the first open from a group with a smaller limit */
	dsv_budget *_Atomic budget;
	pthread_mutex_t budget_lock;
	_Atomic int last_opener; /* the process whose group ops.c looked at last */
	node *nodes;             /* nodes[ino - 1] */
	size_t nnodes, capnodes;
	/* (parent, name) -> inode number; see tree.c */
	fuse_ino_t *slots;
	size_t nslots, nindexed;
	struct timespec mount_time;
	struct timespec dir_mtime; /* every directory's */
	_Atomic uint64_t reads, bytes_served, read_errors, opens;
	/* output bytes (as if transformed) of every chunk decoded and every
	 * plain piece pread: against bytes_served, the read amplification */
	_Atomic uint64_t bytes_decoded;
	_Atomic uint64_t bytes_pushed;  /* stored in the page cache by readahead */
	_Atomic uint64_t bytes_dropped; /* dropped from it behind a stream */
	_Atomic uint64_t bytes_shed;    /* counted in the regions the page budget dropped */
	_Atomic uint64_t made;          /* tiles of windows the read path made (read.h) */
	/* a data read's two halves (ops.c): making its bytes, and writing
	 * the reply (the kernel copies it into the reader's pages) */
	lat_hist lat_make, lat_reply;
	unsigned max_read;       /* -o max_read=N, or 0 */
	unsigned max_background; /* DSVIEW_MAX_BACKGROUND (fs.c), or 0: libfuse's */
	/* .stats.json snapshots of open handles. The kernel sends RELEASE
	 * after close without waiting; an unmount can end the connection
	 * before it arrives, so what is left here is freed at the end. */
	pthread_mutex_t snap_lock;
	struct stats_snap *snaps;
	/* the text a stat of /.stats.json sized, for the open that follows
	 * (taken if under a second old), and when it was made; snap_lock */
	char *stats_next;
	struct timespec stats_next_at;
};

/* One open .stats.json: its text as of open. */
typedef struct stats_snap {
	struct stats_snap *prev, *next;
	char text[];
} stats_snap;

static inline dsv_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* NULL for an inode number we never gave out. */
static inline const node *node_of(dsv_fs *fs, fuse_ino_t ino)
{
	if (ino < 1 || ino > fs->nnodes)
		return NULL;
	return &fs->nodes[ino - 1];
}

/* tree.c */
/* Builds the tree of fs->m's views. @return 0, DSV_ERR_NOMEM, or
 * DSV_ERR_INVALID when two names collide. */
int dsv_fs_tree_build(dsv_fs *fs);
/* Frees the tree (also one half built). */
void dsv_fs_tree_free(dsv_fs *fs);
/* The bytes on disk node n stands for (st_blocks, statfs): a V.dat's are
 * counted at the first call (a Zarr source stats its chunk files then),
 * from any thread. */
uint64_t dsv_fs_node_disk(dsv_fs *fs, const node *n);
void dsv_fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void dsv_fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void dsv_fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);

/* ops.c */
extern const struct fuse_lowlevel_ops dsv_fs_ops;
/* Bytes [off, off + len) of data file n (inside it) into buf, read as
 * flags (dsv_read's) ask. */
int dsv_fs_file_bytes(dsv_fs *fs, const node *n, uint64_t off, size_t len, char *buf,
		      unsigned flags, dsv_read_info *info);

/* pagecache.c */
/* Starts the page budget (under a memory limit), the readahead and the
 * hints' threads; each is left off where it cannot start. */
void dsv_fs_pagecache_start(dsv_fs *fs);
/* Stops them (accepts a fs where none started). */
void dsv_fs_pagecache_stop(dsv_fs *fs);
/* A memory limit the mount's pages count against (the daemon's group's, or
 * a reader's): the page budget is started at half of it, or lowered to
 * that, unless it is already lower or the files fit. */
void dsv_fs_pagecache_limit(dsv_fs *fs, uint64_t limit);

/* stats.c */
/* The size of /.stats.json: of the handle's snapshot when fi is an open
 * one, else of the snapshot the next open takes (rendered now). */
uint64_t dsv_fs_stats_size(dsv_fs *fs, const struct fuse_file_info *fi);
/* A snapshot of /.stats.json, on fs->snaps; NULL when out of memory. */
stats_snap *dsv_fs_snap_new(dsv_fs *fs);
/* Takes snap off fs->snaps and frees it. */
void dsv_fs_snap_free(dsv_fs *fs, stats_snap *snap);
/* Counts one request of work that began at t0 (CLOCK_MONOTONIC) and ended
 * at t1 into h. */
void dsv_fs_lat_add(lat_hist *h, const struct timespec *t0, const struct timespec *t1);

#endif
