/*
 * Per-thread scratch buffers, one per slot, kept for the thread's life and
 * freed when it exits. FUSE workers and readahead threads reuse the same
 * warm pages for every request instead of faulting in fresh ones.
 *
 * dsv_tls_buf(slot, size) invalidates the pointer it returned before for
 * the same slot in the same thread when it has to grow (the old contents
 * are not kept). Thread safety: each thread sees only its own buffers.
 */
#ifndef DSV_COMMON_TLSBUF_H
#define DSV_COMMON_TLSBUF_H

#include <stddef.h>

enum {
	DSV_TLS_STORED,    /* a chunk's stored (compressed) bytes */
	DSV_TLS_RAW,       /* source elements pread for a transform */
	DSV_TLS_OUT,       /* a read's output bytes (the FUSE reply) */
	DSV_TLS_ROW,       /* source runs of view rows: a CHW row's pixels, windows' stretches */
	DSV_TLS_PERM,      /* a CHW row's pixels gathered into output order */
	DSV_TLS_GRID,      /* one decoded chunk of an N-d grid, before it is scattered */
	DSV_TLS_GRID_PART, /* one chunk-row of a grid band, read alone */
	DSV_TLS_BLOCKS,    /* a block table's row and the part-covered blocks of an LZ4 read */
	DSV_TLS_DEV_IN,    /* stored chunks staged for the device: the readahead's (backend/make.c),
			   a chunk read alone (gpu/gpu_host.c) */
	DSV_TLS_DEV_EDGE,  /* the device's output of chunks a readahead range covers in part */
	DSV_TLS_DISK,      /* the pages of a disk cache entry read (net/disk_cache.c) */
	DSV_TLS_SHARD_RUN, /* a run of a shard object's inner chunks, one GET (zarr/zarr.c) */
	DSV_TLS_RUN_IN,    /* a compressed run's stored frame (source/runs.c) */
	DSV_TLS_RUN_OUT,   /* a compressed run decoded whole (source/runs.c) */
	DSV_TLS_TIME_ROWS, /* time rows of a recording, read to gather (source/timerows.c) */
	DSV_TLS_NSLOTS
};

/* At least size bytes for slot, or NULL when out of memory. */
void *dsv_tls_buf(int slot, size_t size);

#endif
