/*
 * The index cache: what a mount learnt about its sources, kept in a
 * checked file so that the next mount of the same collection skips each
 * unchanged source's header. One entry a source, keyed by its file and
 * dataset and stamped with the file's size, modification time (ns),
 * inode and device: an entry whose stamp the file no longer has is not
 * used, and the source is opened (and its entry replaced).
 *
 * The file, little-endian:
 *   "DSVIDX\r\n", u32 version, u32 0, u64 entries, u32 n + n bytes (what
 *   the index is of: the mount's source), then per entry
 *   u32 n + key, u64 size, u64 mtime_ns, u64 ino, u64 dev,
 *   u8 n + the format's name, u32 n + what the format's save wrote;
 *   then the CRC-32C of every byte before it.
 * A file that fails any check (magic, version, CRC, a length past the
 * end, an entry left over) is not used at all. It is a cache: written
 * without fsync, as a crash that leaves it short or empty leaves a file
 * that fails those checks, and is made again.
 *
 * Thread safety: dsv_index_find and dsv_index_add may be called from any
 * number of threads (the parallel opens of a glob); the rest from one.
 */
#ifndef DSV_SOURCE_INDEX_H
#define DSV_SOURCE_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "dsview/source.h"

#define DSV_INDEX_VERSION 1u
/* At most this many bytes in one key, format name and saved state. */
#define DSV_INDEX_KEY_MAX 16384u
#define DSV_INDEX_FMT_MAX 32u
/* A saved state: 64 MiB holds the chunk map of 4 Mi chunks (16 bytes
 * each), what the source holds in memory once opened. */
#define DSV_INDEX_BLOB_MAX (64u << 20)

/* Which file an entry is of: a source is served from its entry only while
 * its file still has these. */
typedef struct dsv_index_stamp {
	uint64_t size, mtime_ns, ino, dev;
} dsv_index_stamp;

/* The stamp of st. */
void dsv_index_stamp_of(const struct stat *st, dsv_index_stamp *out);

/* Bytes a format's save appends to (grown as needed) and its load reads
 * back, each read bounds-checked: a read past the end sets bad and gives
 * zeros. */
typedef struct dsv_index_buf {
	unsigned char *p;
	size_t len, cap;
	int bad; /* a put that could not grow (out of memory) */
} dsv_index_buf;
typedef struct dsv_index_cur {
	const unsigned char *p, *end;
	int bad; /* a get past the end */
} dsv_index_cur;

void dsv_index_put_u64(dsv_index_buf *b, uint64_t v);
void dsv_index_put(dsv_index_buf *b, const void *data, size_t n);
uint64_t dsv_index_get_u64(dsv_index_cur *c);
/* n bytes at the cursor (NULL and bad set when fewer are left). */
const unsigned char *dsv_index_get(dsv_index_cur *c, size_t n);

typedef struct dsv_index dsv_index;

/* An empty index of what (the mount's source, which a file loaded must
 * name too). @return NULL when out of memory. */
dsv_index *dsv_index_new(const char *what);
void dsv_index_free(dsv_index *ix);
/* Takes buf[0 .. len) (freed with ix, or at once on failure) as ix's
 * entries, checked as the note above says. @return 0, or
 * DSV_ERR_CORRUPT, DSV_ERR_UNSUPPORTED (another version) or
 * DSV_ERR_NOMEM, with *why (static text) saying which check failed; ix
 * is then empty. */
int dsv_index_parse(dsv_index *ix, unsigned char *buf, size_t len, const char **why);
/* Loads file into ix. @return as dsv_index_parse, or DSV_ERR_NOTFOUND
 * (no such file: nothing said), DSV_ERR_IO (*why strerror's). */
int dsv_index_load(dsv_index *ix, const char *file, const char **why);

/* The saved state of key (n bytes) when ix holds it for a file stamped
 * st, kept by format fmt: *blob (valid until ix is freed), *len, and the
 * entry is kept at the next write. @return 1 found (the caller counts
 * it by dsv_index_count_load once it tried it), 0 not (none, or another
 * stamp or format: a stale entry, counted). */
int dsv_index_find(dsv_index *ix, const void *key, size_t n, const dsv_index_stamp *st,
		   const char *fmt, const void **blob, size_t *len);
/* 1 when dsv_index_find would find key's entry, which it leaves as it
 * is (not counted, not marked kept); else 0. */
int dsv_index_has(dsv_index *ix, const void *key, size_t n, const dsv_index_stamp *st,
		  const char *fmt);
