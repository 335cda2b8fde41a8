/*
 * Where an s3:// object is and who asks for it, as AWS tools take them,
 * a setting given to dsview itself (settings.c: -o, then the manifest)
 * first where there is one:
 *  - endpoint: the setting, AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL,
 *    else the profile's endpoint_url (~/.aws/config), else AWS's own
 *    https://s3.REGION.amazonaws.com;
 *  - region: the setting, AWS_REGION, else AWS_DEFAULT_REGION, else the
 *    profile's region, else us-east-1;
 *  - credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and
 *    AWS_SESSION_TOKEN), else the profile's in ~/.aws/credentials
 *    (AWS_SHARED_CREDENTIALS_FILE), else none: requests go unsigned, as
 *    public buckets take them (never from a setting).
 * TLS is verified against AWS_CA_BUNDLE (or the profile's ca_bundle)
 * when set, else the system's CA store.
 * The profile is the setting, AWS_PROFILE, else "default"; ~/.aws/config
 * (AWS_CONFIG_FILE) names it "[profile NAME]", the credentials file
 * "[NAME]". Addressing is path-style (ENDPOINT/BUCKET/KEY), which every
 * S3-compatible store serves, or virtual-hosted (BUCKET.HOST/KEY): the
 * addressing setting picks, else AWS's own endpoints are virtual-hosted.
 */
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_i.h"

/* One value of an INI file, found by ini_parse's handler. */
typedef struct find {
	const char *section, *alt; /* the section's name, or its other spelling */
	const char *key;
	char *value; /* strdup'd, or NULL */
} find;

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
	find *f = user;
	if ((!strcmp(section, f->section) || (f->alt && !strcmp(section, f->alt))) &&
	    !strcmp(name, f->key) && !f->value)
		f->value = strdup(value);
	return 1;
}

/* key in the profile's section of the file env names, else of
 * ~/.aws/base; NULL when absent (or there is no such file). */
static char *profile_value(const char *env, const char *base, const char *key, int config)
{
	const char *profile = dsv_net_setting_of(DSV_NET_PROFILE), *path = getenv(env),
		   *home = getenv("HOME");
	char *own = NULL, *sect = NULL;
	find f = { 0 };

	if (!profile)
		profile = getenv("AWS_PROFILE");
	if (!profile || !*profile)
		profile = "default";
	if ((!path || !*path) && home) {
		if (asprintf(&own, "%s/.aws/%s", home, base) < 0)
			return NULL;
		path = own;
	}
	if (!path)
		return NULL;
	/* ~/.aws/config names "[profile x]" but "[default]" */
	if (config && asprintf(&sect, "profile %s", profile) < 0)
		sect = NULL;
	f.section = sect ? sect : profile;
	f.alt = sect && !strcmp(profile, "default") ? "default" : NULL;
	f.key = key;
	(void)ini_parse(path, on_pair, &f); /* a missing file: no value */
	free(own);
	free(sect);
	return f.value;
}

/* Setting k (settings.c) when set, else the first of variables a, b. */
static char *env_dup_over(int k, const char *a, const char *b)
{
	const char *v = k >= 0 ? dsv_net_setting_of(k) : NULL;
	if (!v)
		v = getenv(a);
	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? strdup(v) : NULL;
}

static char *env_dup(const char *a, const char *b)
{
	return env_dup_over(-1, a, b);
}

/* Virtual-hosted addressing (BUCKET.HOST) when the addressing setting
 * says so, or by default ("auto") for AWS's own endpoints, which prefer
 * it; path-style for any other, as on-premise stores serve it. */
static int virtual_host(const char *endpoint)
{
	const char *a = dsv_net_setting_of(DSV_NET_ADDRESSING);
	if (a && strcmp(a, "auto"))
		return !strcmp(a, "virtual");
	const char *host = strstr(endpoint, "://");
	size_t n = host ? strcspn(host + 3, ":/") : 0;
	return n > 14 && !strncmp(host + 3 + n - 14, ".amazonaws.com", 14);
}

