/*
 * Private to the net room: the configuration an object is opened with
 * (config.c) and the object itself (object.c).
 */
#ifndef DSV_NET_I_H
#define DSV_NET_I_H

#include <time.h>

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

/* One ranged GET of exactly [off, off + n) (object.c), what
 * dsv_net_pread does without readahead; the same returns. */
int dsv_net_get(const dsv_net_obj *o, void *buf, size_t n, uint64_t off);

/* An object's readahead (ahead.c's opening comment). */
typedef struct dsv_net_ahead dsv_net_ahead;
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
