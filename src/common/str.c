/* String and path helpers; see str.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/str.h"
#include "dsview/dsview.h"

int dsv_has_ext(const char *name, const char *ext)
{
	size_t n = dsv_url_shown_len(name), m = strlen(ext);
	return n >= m && !strncasecmp(name + n - m, ext, m);
}

size_t dsv_url_scheme_len(const char *url)
{
	static const char *const schemes[] = { "s3://", "https://", "http://" };
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (!strncmp(url, schemes[i], strlen(schemes[i])))
			return strlen(schemes[i]);
	return 0;
}

size_t dsv_url_shown_len(const char *spec)
{
	return dsv_url_scheme_len(spec) ? strcspn(spec, "?#") : strlen(spec);
}

int dsv_has_glob(const char *name)
{
	return strpbrk(name, "*?[") != NULL;
}

int dsv_natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *ea = a, *eb = b;
			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			size_t na = 0, nb = 0;
			while (isdigit((unsigned char)a[na]))
				na++;
			while (isdigit((unsigned char)b[nb]))
				nb++;
			if (na != nb)
				return na < nb ? -1 : 1;
			int c = memcmp(a, b, na);
			if (c)
				return c < 0 ? -1 : 1;
			a += na;
			b += nb;
			/* equal values: fewer leading zeros first, as a tie-break */
			if ((a - ea) != (b - eb))
				return (a - ea) < (b - eb) ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}

/* How many leading bytes every one of names[0 .. n) shares, ended where
 * no run of digits goes on across it: the names compare in natural order
 * as their rests from there do (a glob's matches share their directory
 * and usually a stem, which every comparison would walk again). */
static size_t shared_prefix(char *const *names, size_t n)
{
	size_t p = strlen(names[0]);
	for (size_t i = 1; i < n && p; i++) {
		size_t k = 0;
		while (k < p && names[i][k] == names[0][k])
			k++;
		p = k;
	}
	while (p && isdigit((unsigned char)names[0][p - 1]))
		p--;
	return p;
}

static int natural_cmp_from(const void *a, const void *b, void *skip)
{
	size_t p = *(const size_t *)skip;
	return dsv_natural_cmp(*(char *const *)a + p, *(char *const *)b + p);
}

void dsv_natural_sort(char **names, size_t n)
{
	size_t i = 1, p;
	if (n < 2) /* none: names may be NULL, which qsort must not get */
		return;
	p = shared_prefix(names, n);
	/* names listed in order already (a glob's, numbered with leading
	 * zeros) are checked in one pass, not sorted again */
	while (i < n && natural_cmp_from(&names[i - 1], &names[i], &p) <= 0)
		i++;
	if (i < n)
		qsort_r(names, n, sizeof(*names), natural_cmp_from, &p);
}

int dsv_parse_gpu(const char *s, int *device)
{
	char *end;
	long v;

	if (!s)
		return DSV_ERR_INVALID;
	if (!strcmp(s, "auto")) {
		*device = DSV_GPU_AUTO;
		return 0;
	}
	if (!strcmp(s, "off")) {
		*device = DSV_GPU_OFF;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return DSV_ERR_INVALID;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v > INT_MAX)
		return DSV_ERR_INVALID;
	*device = (int)v;
	return 0;
}

static int is_shape_separator(char c)
{
	return c == ',' || c == ' ' || c == '\t' || c == 'x' || c == '(' || c == ')';
}

int dsv_parse_shape(const char *s, int *ndim, int64_t shape[DSV_MAX_DIMS])
{
	int n = 0, unknown = 0;

	for (;;) {
		char *end;
		while (is_shape_separator(*s))
			s++;
		if (!*s)
			break;
		if (n == DSV_MAX_DIMS)
			return DSV_ERR_INVALID;
		errno = 0;
		long long v = strtoll(s, &end, 10);
		if (end == s || errno || v < -1 || (v == 0 && n > 0) || (v == -1 && unknown++) ||
		    (*end && !is_shape_separator(*end))) /* "3-1" is no shape */
			return DSV_ERR_INVALID;
		shape[n++] = v;
		s = end;
	}
	*ndim = n;
	return n > 0 ? 0 : DSV_ERR_INVALID;
}

int dsv_parse_offset(const char *s, uint64_t *out)
{
	char *end;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s < '0' || *s > '9')
		return DSV_ERR_INVALID;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	if (*end || errno || v > INT64_MAX)
		return DSV_ERR_INVALID;
	*out = v;
	return 0;
}

int dsv_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > DSV_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (name[0] == '.')
		return 0; /* hidden names are reserved (/.stats.json) */
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

static int name_byte_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

size_t dsv_name_escape(char *dst, size_t dst_cap, const char *src)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		int keep = name_byte_ok(*p) && !(*p == '.' && p == (const unsigned char *)src) &&
			   !(*p == '_' && p[1] == 'x');
		char esc[4] = { '_', 'x', hex[*p >> 4], hex[*p & 15] };
		const char *out = keep ? (const char *)p : esc;
		size_t len = keep ? 1 : 4;
		for (size_t k = 0; k < len; k++, n++)
			if (n + 1 < dst_cap)
				dst[n] = out[k];
	}
	if (dst_cap)
		dst[n < dst_cap ? n : dst_cap - 1] = '\0';
	return n;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int dsv_name_unescape(char *dst, size_t dst_cap, const char *src)
{
	size_t n = 0, len = strlen(src);
	for (size_t i = 0; i < len; n++) {
		unsigned char c;
		if (src[i] == '_' && src[i + 1] == 'x') {
			int hi = hex_digit(src[i + 2]), lo = hi < 0 ? -1 : hex_digit(src[i + 3]);
			if (lo < 0)
				return DSV_ERR_INVALID;
			c = (unsigned char)(hi * 16 + lo);
			/* only what dsv_name_escape writes: the map stays one-to-one */
			if (c == 0 || (name_byte_ok(c) && !(c == '.' && i == 0) &&
				       !(c == '_' && src[i + 4] == 'x')))
				return DSV_ERR_INVALID;
			i += 4;
		} else if (name_byte_ok((unsigned char)src[i]) && !(src[i] == '.' && i == 0)) {
			c = (unsigned char)src[i++];
		} else {
			return DSV_ERR_INVALID;
		}
		if (n + 1 >= dst_cap)
			return DSV_ERR_OVERFLOW;
		dst[n] = (char)c;
	}
	if (!dst_cap)
		return DSV_ERR_OVERFLOW;
	dst[n] = '\0';
	return n > INT_MAX ? DSV_ERR_OVERFLOW : (int)n;
}

const char *dsv_shown(const char *name, size_t n, size_t max, char *out)
{
	char *o = out;
	for (size_t i = 0; i < n && i < max; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			*o++ = (char)ch;
		else
			o += sprintf(o, "\\x%02x", ch);
	}
	strcpy(o, n > max ? "..." : "");
	return out;
}

void dsv_mountinfo_unescape(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}
