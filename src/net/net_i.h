/*
 * Private to the net room: the configuration an object is opened with
 * (config.c) and the object itself (object.c).
 */
#ifndef DSV_NET_I_H
#define DSV_NET_I_H

#include "net/net.h"

/* What config.c's opening comment lists, resolved; each string owned. */
typedef struct dsv_net_config {
	char *endpoint; /* no trailing '/' */
	char *region;
	char *key_id, *secret, *token; /* all NULL: unsigned requests */
	char *ca_bundle;               /* CA certificates to verify with, or NULL: the system's */
} dsv_net_config;

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

#endif
