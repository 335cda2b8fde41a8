/*
 * Private to the net room: the configuration an object is opened with
 * (config.c), the object itself and its requests (object.c), which a
 * prefix's requests (dir.c) share.
 */
#ifndef DSV_NET_I_H
#define DSV_NET_I_H

#include <curl/curl.h>
#include <time.h>

#include "net/disk_cache.h"
#include "net/net.h"

/* What config.c's opening comment lists, resolved; each string owned. */
typedef struct dsv_net_config {
	char *endpoint; /* no trailing '/' */
	char *region;
	char *key_id, *secret, *token; /* all NULL: unsigned requests */
	char *ca_bundle;               /* CA certificates to verify with, or NULL: the system's */
	int virtual_host; /* s3:// as BUCKET.ENDPOINT-HOST/KEY, not ENDPOINT/BUCKET/KEY */
} dsv_net_config;

/* The settings dsv_net_setting keeps, by index; each NULL when unset. */
enum { DSV_NET_ENDPOINT, DSV_NET_REGION, DSV_NET_PROFILE, DSV_NET_ADDRESSING, DSV_NET__SETTINGS };
const char *dsv_net_setting_of(int which);

/* Reads the environment and the AWS files. @return 0 or DSV_ERR_NOMEM. */
int dsv_net_config_load(dsv_net_config *c);
/* Frees c's strings, the secret wiped first. */
void dsv_net_config_free(dsv_net_config *c);
/* The http(s) URL of url (s3:// made path-style against c's endpoint,
 * https:// and http:// as they are) into *out; *is_s3 says which.
 * @return 0, DSV_ERR_INVALID (not such a URL, or s3:// without a bucket
 * or a key) or DSV_ERR_NOMEM. */
int dsv_net_url_make(const dsv_net_config *c, const char *url, char **out, int *is_s3);

/* An object's readahead (ahead.c's opening comment). */
typedef struct dsv_net_ahead dsv_net_ahead;

struct dsv_net_obj {
	char *url;  /* what curl asks for (a presigned query included) */
	char *name; /* what messages say: the URL given, without its query */
	dsv_net_config cfg;
	int is_s3;
	char sigv4[96];              /* "aws:amz:REGION:s3", or "" unsigned */
	char etag[DSV_NET_ETAG_MAX]; /* as the HEAD gave it, quotes included; "" none */
	uint64_t size;
	struct timespec mtime;
	dsv_net_ahead *ahead; /* NULL: every read is one GET */
	dsv_dcache_id dcache; /* the disk cache's name of this version (with an ETag) */
};

/* One request's state, for the write and header callbacks. */
typedef struct dsv_net_req {
	char *buf; /* the GET's destination, cap bytes */
	size_t cap, got;
	int whole;  /* a GET of the whole object (no Range), up to cap bytes */
	int suffix; /* a GET of its last cap bytes (Range: bytes=-cap) */
	char etag[DSV_NET_ETAG_MAX];
	char crange[96]; /* Content-Range's value, "" none */
	int status;      /* the reply's status line's code, 0 before it came */
} dsv_net_req;
/* libcurl started (once a process) and o filled for url: its
 * configuration, name, request URL and signing. @return 0 or the error,
 * in eb. */
int dsv_net_start(dsv_net_obj *o, const char *url, dsv_errbuf *eb);
/* Frees what dsv_net_start made (not o itself). */
void dsv_net_unfill(dsv_net_obj *o);
/* Performs the request r of o (a HEAD when r->cap is 0, else the GET
 * of [off, off + r->cap), all of it with r->whole, its last r->cap bytes
 * with r->suffix; If-Match o->etag on a ranged GET when o has one),
 * retried as object.c's opening comment says. On return *status is the
 * last try's HTTP status (0: none came) and *cc its curl result.
 * @return 0, or DSV_ERR_NOMEM / DSV_ERR_INTERNAL (no handle). */
