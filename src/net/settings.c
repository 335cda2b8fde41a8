/*
 * Object-storage settings given to dsview itself: a manifest's [dsview]
 * keys (s3_endpoint, ...) and `dsview mount -o s3_endpoint=...`. They win
 * over the environment and ~/.aws (config.c), as the AWS CLI's own
 * --endpoint-url and --profile do; an -o setting wins over the
 * manifest's. Only where and as whom are settings: never keys, which stay
 * in the environment or a credentials file a profile names.
 *
 * Thread safety: set while the process starts (the command line, then
 * the manifest's parse), before any object is opened; read after.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_i.h"

static const char *const names[DSV_NET__SETTINGS] = { "endpoint", "region", "profile",
						      "addressing" };
static char *value[DSV_NET__SETTINGS];
static int level[DSV_NET__SETTINGS];

/* NULL when v is a good value of setting k, else what it must be. */
static const char *bad_value(int k, const char *v)
{
	size_t n = strlen(v);
	if (!n || n > 1024)
		return "a value of 1 to 1024 characters";
	for (const char *p = v; *p; p++)
		if (!isgraph((unsigned char)*p))
			return "printable characters without blanks";
	switch (k) {
	case DSV_NET_ENDPOINT:
		return (strncmp(v, "https://", 8) && strncmp(v, "http://", 7)) || strpbrk(v, "?#@")
			       ? "an http:// or https:// URL without a query or user"
			       : NULL;
	case DSV_NET_REGION:
		return strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") == n
			       ? NULL
			       : "a region name (us-east-1)";
	case DSV_NET_ADDRESSING:
		return !strcmp(v, "path") || !strcmp(v, "virtual") || !strcmp(v, "auto")
			       ? NULL
			       : "path, virtual or auto";
	default: return strpbrk(v, "[]") ? "a profile name" : NULL;
	}
}

int dsv_net_setting(const char *key, const char *v, int from, dsv_errbuf *eb)
{
	int k = 0;
	while (k < DSV_NET__SETTINGS && strcmp(key, names[k]))
		k++;
	if (k == DSV_NET__SETTINGS)
		return dsv_errf(eb, DSV_ERR_INVALID,
				"unknown object-storage setting 's3_%s' (expected s3_endpoint, "
				"s3_region, s3_profile, s3_addressing)",
				key);
	const char *why = bad_value(k, v);
	if (why)
		return dsv_errf(eb, DSV_ERR_INVALID, "s3_%s must be %s", key, why);
	if (value[k] && level[k] > from)
		return 0; /* -o wins over the manifest */
	char *copy = strdup(v);
	if (!copy)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	free(value[k]);
	value[k] = copy;
	level[k] = from;
	return 0;
}

const char *dsv_net_setting_of(int k)
{
	return value[k];
}

void dsv_net_settings_clear(void)
{
	for (int k = 0; k < DSV_NET__SETTINGS; k++) {
		free(value[k]);
		value[k] = NULL;
		level[k] = 0;
	}
}
