/*
 * An object read by ranged GETs (net.h). Each thread that reads has one
 * curl easy handle (a pthread key frees it when the thread ends), which
 * keeps its connections open between requests: a FUSE worker reading
 * chunk after chunk reuses one HTTP keep-alive connection.
 *
 * A request is tried up to 1 + DSVIEW_NET_RETRIES times; between tries it
 * sleeps DSVIEW_NET_BACKOFF_MS times 2^try (at most 5 s), each sleep
 * between half and all of that at random, so that the readers a fault hit
 * together do not come back together.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/knobs.h"
#include "common/log.h"
#include "net/disk_cache.h"
#include "net/net_i.h"

static struct {
	uint64_t heads, gets, bytes, retries, failures;
} stats;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t handle_key;
static int init_err;
static int started; /* init_once ran and made handle_key */

static void handle_free(void *h)
{
	curl_easy_cleanup(h);
}

static void init_once(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    pthread_key_create(&handle_key, handle_free))
		init_err = DSV_ERR_INTERNAL;
	else
		__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
}

/* This thread's easy handle, made at its first request. */
static CURL *thread_handle(void)
{
	CURL *h = pthread_getspecific(handle_key);
	if (!h && (h = curl_easy_init()) && pthread_setspecific(handle_key, h)) {
		curl_easy_cleanup(h);
		h = NULL;
	}
	return h;
}

void dsv_net_after_fork(void)
{
	/* the parent's handle is neither used nor cleaned up here (that would
	 * close the parent's TLS sessions politely, over its sockets) */
	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE) && pthread_getspecific(handle_key))
		pthread_setspecific(handle_key, NULL);
	dsv_net_ahead_after_fork();
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
	dsv_net_req *r = user;
	size_t n = size * nmemb;
	if (r->status / 100 != 2)
		return n; /* an error reply's body (S3's XML): the status says it */
	if (n > r->cap - r->got)
		return 0; /* more than asked for: curl fails the transfer */
	memcpy(r->buf + r->got, data, n);
	r->got += n;
	return n;
}

/* Keeps the value of header name ("etag:") from line into out when it
 * fits, blanks trimmed. */
static void keep_header(const char *line, size_t n, const char *name, char *out, size_t cap)
{
	size_t k = strlen(name), len;
	if (n <= k || strncasecmp(line, name, k))
		return;
	const char *v = line + k;
	while (*v == ' ' || *v == '\t')
		v++;
	len = n - (size_t)(v - line);
	while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
		len--;
	if (len < cap)
		snprintf(out, cap, "%.*s", (int)len, v);
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *user)
{
	dsv_net_req *r = user;
	size_t n = size * nmemb;
	int code;
	if (n > 9 && !strncmp(line, "HTTP/", 5) && sscanf(line, "HTTP/%*s %d", &code) == 1)
		r->status = code;
	keep_header(line, n, "etag:", r->etag, sizeof(r->etag));
	keep_header(line, n, "content-range:", r->crange, sizeof(r->crange));
	return n;
}

/* Sets up h for one request of o: a HEAD (r->cap == 0), the GET of
 * [off, off + r->cap), or with r->whole the GET of all of it. *hdrs is
 * the header list to free after. */
static int setup(CURL *h, const dsv_net_obj *o, dsv_net_req *r, uint64_t off,
		 struct curl_slist **hdrs)
{
	long timeout = (long)dsv_knob_int(DSV_KNOB_NET_TIMEOUT_S);
	char line[256], range[48];

