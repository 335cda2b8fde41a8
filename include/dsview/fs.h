/*
 * The FUSE front end: the only module that knows FUSE exists. It mounts a
 * manifest's views as a read-only tree and serves reads through the chunk
 * cache and the backend.
 *
 * Use: dsv_fs_mount (no threads started: safe to fork after it), then in the
 * process that serves, dsv_fs_serve (creates the backend and cache, runs the
 * multi-threaded loop until unmount or SIGTERM/SIGINT/SIGHUP, unmounts), then
 * dsv_fs_destroy.
 */
#ifndef DSVIEW_FS_H
#define DSVIEW_FS_H

#include <stdint.h>
#include <sys/ioctl.h>

#include "dsview/view.h"

typedef struct dsv_fs dsv_fs;

/* Sampler hints (docs/performance.md, "Sampler hints"): ioctl(fd, DSV_IOC_PREFETCH,
 * &r) on an open V.dat or V.npy queues view rows r.rows[0 .. r.n) to be
 * made and stored in that file's page cache ahead of the reads that will
 * fault them. Fails with EINVAL, queueing nothing, for n above
 * DSV_PREFETCH_MAX, flags not 0 or a row outside [0, rows); ENOTTY on any
 * other file. Python: fcntl.ioctl(fd, DSV_IOC_PREFETCH, bytes) with the
 * struct packed little-endian (python/dsview/_hints.py). */
#define DSV_PREFETCH_MAX 2046
typedef struct dsv_prefetch_rows {
	uint32_t n;
	uint32_t flags; /* 0 */
	int64_t rows[DSV_PREFETCH_MAX];
} dsv_prefetch_rows;
#define DSV_IOC_PREFETCH _IOW('d', 1, dsv_prefetch_rows)

/* The kernel's readahead window of a mount unless --readahead says
 * otherwise: a memmap reader's page fault on a shuffled row reads this much
 * around it (mostly rows nobody asked for), while sequential passes are
 * read ahead by dsview itself (prefetch.h) and need no large window. */
#define DSV_FS_DEFAULT_READAHEAD_KIB 128
#define DSV_FS_DEFAULT_READAHEAD (DSV_FS_DEFAULT_READAHEAD_KIB * 1024u)

typedef struct dsv_fs_opts {
	uint64_t cache_size;
	int threads;           /* FUSE worker threads */
	uint64_t readahead;    /* the kernel's readahead window for the mount, bytes */
	const char *gpu;       /* auto | off | N */
	uint64_t gpu_cache;    /* bytes of the device-memory tier, 0 for none */
	const char *fuse_opts; /* -o, comma-separated, may be NULL */
	/* the daemon's memory limit (its control group's), 0 for none: a
	 * sequential pass over a file larger than half of it drops the pages
	 * behind it (prefetch.h) */
	uint64_t mem_limit;
	int debug;
} dsv_fs_opts;

/* Takes ownership of m on success. */
int dsv_fs_mount(dsv_manifest *m, const char *mountpoint, const dsv_fs_opts *o, dsv_fs **out,
		 dsv_errbuf *eb);
/* fn(arg) is called once, from dsv_fs_serve, when everything the mount
 * needs is made (backend, cache, signal handlers) and the loop is about to
 * serve: a failure before that is a start-up failure (the mount command's
 * parent waits for this over a pipe, to print it). */
void dsv_fs_on_serving(dsv_fs *fs, void (*fn)(void *arg), void *arg);
/* @return 0 after a clean unmount, DSV_ERR_* otherwise (before o.serving
 * was called: the start-up failed, eb says why). */
int dsv_fs_serve(dsv_fs *fs, dsv_errbuf *eb);
/* In a process that will not serve (the parent after fork): close its copy
 * of the /dev/fuse descriptor, so the connection dies with the server. */
void dsv_fs_close_fd(dsv_fs *fs);
/* Unmounts if still mounted, frees everything (also the manifest). */
void dsv_fs_destroy(dsv_fs *fs);

#endif
