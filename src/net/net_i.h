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

/* For a presigned URL (X-Amz-Date and X-Amz-Expires in its query, as
 * presign.c reads them): *expires, the moment it stops being valid.
 * @return 1, or 0 when url says nothing of it (*expires untouched). */
int dsv_net_presign_expiry(const char *url, time_t *expires);

#endif
