/*
 * A prefix of objects (net.h's dsv_net_dir): a Zarr array's or group's
 * keys fetched whole or by range, by the request plumbing of object.c
 * (net_i.h) with the prefix's settings.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_i.h"

struct dsv_net_dir {
	dsv_net_obj base; /* url and name: the prefix; no ETag, no size */
};

int dsv_net_dir_open(const char *url, dsv_net_dir **out, dsv_errbuf *eb)
{
	dsv_net_dir *d = calloc(1, sizeof(*d));
	int err;

	*out = NULL;
	if (!d)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if ((err = dsv_net_start(&d->base, url, eb))) {
		dsv_net_dir_close(d);
		return err;
	}
	*out = d;
	return 0;
}

void dsv_net_dir_close(dsv_net_dir *d)
{
	if (d)
		dsv_net_unfill(&d->base);
	free(d);
}

int dsv_net_dir_fetch(const dsv_net_dir *d, const char *url, const char *name, void *buf,
		      size_t cap, size_t *got, dsv_errbuf *eb)
{
	dsv_net_obj o = d->base; /* url's: the prefix's settings */
	dsv_net_req r = { .buf = buf, .cap = cap, .whole = 1 };
	long status;
	CURLcode cc;
	char why[400];

	*got = 0;
	o.url = (char *)url;
	int err = dsv_net_perform(&o, &r, 0, &status, &cc);
	if (err)
		return err;
	if (cc == CURLE_OK && status == 200) {
		dsv_net_count_get(r.got);
		*got = r.got;
		return 0;
	}
	if (cc == CURLE_OK && status == 404)
		return DSV_ERR_NOTFOUND;
	if (cc == CURLE_WRITE_ERROR)
		return DSV_ERR_OVERFLOW;
	dsv_net_count_failure();
	if (eb)
		dsv_errf_at(eb, DSV_ERR_IO, name, NULL, "%s",
			    dsv_net_reason(&o, cc, status, why, sizeof(why)));
	return DSV_ERR_IO;
}

const dsv_net_config *dsv_net_dir_config(const dsv_net_dir *d, const char **name)
{
	*name = d->base.name;
	return &d->base.cfg;
}

int dsv_net_dir_get(const dsv_net_dir *d, const char *key, void *buf, size_t cap, size_t *got,
		    dsv_errbuf *eb)
{
	char *url = NULL, name[4096 + 8];
	*got = 0;
	if (asprintf(&url, "%s/%s", d->base.url, key) < 0)
		return DSV_ERR_NOMEM;
	snprintf(name, sizeof(name), "%s/%s", d->base.name, key);
	int err = dsv_net_dir_fetch(d, url, name, buf, cap, got, eb);
	free(url);
	return err;
}

int dsv_net_dir_range(const dsv_net_dir *d, const char *key, void *buf, size_t n, uint64_t off,
		      int from_end, uint64_t *size, char etag[DSV_NET_ETAG_MAX], dsv_errbuf *eb)
{
	dsv_net_obj o = d->base; /* this key's: the prefix's settings, its URL */
	dsv_net_req r = { .buf = buf, .cap = n, .suffix = from_end };
	long status;
	CURLcode cc;
	char *url = NULL, why[400];

	if (!n || asprintf(&url, "%s/%s", d->base.url, key) < 0)
		return n ? DSV_ERR_NOMEM : DSV_ERR_INVALID;
	o.url = url;
	snprintf(o.etag, sizeof(o.etag), "%s", etag); /* If-Match, when one is known */
	int err = dsv_net_perform(&o, &r, off, &status, &cc);
	free(url);
	if (err)
		return err;
	curl_off_t total = dsv_net_reply_size(NULL, &r, status);
	if (cc == CURLE_OK && status == 206 && r.got == n && total >= 0) {
		dsv_net_count_get(n);
		*size = (uint64_t)total;
		memcpy(etag, r.etag, DSV_NET_ETAG_MAX);
		return 0;
	}
	if (cc == CURLE_OK && status == 404)
		return DSV_ERR_NOTFOUND;
	/* the object is shorter than asked: 416, or a suffix of all of it */
	if (cc == CURLE_OK &&
	    (status == 416 || (status == 206 && total >= 0 && (uint64_t)total < n)))
		return DSV_ERR_TRUNCATED;
	dsv_net_count_failure();
	if (eb) {
		char name[4096 + 8];
		snprintf(name, sizeof(name), "%s/%s", d->base.name, key);
		dsv_errf_at(eb, DSV_ERR_IO, name, NULL, "%s",
			    cc == CURLE_OK && status == 412
				    ? "the object changed since it was first read; remount"
			    : cc == CURLE_OK && status / 100 == 2
				    ? "a short, over-long or unranged reply to a ranged GET"
				    : dsv_net_reason(&o, cc, status, why, sizeof(why)));
	}
	return DSV_ERR_IO;
}
