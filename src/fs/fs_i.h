/*
 * What the files of the FUSE front end share (private: only src/fs/
 * includes it, as only src/fs/ includes FUSE headers). The design is
 * written down at the top of fs.c.
 *
 *   fs.c     mount, serve (signals, the kernel's readahead window), teardown
 *   tree.c   the node table built at mount; lookup, getattr, readdir
 *   ops.c    open, read, release, statfs, sampler hints (ioctl), the
 *            read-only refusals; the op table; dsv_err_to_errno, the one
 *            place errno is spoken
 *   sink.c   the engine's pages into the kernel's page cache and out
 *   stats.c  /.stats.json: the mount's identity before the engine's
 *            counters, and the snapshots open handles own
 *
 * Thread safety: the tree is built before the session serves and never
 * changes, so the workers read it without a lock; the engine is
 * thread-safe; the snapshot list has its own lock (snap_lock).
 */
#ifndef DSV_FS_FS_I_H
#define DSV_FS_FS_I_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dsview/fs.h"
#include "engine/engine.h"

#define READ_MAX (1u << 20)

/* N_SKIPPED: /.skipped.json, fixed text (dsv_engine_skipped_json) */
enum node_kind { N_DIR, N_DAT, N_NPY, N_JSON, N_STATS, N_SKIPPED };

typedef struct node {
	char *name;
	size_t namelen;
	fuse_ino_t parent;
	/* children in the order they were added (0: none); last_child only
	 * while the tree is built */
	fuse_ino_t first_child, last_child, next_sibling;
	enum node_kind kind;
	int view;      /* index in the manifest, -1 for dirs and stats */
	uint32_t file; /* a V.dat's or V.npy's number in the engine (engine.h) */
	uint64_t size;
	/* bytes on disk it stands for (st_blocks; tree.c says which): a V.dat's
	 * are counted when first asked (dsv_fs_node_disk) */
	uint64_t disk;
} node;

struct dsv_fs {
	dsv_engine *engine; /* the views, and everything that makes their bytes */
	char *mountpoint;
	char *source; /* the manifest or source, absolute, as fsname shows it */
	dsv_fs_opts o;
	void (*serving)(void *arg); /* dsv_fs_on_serving */
	void *serving_arg;
	struct fuse_session *se;
	int mounted;
	node *nodes; /* nodes[ino - 1] */
	size_t nnodes, capnodes;
	/* (parent, name) -> inode number; see tree.c */
	fuse_ino_t *slots;
	size_t nslots, nindexed;
	fuse_ino_t *file_ino; /* the inode of each engine file (engine.h) */
	struct timespec mount_time;
	struct timespec dir_mtime; /* every directory's */
	unsigned max_read;         /* -o max_read=N, or 0 */
	unsigned max_background;   /* DSVIEW_MAX_BACKGROUND (fs.c), or 0: libfuse's */
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
/* Node n's size: a V.json's made at the first call (its text with it),
 * from any thread; 0 when out of memory. */
uint64_t dsv_fs_node_size(const dsv_fs *fs, const node *n);
void dsv_fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void dsv_fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void dsv_fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);

/* ops.c */
extern const struct fuse_lowlevel_ops dsv_fs_ops;

/* sink.c */
/* The engine's sink: its pages stored in, and dropped from, the kernel's
 * page cache for the file's inode (notify_store, notify_inval_inode). */
void dsv_fs_sink(dsv_fs *fs, dsv_engine_sink *sink);

/* stats.c */
/* The size of /.stats.json: of the handle's snapshot when fi is an open
 * one, else of the snapshot the next open takes (rendered now). */
uint64_t dsv_fs_stats_size(dsv_fs *fs, const struct fuse_file_info *fi);
/* A snapshot of /.stats.json, on fs->snaps; NULL when out of memory. */
stats_snap *dsv_fs_snap_new(dsv_fs *fs);
/* Takes snap off fs->snaps and frees it. */
void dsv_fs_snap_free(dsv_fs *fs, stats_snap *snap);

#endif