	curl_easy_reset(h);
	*hdrs = NULL;
	curl_easy_setopt(h, CURLOPT_URL, o->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, timeout);
	/* a transfer that stalls (under 1 byte/s) for timeout seconds fails */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, timeout);
	if (o->cfg.ca_bundle)
		curl_easy_setopt(h, CURLOPT_CAINFO, o->cfg.ca_bundle);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_FILETIME, 1L); /* Last-Modified, for an open */
	if (o->sigv4[0]) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, o->sigv4);
		curl_easy_setopt(h, CURLOPT_USERNAME, o->cfg.key_id);
		curl_easy_setopt(h, CURLOPT_PASSWORD, o->cfg.secret);
	}
	if (o->cfg.token && o->is_s3) {
		snprintf(line, sizeof(line), "x-amz-security-token: %s", o->cfg.token);
		if (strlen(o->cfg.token) > sizeof(line) - 32 ||
		    !(*hdrs = curl_slist_append(*hdrs, line)))
			return DSV_ERR_NOMEM;
		memset(line, 0, sizeof(line));
	}
	if (!r->cap) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (!r->whole) {
		if (r->suffix)
			snprintf(range, sizeof(range), "-%zu", r->cap);
		else
			snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)off,
				 (unsigned long long)(off + r->cap - 1));
		curl_easy_setopt(h, CURLOPT_RANGE, range);
		if (o->etag[0]) {
			struct curl_slist *l;
			snprintf(line, sizeof(line), "If-Match: %s", o->etag);
			if (!(l = curl_slist_append(*hdrs, line)))
				return DSV_ERR_NOMEM;
			*hdrs = l;
		}
	}
	if (*hdrs)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	return 0;
}

/* What one try came to. */
enum { TRY_OK, TRY_AGAIN, TRY_FAIL };

/* Classifies a finished try: transport errors a new connection may
 * cure, 5xx, 408 and 429 are worth another; the rest is final. */
static int verdict(CURLcode cc, long status)
{
	if (cc != CURLE_OK)
		return cc == CURLE_WRITE_ERROR || cc == CURLE_OUT_OF_MEMORY ||
				       cc == CURLE_URL_MALFORMAT || cc == CURLE_UNSUPPORTED_PROTOCOL
			       ? TRY_FAIL
			       : TRY_AGAIN;
	if (status >= 500 || status == 408 || status == 429)
		return TRY_AGAIN;
	return TRY_OK; /* the caller judges the status */
}

