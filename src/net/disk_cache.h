/*
 * Private to the net room: the disk cache of objects' stored bytes
 * (disk_cache.c), under the ranged reads of object.c.
 *
 * An object is cached in fixed, aligned blocks of DSV_DCACHE_BLOCK bytes
 * (the last one shorter), one file each, named by a hash of the object's
 * identity (its URL without query, its ETag) and the block's index; a GET
 * of any range maps onto the blocks it covers. An entry file is a header
 * (the identity, the block's offset and length, a CRC of each
 * DSV_DCACHE_PAGE of the data, a CRC of the header itself) and the data.
 * A read checks the header against what it asked for and the CRCs of the
 * pages it reads; anything else is dropped and fetched again.
 *
 * Thread safety: every function may be called from any thread, and
 * several processes may share one directory (entries are written under a
 * temporary name and renamed; an evicted entry stays readable through a
 * descriptor open on it; eviction holds an flock on DIR/.lock, never
 * across a GET).
 */
#ifndef DSV_NET_DISK_CACHE_H
#define DSV_NET_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dsview/dsview.h"
#include "net/net.h"

#define DSV_DCACHE_BLOCK (1u << 20)
#define DSV_DCACHE_PAGE (64u << 10)
#define DSV_DCACHE_PAGES (DSV_DCACHE_BLOCK / DSV_DCACHE_PAGE)
#define DSV_DCACHE_HEADER 512u /* an entry's header; its data follows */
#define DSV_DCACHE_ETAG 160u   /* at most this many bytes of ETag, NUL included */
#define DSV_DCACHE_NAME 64u    /* an entry's file name, NUL included */

/* One version of one object, as its entries record it. */
typedef struct dsv_dcache_id {
	uint8_t url_hash[32];       /* SHA-256 of the URL without its query */
	char etag[DSV_DCACHE_ETAG]; /* NUL-padded */
	uint64_t size;              /* the object's */
	char stem[33]; /* hex of 16 bytes of SHA-256(url_hash, etag): the entries' names */
} dsv_dcache_id;

/* Fills id for the object at url (its query, if any, is not hashed)
 * with etag and size. @return 0 or DSV_ERR_INTERNAL (libcrypto failed). */
int dsv_dcache_id_make(dsv_dcache_id *id, const char *url, const char *etag, uint64_t size);

/* Whether a cache is set (dsv_net_disk_cache). */
int dsv_dcache_on(void);

/* Fetches exactly n bytes at off of obj into buf (object.c's GET).
 * @return 0 or a dsv_err. */
typedef int (*dsv_dcache_fetch_fn)(const void *obj, void *buf, size_t n, uint64_t off);

/* Reads [off, off + n) of the object id names: the blocks the cache holds
 * from their entries, the others by fetch (runs of missing blocks one GET
 * each, whole blocks), written as entries for the next reader. name is
 * what the log calls the object. @return 0, or what fetch returned
 * (nothing served then). */
int dsv_dcache_pread(const dsv_dcache_id *id, const char *name, void *buf, size_t n, uint64_t off,
		     dsv_dcache_fetch_fn fetch, const void *obj);

/* The cache's counters into st's disk_ fields. */
void dsv_dcache_get_stats(dsv_net_stats *st);

/* The entry format, for the tests. */
/* The file name of block b of id into name (DSV_DCACHE_NAME bytes). */
void dsv_dcache_entry_name(char *name, const dsv_dcache_id *id, uint64_t b);
/* The header of the entry holding data (len bytes at off of id). */
void dsv_dcache_entry_header(uint8_t hdr[DSV_DCACHE_HEADER], const dsv_dcache_id *id, uint64_t off,
			     uint32_t len, const void *data);
/* Checks hdr against id, off and len. @return 0 or DSV_ERR_CORRUPT, *why
 * saying what differs. */
int dsv_dcache_entry_check(const uint8_t hdr[DSV_DCACHE_HEADER], const dsv_dcache_id *id,
			   uint64_t off, uint32_t len, const char **why);
/* Checks pages [p0, p0 + np) of an entry's data against hdr's CRCs;
 * pages holds them, the last one as long as the entry's len leaves it.
 * @return 0 or DSV_ERR_CHECKSUM. */
int dsv_dcache_pages_check(const uint8_t hdr[DSV_DCACHE_HEADER], uint32_t len, unsigned p0,
			   unsigned np, const void *pages);

/* One entry as eviction sees it. */
typedef struct dsv_dcache_ent {
	char name[DSV_DCACHE_NAME];
	uint64_t bytes;
	struct timespec mtime; /* the last write or hit */
} dsv_dcache_ent;
/* Sorts e[0..n) least recently used first and returns how many of them
 * to remove so that the rest, used bytes in all, fit in low bytes. */
size_t dsv_dcache_victims(dsv_dcache_ent *e, size_t n, uint64_t used, uint64_t low);

#endif
