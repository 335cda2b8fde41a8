/*
 * The engine: everything a read of a view needs that is not a front end.
 * It holds a manifest's views, the chunk cache and its fill, the backend
 * (CPU or GPU), the readahead streams, the sampler hints, the page
 * budget's accounting and the counters; a front end (src/fs, the FUSE
 * one) turns requests into engine calls and the engine's pages into what
 * it serves. The walk of a read is in engine.c's DESIGN note.
 *
 * Files. The engine serves two files a view: view i's output bytes
 * (file DSV_ENGINE_FILE(i, 0), a V.dat) and the same behind its .npy
 * header (DSV_ENGINE_FILE(i, 1), a V.npy). Readahead, hints and the page
 * budget deal in these file numbers; the front end maps them to its own
 * (inodes).
 *
 * Pages that leave without a request (readahead, hinted rows) go to the
 * front end's sink, which stores them where the reader finds them (FUSE:
 * the kernel's page cache) and drops them again when asked. Without a
 * sink the engine makes only what is read.
 *
 * Use: dsv_engine_open (or dsv_engine_new over a manifest already
 * loaded; no threads: safe to fork after either), then in the
 * process that serves dsv_engine_start (backend, caches, threads),
 * reads, dsv_engine_stop, dsv_engine_free.
 *
 * Thread safety: after start, every call but stop and free may be made
 * from any number of threads.
 */
#ifndef DSV_ENGINE_ENGINE_H
#define DSV_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "dsview/view.h"

typedef struct dsv_engine dsv_engine;

#define DSV_ENGINE_FILE(view, npy) ((uint32_t)(view)*2u + ((npy) ? 1u : 0u))

typedef struct dsv_engine_opts {
	uint64_t cache_size; /* the chunk cache's budget, bytes (the tiles' comes out of it) */
	const char *gpu;     /* auto | off | N, as --gpu */
	uint64_t gpu_cache;  /* bytes of the device-memory tier, 0 for none */
	/* the serving process's memory limit (its control group's), 0 for
	 * none: the page budget starts at half of it, and a sequential pass
	 * over a file larger than half of it drops the pages behind it */
	uint64_t mem_limit;
} dsv_engine_opts;

/* Where the pages the engine makes ahead of a reader go. */
typedef struct dsv_engine_sink {
	/* Stores bytes [off, off + len) of file, made at buf, where the
	 * reader finds them. @return 0 or a negative dsv_err (the file is
	 * gone: not retried). */
	int (*store)(void *ctx, uint32_t file, uint64_t off, const void *buf, size_t len);
	/* Drops bytes [off, off + len) of file from there. @return 0 when
	 * they were dropped. */
	int (*drop)(void *ctx, uint32_t file, uint64_t off, uint64_t len);
	void *ctx;
	size_t max_store; /* the most bytes one store takes */
	/* non-zero: the bytes of every read also stay where the sink stores
	 * (a FUSE reply lands in the page cache), so the page budget counts
	 * them too */
	int reads_kept;
} dsv_engine_sink;

/* Takes ownership of m on success. @return 0, DSV_ERR_NOMEM. */
int dsv_engine_new(dsv_manifest *m, const dsv_engine_opts *o, dsv_engine **out, dsv_errbuf *eb);
/* An engine over what `dsview mount source` serves: a manifest (.ini), or
 * a file, directory or Zarr array or group made into views of dtype
 * (flags: DSV_FROM_FILE_STRICT refuses it all when one part cannot be
 * served). Not started. @return 0, or a dsv_err with eb set. */
int dsv_engine_open(const char *source, dsv_dtype dtype, unsigned flags, const dsv_engine_opts *o,
		    dsv_engine **out, dsv_errbuf *eb);
/* Creates the backend and the caches and starts the threads (readahead,
 * hints, the page budget) that sink (NULL: none) is needed for.
 * @return 0 or a dsv_err (eb says why). */