static void backoff(unsigned attempt)
{
	static __thread unsigned seed;
	if (!seed)
		seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed;
	uint64_t ms = (uint64_t)dsv_knob_int(DSV_KNOB_NET_BACKOFF_MS)
		      << (attempt < 12 ? attempt : 12);
	if (ms > 5000)
		ms = 5000;
	ms = ms / 2 + (ms ? (uint64_t)rand_r(&seed) % (ms / 2 + 1) : 0);
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int dsv_net_perform(const dsv_net_obj *o, dsv_net_req *r, uint64_t off, long *status, CURLcode *cc)
{
	unsigned tries = 1 + (unsigned)dsv_knob_int(DSV_KNOB_NET_RETRIES);
	CURL *h = thread_handle();

	if (!h)
		return DSV_ERR_NOMEM;
	for (unsigned t = 0; t < tries; t++) {
		struct curl_slist *hdrs;
		int err = setup(h, o, r, off, &hdrs);
		r->got = 0;
		r->etag[0] = r->crange[0] = '\0';
		r->status = 0;
		*status = 0;
		*cc = err ? CURLE_OUT_OF_MEMORY : curl_easy_perform(h);
		curl_slist_free_all(hdrs);
		if (err)
			return err;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
		if (verdict(*cc, *status) != TRY_AGAIN)
			return 0;
		if (t + 1 < tries) {
			__atomic_fetch_add(&stats.retries, 1, __ATOMIC_RELAXED);
			backoff(t);
		}
	}
	return 0;
}

/* Why an http(s) URL was refused: a presigned one may have expired (its
 * query says when; presign.c), else its signature or the server said no. */
static void presigned_reason(const dsv_net_obj *o, long status, char *buf, size_t cap)
{
	time_t until;
	struct tm tm;
	char when[32];

	snprintf(buf, cap, "access denied (HTTP %ld)", status);
	if (!dsv_net_presign_expiry(o->url, &until))
		return;
	if (time(NULL) < until)
		snprintf(buf, cap,
			 "access denied (HTTP %ld): the presigned URL's signature was "
			 "refused",
			 status);
	else if (gmtime_r(&until, &tm) && strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, cap, "access denied (HTTP %ld): the presigned URL expired at %s",
			 status, when);
}

const char *dsv_net_reason(const dsv_net_obj *o, CURLcode cc, long status, char *buf, size_t cap)
{
	if (cc != CURLE_OK && o->is_s3)
		snprintf(buf, cap, "%s (endpoint %s)", curl_easy_strerror(cc), o->cfg.endpoint);
	else if (cc != CURLE_OK)
		snprintf(buf, cap, "%s", curl_easy_strerror(cc));
	else if ((status == 401 || status == 403) && !o->is_s3)
		presigned_reason(o, status, buf, cap);
	else if (status == 401 || status == 403)
		snprintf(buf, cap, "access denied (HTTP %ld): check the credentials", status);
	else if (status == 404)
		snprintf(buf, cap, "no such object or bucket (HTTP 404)");
	else
		snprintf(buf, cap, "HTTP %ld", status);
	return buf;
}

static int fill(dsv_net_obj *o, const char *url, dsv_errbuf *eb)
{
	int err = dsv_net_config_load(&o->cfg);
	if (err)
		return dsv_errf(eb, err, "out of memory");
	o->name = strndup(url, strcspn(url, "?#"));
	if (!o->name)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	err = dsv_net_url_make(&o->cfg, url, &o->url, &o->is_s3);
	if (err == DSV_ERR_INVALID)
		return dsv_errf_at(eb, err, o->name, NULL,
				   "not an object URL (s3://BUCKET/KEY, https://...)");
	if (err)
		return dsv_errf(eb, err, "out of memory");
	if (o->is_s3 && o->cfg.key_id)
		snprintf(o->sigv4, sizeof(o->sigv4), "aws:amz:%s:s3", o->cfg.region);
	return 0;
}

int dsv_net_start(dsv_net_obj *o, const char *url, dsv_errbuf *eb)
{
	pthread_once(&once, init_once);
	if (init_err)
		return dsv_errf(eb, init_err, "libcurl failed to start");
	return fill(o, url, eb);
}

curl_off_t dsv_net_reply_size(CURL *h, const dsv_net_req *r, long status)
{
	curl_off_t len = -1;
	const char *slash = strrchr(r->crange, '/');
	char *end;

	if (status == 206 || status == 416) {
		if (!slash || strncasecmp(r->crange, "bytes ", 6) || slash[1] < '0' ||
		    slash[1] > '9')
			return -1;
		len = (curl_off_t)strtoll(slash + 1, &end, 10);
		return *end || len < 0 ? -1 : len;
	}
	if (h)
		curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
	return len;
}

/* The request an open makes: for s3:// a HEAD; for an http(s) URL the
 * GET of its first byte, because a presigned URL is signed for GET alone
 * (a HEAD of it is refused) and a GET serves public files as well. The
 * reply gives size, ETag and Last-Modified either way. */
static int head(dsv_net_obj *o, dsv_errbuf *eb)
{
	char first;
	dsv_net_req r = { .buf = &first, .cap = o->is_s3 ? 0 : 1 };
	long status;
	CURLcode cc;
	char why[400];
	int err = dsv_net_perform(o, &r, 0, &status, &cc);

	if (err)
		return dsv_errf(eb, err, "out of memory");
	/* a server that ignores Range sends 200 and the whole body: the write
	 * callback stops it after the headers, which said the size */
	int ok = o->is_s3 ? cc == CURLE_OK && status == 200
			  : (cc == CURLE_OK && (status == 206 || status == 416 || status == 200)) ||
				    (cc == CURLE_WRITE_ERROR && status == 200);
	if (!ok)
		return dsv_errf_at(eb, status == 404 ? DSV_ERR_NOTFOUND : DSV_ERR_IO, o->name, NULL,
				   "%s", dsv_net_reason(o, cc, status, why, sizeof(why)));
	CURL *h = thread_handle();
	curl_off_t len = dsv_net_reply_size(h, &r, status), t = -1;
	curl_easy_getinfo(h, CURLINFO_FILETIME_T, &t);
	if (len < 0)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, o->name, NULL,
				   "the server gave no size (Content-Length or Content-Range)");
	o->size = (uint64_t)len;
	o->mtime.tv_sec = t > 0 ? (time_t)t : 0;
	memcpy(o->etag, r.etag, sizeof(o->etag));
	__atomic_fetch_add(&stats.heads, 1, __ATOMIC_RELAXED);
	if (o->etag[0] && dsv_dcache_id_make(&o->dcache, o->url, o->etag, o->size))
		return dsv_errf(eb, DSV_ERR_INTERNAL, "libcrypto failed to hash a URL");
	return 0;
}

