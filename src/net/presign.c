/*
 * What a presigned URL's query says about itself: AWS Signature V4 puts
 * the signing time in X-Amz-Date (YYYYMMDDTHHMMSSZ, UTC) and the seconds
 * it stays valid in X-Amz-Expires, so a refused GET (403) of such a URL
 * can say that it expired rather than blame the credentials. The query is
 * read, never shown: it holds the signature.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/net_i.h"

/* The value of parameter name ("X-Amz-Date=") in query, or NULL; *len
 * its length up to the next '&' or '#'. */
static const char *param(const char *query, const char *name, size_t *len)
{
	size_t n = strlen(name);
	for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (!strncmp(p, name, n)) {
			*len = strcspn(p + n, "&#");
			return p + n;
		}
	}
	return NULL;
}

int dsv_net_presign_expiry(const char *url, time_t *expires)
{
	const char *q = strchr(url, '?'), *date, *secs;
	size_t dlen, slen;
	char d[17], s[16], *end;
	struct tm tm = { 0 };

	if (!q || !(date = param(q + 1, "X-Amz-Date=", &dlen)) ||
	    !(secs = param(q + 1, "X-Amz-Expires=", &slen)) || dlen != 16 || !slen ||
	    slen >= sizeof(s))
		return 0;
	memcpy(d, date, 16);
	d[16] = '\0';
	memcpy(s, secs, slen);
	s[slen] = '\0';
	long valid = strtol(s, &end, 10);
	if (*end || valid < 0 || d[8] != 'T' || d[15] != 'Z' ||
	    sscanf(d, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t signed_at = timegm(&tm);
	if (signed_at == (time_t)-1)
		return 0;
	*expires = signed_at + (time_t)valid;
	return 1;
}