int dsv_engine_start(dsv_engine *e, const dsv_engine_sink *sink, dsv_errbuf *eb);
/* Stops the threads that store pages (accepts an engine never started). */
void dsv_engine_stop(dsv_engine *e);
/* Stops, frees everything, the manifest too; accepts NULL. */
void dsv_engine_free(dsv_engine *e);
/* Frees an engine never started but not its manifest, which is returned
 * (the caller's again, as before dsv_engine_new); accepts NULL. */
dsv_manifest *dsv_engine_forget(dsv_engine *e);

/* ---- what is served ---- */

/* The transform kernel the CPU runs (xform's: "avx512bf16" ... "scalar"). */
const char *dsv_engine_kernel(void);

size_t dsv_engine_nviews(const dsv_engine *e);
/* The manifest or source as given, and its modification time. */
const char *dsv_engine_source(const dsv_engine *e);
struct timespec dsv_engine_mtime(const dsv_engine *e);
/* View i's name ("a/b" for a zero-config HDF5 group's dataset), its
 * V.json text (made at the first call, its length in *len when len is
 * not NULL; NULL when out of memory), and its modification time (the
 * newest of its sources and the manifest). */
const char *dsv_engine_view_name(const dsv_engine *e, size_t i);
const char *dsv_engine_view_json(const dsv_engine *e, size_t i, size_t *len);
struct timespec dsv_engine_view_mtime(const dsv_engine *e, size_t i);
/* View i described (view.h's dsv_view_info: shape, dtype, row bytes,
 * sources, the transform), without its V.json (json NULL:
 * dsv_engine_view_json). */
void dsv_engine_view_info(const dsv_engine *e, size_t i, dsv_view_info *out);
/* Where chunks are decoded: "cpu" or "cuda" (after start). */
const char *dsv_engine_backend(const dsv_engine *e);
/* The last chunk failure this thread met in a read, as the log says it
 * (view, source, chunk, rows, file offset, reason), and forgets it; ""
 * when none since the last call (another thread decoding the chunk
 * failed: its log line has it). */
const char *dsv_engine_take_error(void);
/* The text of /.skipped.json (a zero-config mount's datasets not
 * served), or NULL. */
const char *dsv_engine_skipped_json(const dsv_engine *e);
/* A file's size in bytes. */
uint64_t dsv_engine_file_size(const dsv_engine *e, uint32_t file);
/* The bytes on disk file's view stands for: its sources' stored bytes
 * (a Zarr source counts its chunk files, so this may take a while). */
uint64_t dsv_engine_view_disk(const dsv_engine *e, size_t view);

/* ---- reads ---- */

/* Bytes [off, off + len) of file into dst, for a reader's request (the
 * engine's own readahead is the read that streams); counted, timed, told
 * to the readahead. The range must lie inside the file.
 * @return 0 or a negative dsv_err (DSV_ERR_NOMEM, a chunk's failure,
 * logged with the source, chunk and reason). */
int dsv_engine_read(dsv_engine *e, uint32_t file, uint64_t off, size_t len, void *dst);
/* Queues view rows rows[0 .. n) of file to be made and stored ahead of
 * the reader (the sink; without one they are checked and dropped).
 * @return 0, DSV_ERR_INVALID (a row outside the view, a negative one
 * passed through as a huge one included: nothing queued). */
int dsv_engine_hint(dsv_engine *e, uint32_t file, const uint64_t *rows, size_t n);
/* A process opened file (0: a file the engine does not make, such as a
 * V.json): counted, and a reader in a control group with a memory limit
 * lowers the page budget to half of it (each process looked at once in a
 * row). pid <= 0: unknown. */
void dsv_engine_opened(dsv_engine *e, int data, int pid);

/* ---- counters ---- */

/* A request of the front end's, and how long writing its reply took
 * (t0 to t1, CLOCK_MONOTONIC). */
void dsv_engine_count_request(dsv_engine *e);
void dsv_engine_time_reply(dsv_engine *e, const struct timespec *t0, const struct timespec *t1);
/* Adds the counters to obj, one member each, in a fixed order (stats.c's
 * table: docs/performance.md says what each counts). @return 0,
 * DSV_ERR_NOMEM (obj then holds some of them). */
int dsv_engine_stats_add(dsv_engine *e, json_t *obj);

#endif