int dsv_net_open(const char *url, dsv_net_obj **out, dsv_errbuf *eb)
{
	dsv_net_obj *o = calloc(1, sizeof(*o));
	int err;

	*out = NULL;
	if (!o)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (!(err = dsv_net_start(o, url, eb)))
		err = head(o, eb);
	if (err) {
		dsv_net_close(o);
		return err;
	}
	o->ahead = dsv_net_ahead_new(o, o->size);
	*out = o;
	return 0;
}

void dsv_net_unfill(dsv_net_obj *o)
{
	dsv_net_config_free(&o->cfg);
	free(o->url);
	free(o->name);
}

void dsv_net_close(dsv_net_obj *o)
{
	if (o) {
		dsv_net_ahead_free(o->ahead);
		dsv_net_unfill(o);
	}
	free(o);
}

uint64_t dsv_net_size(const dsv_net_obj *o)
{
	return o->size;
}

struct timespec dsv_net_mtime(const dsv_net_obj *o)
{
	return o->mtime;
}

int dsv_net_same(const dsv_net_obj *a, const dsv_net_obj *b)
{
	return !strcmp(a->url, b->url) && a->etag[0] && !strcmp(a->etag, b->etag);
}

const char *dsv_net_name(const dsv_net_obj *o)
{
	return o->name;
}

/* One ranged GET of [off, off + n), in bounds and n > 0 (net_i.h). */
int dsv_net_get(const dsv_net_obj *o, void *buf, size_t n, uint64_t off)
{
	dsv_net_req r = { .buf = buf, .cap = n };
	long status;
	CURLcode cc;
	char why[400];
	int err = dsv_net_perform(o, &r, off, &status, &cc);
	if (err)
		return err;
	/* 206 with exactly the range; a server that ignores Range sends 200
	 * and the whole object, right only when that is what was asked */
	if (cc == CURLE_OK && r.got == n && (status == 206 || (status == 200 && n == o->size))) {
		dsv_net_count_get(n);
		return 0;
	}
	dsv_net_count_failure();
	uint64_t key = (uint64_t)(uintptr_t)o; /* one limit per object */
	if (cc == CURLE_OK && status == 412)
		dsv_log_limited(key, DSV_LOG_ERROR,
				"%s: the object changed since it was opened (ETag %s); its reads "
				"fail until it is mounted again",
				o->name, o->etag);
	else
		dsv_log_limited(key, DSV_LOG_ERROR, "%s: GET of bytes %llu-%llu failed: %s",
				o->name, (unsigned long long)off, (unsigned long long)(off + n - 1),
				cc == CURLE_OK && status / 100 == 2
					? "a short or over-long body"
					: dsv_net_reason(o, cc, status, why, sizeof(why)));
	return DSV_ERR_IO;
}

/* [off, off + n), in bounds and n > 0, from the readahead's blocks or by
 * a GET of its own (the disk cache's dsv_dcache_fetch_fn: what it lacks
 * is fetched so). */
static int get_range(const void *obj, void *buf, size_t n, uint64_t off)
{
	const dsv_net_obj *o = obj;
	return o->ahead ? dsv_net_ahead_read(o->ahead, buf, n, off) : dsv_net_get(o, buf, n, off);
}

int dsv_net_pread(const dsv_net_obj *o, void *buf, size_t n, uint64_t off)
{
	if (n > o->size || off > o->size - n)
		return DSV_ERR_TRUNCATED;
	if (!n)
		return 0;
	/* an object without an ETag is never cached: no version to key it by */
	if (o->etag[0] && dsv_dcache_on())
		return dsv_dcache_pread(&o->dcache, o->name, buf, n, off, get_range, o);
	return get_range(o, buf, n, off);
}

void dsv_net_count_get(uint64_t bytes)
{
	__atomic_fetch_add(&stats.gets, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&stats.bytes, bytes, __ATOMIC_RELAXED);
}

void dsv_net_count_failure(void)
{
	__atomic_fetch_add(&stats.failures, 1, __ATOMIC_RELAXED);
}

void dsv_net_get_stats(dsv_net_stats *st)
{
	st->heads = __atomic_load_n(&stats.heads, __ATOMIC_RELAXED);
	st->gets = __atomic_load_n(&stats.gets, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&stats.bytes, __ATOMIC_RELAXED);
	st->retries = __atomic_load_n(&stats.retries, __ATOMIC_RELAXED);
	st->failures = __atomic_load_n(&stats.failures, __ATOMIC_RELAXED);
	dsv_dcache_get_stats(st);
}
