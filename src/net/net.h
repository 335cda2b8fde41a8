/*
 * The net room: objects in S3-compatible storage (s3://bucket/key) and
 * files on https:// servers, read by ranged GETs through libcurl, so that
 * a source can read an object as it preads a file.
 *
 * An object is opened once (a HEAD: its size and ETag); every GET after
 * carries If-Match with that ETag, so an object replaced since is never
 * read half old, half new: its reads fail (DSV_ERR_IO) and one log line
 * names it. Failures a retry may cure (connection errors, timeouts, 5xx,
 * 429 and 503 SlowDown) are retried a bounded number of times with
 * exponential backoff and jitter, then fail that read alone. With a disk
 * cache set (dsv_net_disk_cache), the ranged reads of an object with an
 * ETag are served from local files where they can be (disk_cache.h).
 *
 * Endpoint, region and credentials come as AWS tools take them (net.c's
 * opening comment; docs/s3.md). Secrets never appear in a message: an
 * object is named by its URL without the query (a presigned URL's
 * signature), and keys are handed to libcurl alone.
 *
 * Thread safety: dsv_net_open and dsv_net_close as a source's open and
 * close; dsv_net_pread from any number of threads at once (each thread
 * has its own curl handle; connections and DNS are shared through one
 * curl share). The stats are atomic counters.
 */
#ifndef DSV_NET_NET_H
#define DSV_NET_NET_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dsview/dsview.h"

typedef struct dsv_net_obj dsv_net_obj;

/* Opens the object at url (s3://bucket/key, https:// or http://): one
 * HEAD, retried as a GET is. @return 0; DSV_ERR_NOTFOUND (404),
 * DSV_ERR_IO (unreachable, refused: 401/403, any other status) or
 * DSV_ERR_INVALID (a bad URL), eb naming the URL and the reason. */
int dsv_net_open(const char *url, dsv_net_obj **out, dsv_errbuf *eb);
void dsv_net_close(dsv_net_obj *o); /* accepts NULL */

/* The object's size and Last-Modified (0 when the server sent none), as
 * the HEAD at open saw them. */
uint64_t dsv_net_size(const dsv_net_obj *o);
struct timespec dsv_net_mtime(const dsv_net_obj *o);
/* True when a and b are one version of one object (URL and ETag; an
 * object without an ETag is never the same as another open of it). */
int dsv_net_same(const dsv_net_obj *a, const dsv_net_obj *b);
/* The URL as messages name it: without its query. Lives as long as o. */
const char *dsv_net_name(const dsv_net_obj *o);

/* Reads exactly n bytes at off by one ranged GET (retried as the opening
 * comment says). @return 0; DSV_ERR_TRUNCATED when [off, off + n) passes
 * the object's end; DSV_ERR_IO when the object changed since open or the
 * retries ran out. */
int dsv_net_pread(const dsv_net_obj *o, void *buf, size_t n, uint64_t off);

/* The objects under a prefix, each fetched whole by its key (a Zarr
 * array's chunks: one object each, their keys computed, none opened
 * ahead). No ETag is known for them: each GET reads the object as it is
 * then. Thread safety as an object's. */
typedef struct dsv_net_dir dsv_net_dir;
/* Reads the configuration for the prefix url (s3://bucket/prefix,
 * https://host/path); no request. @return 0, DSV_ERR_INVALID (eb names
 * url) or DSV_ERR_NOMEM. */
int dsv_net_dir_open(const char *url, dsv_net_dir **out, dsv_errbuf *eb);
void dsv_net_dir_close(dsv_net_dir *d); /* accepts NULL */
/* GETs the object url/key whole into buf (at most cap bytes; *got its
 * size), retried as a ranged GET is. @return 0; DSV_ERR_NOTFOUND (404:
 * no such object); DSV_ERR_OVERFLOW (larger than cap); DSV_ERR_IO, eb
 * (may be NULL) naming the object and the reason. Logs nothing: the
 * caller says what the object was for. */
int dsv_net_dir_get(const dsv_net_dir *d, const char *key, void *buf, size_t cap, size_t *got,
		    dsv_errbuf *eb);