/* Adds (or replaces) key's entry, the state copied. @return 0,
 * DSV_ERR_INVALID (a length over its maximum) or DSV_ERR_NOMEM. */
int dsv_index_add(dsv_index *ix, const void *key, size_t n, const dsv_index_stamp *st,
		  const char *fmt, const void *blob, size_t len);
/* 1 when a write would change the file ix was loaded from: an entry
 * added or replaced, or one loaded and not found since. */
int dsv_index_changed(const dsv_index *ix);
/* The file's bytes for what ix holds now (the entries found or added
 * since it was loaded: a source no longer mounted is dropped), newly
 * allocated in *out. @return 0 or DSV_ERR_NOMEM. */
int dsv_index_serialize(const dsv_index *ix, unsigned char **out, size_t *len);
/* Writes ix to file: a temporary file beside it, renamed over it.
 * @return 0, or DSV_ERR_IO / DSV_ERR_NOMEM with *why set (strerror's). */
int dsv_index_write(const dsv_index *ix, const char *file, const char **why);

/* What the index cache did in this process: entries served (a source
 * made from its entry), entries passed over (stale, or found and then
 * refused by its format's load), and files rebuilt after failing their
 * checks. */
typedef struct dsv_index_stats {
	uint64_t hits, stale, rejected;
} dsv_index_stats;
void dsv_index_counts(dsv_index_stats *out);
/* Counts an entry dsv_index_find gave: served when loaded, else passed
 * over. */
void dsv_index_count_load(int loaded);
/* Counts an index file ignored for failing its checks. */
void dsv_index_count_rejected(void);

/* The stamp of the file s opened (what its descriptor cache checks a
 * reopen against). @return 0, or -1 when s is not a local file's. */
int dsv_source_stamp(const dsv_source *s, dsv_index_stamp *out);

/* A flat source (elements one run from data_offset: .npy, raw) saved and
 * loaded: its kind, dtype, shape, data_offset and stored bytes. The load
 * makes a source of file (and dataset, may be NULL) whose descriptor the cache opens at its first
 * read (checked against st then), with no read now; every value is
 * checked (the dtype, the shape's size, the data inside the file).
 * @return 0, DSV_ERR_NOMEM / DSV_ERR_CORRUPT with eb set. */
int dsv_index_save_flat(const dsv_source *s, dsv_index_buf *out);
int dsv_index_load_flat(const char *file, const char *dataset, const void *blob, size_t len,
			const dsv_index_stamp *st, dsv_source_kind kind, dsv_source **out,
			dsv_errbuf *eb);

/* A source of file (and dataset, may be NULL) stamped st, not opened:
 * its descriptor cache opens it at the first read, checked against st
 * then. @return NULL when out of memory. */
dsv_source *dsv_index_unopened(const char *file, const char *dataset, const dsv_index_stamp *st);

/* The kind's part of a load: the entry's values into the unopened s,
 * each checked. @return 0, DSV_ERR_NOMEM, or another code (damaged). */
typedef int (*dsv_index_fill_fn)(dsv_source *s, const void *blob, size_t len, dsv_source_kind kind);
/* The unopened source of file filled from its entry by fill into *out.
 * @return 0, or the error with eb set: out of memory, or the entry
 * damaged. */
int dsv_index_revive(const char *file, const char *dataset, const void *blob, size_t len,
		     const dsv_index_stamp *st, dsv_source_kind kind, dsv_index_fill_fn fill,
		     dsv_source **out, dsv_errbuf *eb);

/* A source chunked in whole rows through a chunk map (an HDF5 dataset on
 * its fast path) saved and loaded: its kind, dtype, shape, chunk rows,
 * codec, filter bits, shuffle, bitshuffle's parameters, LZ4 block and
 * block table, and each chunk's offset, stored size and filter mask
 * (16 bytes a chunk). Not kept: a source with a chunk never written, or
 * that keeps the format's state (s->fmt), a grid, a fallback. The load
 * makes it unopened (as dsv_index_load_flat) and checks every value
 * as the open did: each chunk's size against what its encoding can
 * take, every offset and the table inside the file's size.
 * @return as the flat pair. */
int dsv_index_save_chunked(const dsv_source *s, dsv_index_buf *out);
int dsv_index_load_chunked(const char *file, const char *dataset, const void *blob, size_t len,
			   const dsv_index_stamp *st, dsv_source_kind kind, dsv_source **out,
			   dsv_errbuf *eb);

#endif