int dsv_net_perform(const dsv_net_obj *o, dsv_net_req *r, uint64_t off, long *status, CURLcode *cc);
/* The reason of a failed request in words, for eb or the log; buf. */
const char *dsv_net_reason(const dsv_net_obj *o, CURLcode cc, long status, char *buf, size_t cap);
/* The object's size from the reply to a request: a 206's or 416's
 * Content-Range total ("bytes 0-0/SIZE", "bytes * /SIZE" of an empty
 * object), else a HEAD's or a 200's Content-Length (h's; none when h is
 * NULL); -1 none. */
curl_off_t dsv_net_reply_size(CURL *h, const dsv_net_req *r, long status);
/* The counters of dsv_net_get_stats: one GET of bytes done, one failed. */
void dsv_net_count_get(uint64_t bytes);
void dsv_net_count_failure(void);

/* One ranged GET of exactly [off, off + n) (object.c), what
 * dsv_net_pread does without readahead; the same returns. */
int dsv_net_get(const dsv_net_obj *o, void *buf, size_t n, uint64_t off);

/* The readahead of o, of size bytes; NULL when it has none (turned off,
 * an object of one GET, in a forked child, no memory). */
dsv_net_ahead *dsv_net_ahead_new(const dsv_net_obj *o, uint64_t size);
/* Waits for its GETs in flight, then frees it; accepts NULL. */
void dsv_net_ahead_free(dsv_net_ahead *a);
/* dsv_net_pread of [off, off + n), in the object's bounds, n > 0: from
 * the window, or one GET of its own. */
int dsv_net_ahead_read(dsv_net_ahead *a, void *buf, size_t n, uint64_t off);
/* In a forked child: objects opened there read without readahead. */
void dsv_net_ahead_after_fork(void);

/* For a presigned URL (X-Amz-Date and X-Amz-Expires in its query, as
 * presign.c reads them): *expires, the moment it stops being valid.
 * @return 1, or 0 when url says nothing of it (*expires untouched). */
int dsv_net_presign_expiry(const char *url, time_t *expires);

/* GETs url whole with d's settings (a request other than a key's: a
 * listing); name (without a query) is what an error names. @return as
 * dsv_net_dir_get. */
int dsv_net_dir_fetch(const dsv_net_dir *d, const char *url, const char *name, void *buf,
		      size_t cap, size_t *got, dsv_errbuf *eb);
/* d's configuration, *name its prefix's URL as given (no query). */
const dsv_net_config *dsv_net_dir_config(const dsv_net_dir *d, const char **name);

/* What one page of a ListObjectsV2 reply says (list.c). */
typedef struct dsv_net_listing {
	char **prefixes; /* CommonPrefixes/Prefix, as sent */
	size_t n;
	char **keys; /* Contents/Key, as sent: the objects */
	size_t nkeys;
	int truncated; /* IsTruncated: another page follows */
	char *token;   /* NextContinuationToken, or NULL */
} dsv_net_listing;
/* Parses xml[0, len) into *out (freed with dsv_net_listing_free).
 * @return 0, DSV_ERR_FORMAT (not XML, not a ListBucketResult, a value
 * or count over its bound; nothing kept) or DSV_ERR_NOMEM. */
int dsv_net_list_parse(const char *xml, size_t len, dsv_net_listing *out, dsv_errbuf *eb);
void dsv_net_listing_free(dsv_net_listing *l);

/* The key prefix s3://bucket/x.zarr (or .../x.zarr/) lists, "x.zarr/";
 * NULL when url is not such a URL (or out of memory). The caller frees. */
char *dsv_net_list_prefix(const char *url);
/* The ListObjectsV2 URL of the children of url (s3://bucket/prefix; the
 * prefix and '/' as the delimiter), path-style against c's endpoint, its
 * query in SigV4's canonical form (parameters sorted, values encoded),
 * from token (the last page's NextContinuationToken; NULL: the first),
 * max_keys names a page. @return 0, DSV_ERR_INVALID (not s3://) or
 * DSV_ERR_NOMEM. */
int dsv_net_list_url(const dsv_net_config *c, const char *url, const char *token, int max_keys,
		     char **out);

#endif
