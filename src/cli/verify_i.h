/*
 * What dsview verify's files share (verify.c runs the check,
 * verify_report.c prints what it found): the job, its sources and the
 * bad chunks collected.
 */
#ifndef DSV_CLI_VERIFY_I_H
#define DSV_CLI_VERIFY_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dsview/source.h"

typedef struct vsrc {
	dsv_source *s; /* NULL: refused, reason says why */
	int owned;     /* closed by us (not a manifest's) */
	char *label;   /* "path" or "path:/dataset" */
	char *reason;
	uint64_t first; /* global index of its first chunk */
} vsrc;

typedef struct vbad {
	size_t src;
	dsv_chunk_ref ref;
	int err;
	int table;      /* the chunk decodes, but its row of the block table is wrong */
	char file[512]; /* a grid band's chunk that failed (its file, for Zarr), or "" */
} vbad;

typedef struct vjob {
	vsrc *srcs;
	size_t nsrcs, cap;
	uint64_t total;     /* chunks */
	size_t dst_cap;     /* a worker's buffer: the largest decoded chunk */
	size_t scratch_cap; /* the largest stored chunk (each worker stages one) */

	atomic_uint_fast64_t next, done, bytes;
	atomic_int internal; /* a dsv_err that is our fault, not the file's */

	pthread_mutex_t lock; /* guards bads and finished */
	pthread_cond_t cond;
	vbad *bads;
	size_t nbad, bad_cap;
	int finished;
} vjob;

/* Errors that say something about dsview or the machine, not the file. */
int dsv_verify_internal(int err);
/* Prints, source by source in order, each one not checked and its bad
 * chunks sorted by place (so the output does not depend on the thread
 * count); sorts j->bads. @return the last bad chunk's error that
 * dsv_verify_internal calls ours, else 0. */
int dsv_verify_report(vjob *j);

#endif
