/*
 * Private to src/pack: the state one dsv_pack call shares between pack.c
 * (options, the order of the steps), output.c (the output file) and
 * chunks.c (reading rows, compressing chunks on worker threads, handing
 * them to the writer in order).
 */
#ifndef DSV_PACK_I_H
#define DSV_PACK_I_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "dsview/pack.h"
#include "dsview/source.h"
#include "formats/h5/h5.h"
#include "source/source.h"

#define META_RESERVE (256u << 10) /* HDF5 superblock, object headers, heaps */

typedef struct slot {
	void *buf;
	size_t size;
	int ready;
} slot;

typedef struct packer {
	const dsv_pack_opts *o;
	const dsv_source *src;
	const dsv_source_info *in;
	uint64_t row_bytes, chunk_rows, chunk_bytes, nchunks;
	uint64_t block_bytes; /* LZ4 raw bytes per block (0: codec none) */
	size_t slot_cap;

	pthread_mutex_t mu;
	pthread_cond_t cv_ready; /* a slot became ready, or failure */
	pthread_cond_t cv_space; /* a slot was written, or failure */
	slot *slots;
	unsigned nslots;
	uint64_t next, written;
	int err;            /* first failure: workers stop taking chunks */
	uint64_t err_chunk; /* the chunk p->eb names: the lowest that failed */
	dsv_errbuf eb;
} packer;

static inline int stopped(const dsv_pack_opts *o)
{
	return o->stop && *o->stop;
}

/* Writes chunk w (its first row row0, size bytes at buf) to the output;
 * called on the writer thread, in chunk order. @return 0 or a dsv_err
 * with eb set. */
typedef int (*dsv_pack_write_fn)(const packer *p, void *arg, uint64_t w, uint64_t row0,
				 const void *buf, size_t size, dsv_errbuf *eb);

/* Reads chunk i's rows into raw, zero-padded to a full chunk (HDF5 stores
 * edge chunks whole). @return 0 or a dsv_err (bad: the source chunk). */
int dsv_pack_read_chunk(const packer *p, dsv_range *r, uint64_t i, char *raw, uint64_t *bad);

/* --codec auto (auto.c): samples chunks, sets o->codec and o->level to
 * the choice and writes why in why. @return 0 or a dsv_err (eb set). */
int dsv_pack_choose(packer *p, dsv_pack_opts *o, char *why, size_t cap, dsv_errbuf *eb);

/* One --codec auto candidate's figures on the sample (auto.c). */
typedef struct dsv_pack_auto_fig {
	double ratio, out_s, in_s; /* ratio; float32 output and input bytes/s, one core */
	int done;                  /* measured in full (not dropped) */
} dsv_pack_auto_fig;

/* Whether storage delivering storage_bytes_s (0: fast) is the bottleneck
 * for elements of elem bytes: slower than the raw bytes/s a codec at the
 * decode bar makes. */
int dsv_pack_auto_slow(size_t elem, double storage_bytes_s);

/* --codec auto's rule (auto.c) over n candidates' figures, cheapest to
 * decode first, m[0] none (always passes): the index it picks. *best:
 * the best ratio measured. Pure: no timing, no state. */
int dsv_pack_auto_rule(const dsv_pack_auto_fig *m, size_t n, size_t elem, double storage_bytes_s,
		       int *best);

/* Bytes the store will take: exact without compression, else estimated
 * from a sample of chunks. @return 0 or a dsv_err (eb not set). */
int dsv_pack_estimate_size(packer *p, uint64_t *need);

/* Compresses every chunk on worker threads (p->o->threads, at most one per
 * chunk) and hands each to write in order on the calling thread, with
 * progress. p's geometry (row_bytes ... slot_cap) must be set; the slots,
 * lock and conditions are set up and torn down here. res->threads and
 * res->stored_bytes are filled. @return 0 or a dsv_err with eb set. */
int dsv_pack_run_workers(packer *p, dsv_pack_write_fn write, void *arg, dsv_pack_result *res,
			 dsv_errbuf *eb);

/* An LZ4 store's block table while it is written (table.c). */
typedef struct dsv_pack_table {
	hid_t dset;
	uint64_t nblocks; /* per chunk */
	uint64_t *at;     /* dsv_lz4_index of the chunk at hand */
	uint32_t *row;    /* its row of the table */
} dsv_pack_table;

/* Creates the table of dataset name in file, for nchunks chunks of
 * nblocks blocks; call under the HDF5 lock. t is closable whatever this
 * returns. @return 0 or a dsv_err with eb set. */
int dsv_pack_table_create(dsv_pack_table *t, hid_t file, const char *name, uint64_t nchunks,
			  uint64_t nblocks, dsv_errbuf *eb);
/* Writes row w from chunk w's frame (size bytes, the Fletcher32 trailer
 * not included); takes the HDF5 lock. @return 0 or a dsv_err, eb set. */
int dsv_pack_table_write(dsv_pack_table *t, uint64_t w, const void *frame, size_t size,
			 dsv_errbuf *eb);
void dsv_pack_table_close(dsv_pack_table *t);

/* What dsv_pack_out_write writes to: the dataset, and its block table
 * when its chunks are several LZ4 blocks (table.dset >= 0). */
typedef struct out_sets {
	hid_t dset;
	dsv_pack_table table;
} out_sets;

/* The output being made (output.c): the temporary (tmp, "" when there is
 * none to remove), its descriptor and HDF5 handles, its directory and
 * the store's JSON. Start with fd and file -1, sets.dset and
 * sets.table.dset -1, the rest zero; dsv_pack_out_close undoes whatever
 * is left of it. */
typedef struct dsv_pack_out {
	char tmp[PATH_MAX + 64];
	char *dir, *json;
	int fd;
	hid_t file;
	out_sets sets;
} dsv_pack_out;

/* The output's directory (f->dir): writable, no output there unless
 * --force, no dead packs' temporaries, room for the store (checked
 * against a sample's estimate when the worst case would not fit; sets
 * res->estimated_bytes). @return 0 or a dsv_err with eb set. */
int dsv_pack_out_dir(packer *p, dsv_pack_out *f, dsv_pack_result *res, dsv_errbuf *eb);
/* The temporary with its empty dataset name (and block table).
 * @return 0 or a dsv_err with eb set. */
int dsv_pack_out_create(const packer *p, dsv_pack_out *f, const char *name, dsv_errbuf *eb);
/* The dsv_pack_write_fn for arg = &f->sets. */
int dsv_pack_out_write(const packer *p, void *arg, uint64_t w, uint64_t row0, const void *buf,
		       size_t size, dsv_errbuf *eb);
/* The filled store closed, made durable and put in place (sets
 * res->sync_seconds and file_bytes); DSV_ERR_INTERRUPTED when stopped
 * before the fsync. @return 0 or a dsv_err with eb set. */
int dsv_pack_out_finish(const dsv_pack_opts *o, dsv_pack_out *f, dsv_pack_result *res,
			dsv_errbuf *eb);
/* Whatever is left of the output: handles closed, the temporary removed. */
void dsv_pack_out_close(dsv_pack_out *f);

#endif