/* One object's version, as its ETag says it (quotes included; "" none). */
#define DSV_NET_ETAG_MAX 160
/* Sets an object-storage setting for every object this process opens
 * (settings.c): key "endpoint", "region", "profile" or "addressing"
 * ("path", "virtual" or "auto"), from DSV_NET_FROM_MANIFEST or
 * DSV_NET_FROM_OPTION (which wins). Call before any object is opened.
 * @return 0, DSV_ERR_INVALID (an unknown key or a bad value; eb says
 * which) or DSV_ERR_NOMEM. */
enum { DSV_NET_FROM_MANIFEST = 1, DSV_NET_FROM_OPTION = 2 };
int dsv_net_setting(const char *key, const char *value, int from, dsv_errbuf *eb);
/* Forgets them all (tests). */
void dsv_net_settings_clear(void);

/* GETs n bytes of the object url/key by one ranged GET into buf: at off,
 * or with from_end its last n bytes (off unused); *size gets the
 * object's size (Content-Range) and etag its ETag. When etag holds one
 * already, the GET carries If-Match with it: an object replaced since
 * fails (DSV_ERR_IO, "changed"). Retried as dsv_net_pread. @return 0;
 * DSV_ERR_NOTFOUND (404); DSV_ERR_TRUNCATED (the object is shorter than
 * the range); DSV_ERR_IO, eb (may be NULL) naming the object and the
 * reason. */
int dsv_net_dir_range(const dsv_net_dir *d, const char *key, void *buf, size_t n, uint64_t off,
		      int from_end, uint64_t *size, char etag[DSV_NET_ETAG_MAX], dsv_errbuf *eb);

/* The names one level under d's prefix (s3://bucket/x.zarr: "a" for the
 * keys x.zarr/a/...), by ListObjectsV2 with '/' as the delimiter, page
 * after page; *names (n of them) freed by the caller, each and all.
 * @return 0; DSV_ERR_UNSUPPORTED (not s3://: an https:// server lists
 * nothing); DSV_ERR_IO (the store refused or failed); DSV_ERR_FORMAT (a
 * reply that is not a listing); eb naming the prefix and why. */
int dsv_net_dir_list(const dsv_net_dir *d, char ***names, size_t *n, dsv_errbuf *eb);
/* As dsv_net_dir_list, the objects one level under d's prefix (the keys
 * x.zarr/a and x.zarr/b: "a" and "b"; not x.zarr/c/d). */
int dsv_net_dir_list_objects(const dsv_net_dir *d, char ***names, size_t *n, dsv_errbuf *eb);

/* The GET as one URL (s3:// is made an https:// or the endpoint's URL,
 * path-style) into *out (the caller frees it). For tests and `info`.
 * @return 0, DSV_ERR_INVALID or DSV_ERR_NOMEM. */
int dsv_net_http_url(const char *url, char **out);

/* Call in a child just forked from a process that used this room, before
 * the child's first request: the connections of the forking thread are
 * the parent's (a TLS session's state cannot be shared), so the child
 * opens its own and leaves the parent's untouched. */
void dsv_net_after_fork(void);

/* Sets the process's disk cache of objects' stored bytes (disk_cache.h,
 * docs/s3.md): entries under dir (made, mode 0700, when missing; several
 * processes may share it), at most size bytes of them, the least recently
 * used removed first; entries a process before left are found and counted.
 * Ranged reads of objects with an ETag go through it from then on; Zarr
 * chunk objects (no ETag) do not. dir NULL: none. Call before reads start
 * (not thread-safe against them). @return 0 or DSV_ERR_IO, eb naming dir. */
int dsv_net_disk_cache(const char *dir, uint64_t size, dsv_errbuf *eb);

/* What the process fetched, since it started. */
typedef struct dsv_net_stats {
	uint64_t heads;    /* objects opened */
	uint64_t gets;     /* ranged GETs that succeeded */
	uint64_t bytes;    /* bytes those GETs fetched */
	uint64_t retries;  /* requests tried again */
	uint64_t failures; /* reads that failed after their retries */
	/* the disk cache's */
	uint64_t disk_hits;      /* blocks read from their entries */
	uint64_t disk_misses;    /* blocks fetched (and written as entries) */
	uint64_t disk_bytes;     /* bytes served from entries */
	uint64_t disk_evictions; /* entries this process removed as least recently used */
	uint64_t disk_corrupt;   /* damaged or mismatched entries dropped */
	uint64_t disk_size;      /* the cache's size (0: none) */
	uint64_t disk_used;      /* bytes of entries, as this process last counted them */
} dsv_net_stats;
void dsv_net_get_stats(dsv_net_stats *st);

#endif