int dsv_net_config_load(dsv_net_config *c)
{
	memset(c, 0, sizeof(*c));
	c->region = env_dup_over(DSV_NET_REGION, "AWS_REGION", "AWS_DEFAULT_REGION");
	if (!c->region)
		c->region = profile_value("AWS_CONFIG_FILE", "config", "region", 1);
	if (!c->region && !(c->region = strdup("us-east-1")))
		goto nomem;
	c->endpoint = env_dup_over(DSV_NET_ENDPOINT, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
	if (!c->endpoint)
		c->endpoint = profile_value("AWS_CONFIG_FILE", "config", "endpoint_url", 1);
	if (!c->endpoint && asprintf(&c->endpoint, "https://s3.%s.amazonaws.com", c->region) < 0) {
		c->endpoint = NULL;
		goto nomem;
	}
	size_t n = strlen(c->endpoint);
	while (n && c->endpoint[n - 1] == '/')
		c->endpoint[--n] = '\0';
	c->virtual_host = virtual_host(c->endpoint);
	c->ca_bundle = env_dup("AWS_CA_BUNDLE", NULL);
	if (!c->ca_bundle)
		c->ca_bundle = profile_value("AWS_CONFIG_FILE", "config", "ca_bundle", 1);
	c->key_id = env_dup("AWS_ACCESS_KEY_ID", NULL);
	c->secret = env_dup("AWS_SECRET_ACCESS_KEY", NULL);
	if (c->key_id && c->secret) {
		c->token = env_dup("AWS_SESSION_TOKEN", NULL);
		return 0;
	}
	free(c->key_id);
	free(c->secret);
	c->key_id = profile_value("AWS_SHARED_CREDENTIALS_FILE", "credentials", "aws_access_key_id",
				  0);
	c->secret = profile_value("AWS_SHARED_CREDENTIALS_FILE", "credentials",
				  "aws_secret_access_key", 0);
	c->token = profile_value("AWS_SHARED_CREDENTIALS_FILE", "credentials", "aws_session_token",
				 0);
	if (!c->key_id || !c->secret) { /* half a key pair signs nothing */
		free(c->key_id);
		free(c->secret);
		free(c->token);
		c->key_id = c->secret = c->token = NULL;
	}
	return 0;
nomem:
	dsv_net_config_free(c);
	return DSV_ERR_NOMEM;
}

void dsv_net_config_free(dsv_net_config *c)
{
	if (c->secret) /* no copy of a secret outlives its use */
		memset(c->secret, 0, strlen(c->secret));
	free(c->endpoint);
	free(c->region);
	free(c->key_id);
	free(c->secret);
	free(c->token);
	free(c->ca_bundle);
	memset(c, 0, sizeof(*c));
}

/* Appends key to out, percent-encoding all but RFC 3986's unreserved
 * characters and '/' (unless slash_too), as SigV4's canonical URI wants
 * a path (a query's value: '/' encoded too). */
static int append_enc(char **out, const char *key, int slash_too)
{
	size_t n = strlen(*out), len = strlen(key);
	char *p = realloc(*out, n + 3 * len + 1);
	if (!p)
		return DSV_ERR_NOMEM;
	for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
		if ((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		    (*k >= '0' && *k <= '9') || strchr(slash_too ? "-._~" : "-._~/", *k))
			p[n++] = (char)*k;
		else
			n += (size_t)sprintf(p + n, "%%%02X", *k);
	}
	p[n] = '\0';
	*out = p;
	return 0;
}

/* Appends text to *out. @return 0 or DSV_ERR_NOMEM. */
static int strcat_grow(char **out, const char *text)
{
	size_t n = strlen(*out), len = strlen(text);
	char *p = realloc(*out, n + len + 1);
	if (!p)
		return DSV_ERR_NOMEM;
	memcpy(p + n, text, len + 1);
	*out = p;
	return 0;
}

/* The URL of bucket (blen bytes) into *out, with a '/' after it:
 * ENDPOINT/BUCKET/ path-style, SCHEME://BUCKET.HOST.../ virtual-hosted.
 * @return 0 or DSV_ERR_NOMEM. */
static int bucket_base(const dsv_net_config *c, const char *bucket, int blen, char **out)
{
	const char *host = strstr(c->endpoint, "://");
	int n = c->virtual_host && host
			? asprintf(out, "%.*s%.*s.%s/", (int)(host + 3 - c->endpoint), c->endpoint,
				   blen, bucket, host + 3)
			: asprintf(out, "%s/%.*s/", c->endpoint, blen, bucket);
	if (n < 0)
		*out = NULL;
	return n < 0 ? DSV_ERR_NOMEM : 0;
}

int dsv_net_url_make(const dsv_net_config *c, const char *url, char **out, int *is_s3)
{
	*out = NULL;
	*is_s3 = !strncmp(url, "s3://", 5);
	if (!*is_s3) {
		if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
			return DSV_ERR_INVALID;
		return (*out = strdup(url)) ? 0 : DSV_ERR_NOMEM;
	}
	const char *bucket = url + 5, *slash = strchr(bucket, '/');
	if (!slash || slash == bucket || !slash[1] || strpbrk(bucket, "?#"))
		return DSV_ERR_INVALID; /* s3://bucket/key, both non-empty */
	int err = bucket_base(c, bucket, (int)(slash - bucket), out);
	if (err)
		return err;
	err = append_enc(out, slash + 1, 0);
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

char *dsv_net_list_prefix(const char *url)
{
	const char *slash = strchr(url + 5, '/');
	char *p = NULL;
	if (strncmp(url, "s3://", 5) || !slash || slash == url + 5 || !slash[1] ||
	    strpbrk(url, "?#"))
		return NULL;
	size_t len = strlen(slash + 1);
	while (len && slash[len] == '/') /* "x.zarr/" is "x.zarr" */
		len--;
	return len && asprintf(&p, "%.*s/", (int)len, slash + 1) >= 0 ? p : NULL;
}

int dsv_net_list_url(const dsv_net_config *c, const char *url, const char *token, int max_keys,
		     char **out)
{
	const char *bucket = url + 5, *slash = strchr(bucket, '/');
	char *prefix = dsv_net_list_prefix(url), page[96];
	int err;

	*out = NULL;
	if (!prefix)
		return DSV_ERR_INVALID;
	err = bucket_base(c, bucket, (int)(slash - bucket), out);
	if (!err && !c->virtual_host)
		(*out)[strlen(*out) - 1] = '\0'; /* ENDPOINT/BUCKET?..., BUCKET.HOST/?... */
	/* the query's parameters in SigV4's order (by name), which libcurl
	 * signs as it is given */
	snprintf(page, sizeof(page), "delimiter=%%2F&list-type=2&max-keys=%d&prefix=", max_keys);
	if (!err)
		err = strcat_grow(out, "?");
	if (!err && token && !(err = strcat_grow(out, "continuation-token=")) &&
	    !(err = append_enc(out, token, 1)))
		err = strcat_grow(out, "&");
	if (!err && !(err = strcat_grow(out, page)))
		err = append_enc(out, prefix, 1);
	free(prefix);
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

int dsv_net_http_url(const char *url, char **out)
{
	dsv_net_config c;
	int is_s3, err = dsv_net_config_load(&c);
	if (err)
		return err;
	err = dsv_net_url_make(&c, url, out, &is_s3);
	dsv_net_config_free(&c);
	return err;
}
