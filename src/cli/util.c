/*
 * Helpers every subcommand shares: the one-line error, integer options,
 * and names from files made safe to print. Apart from main.c so that
 * tests/unit/test_cli.c links the subcommands without a main().
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/str.h"
#include "dsview/dsview.h"
#include "dsview/view.h"
#include "net/net.h"

/* Length of the valid UTF-8 sequence at s (shortest form, no surrogates),
 * with its code point in *cp; 0 if s does not start one. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	size_t n;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, *cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, *cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, *cp = s[0] & 0x07u;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3fu);
	}
	if ((n == 3 && *cp < 0x800) || (n == 4 && *cp < 0x10000) ||
	    (*cp >= 0xd800 && *cp <= 0xdfff) || *cp > 0x10ffff)
		return 0;
	return n;
}

const char *dsv_cli_escaped(const char *s, int terminal)
{
	static char *ring[8];
	static unsigned next;
	const unsigned char *p = (const unsigned char *)s;
	char *out = realloc(ring[next % 8], 4 * strlen(s) + 1), *o;
	if (!out)
		return "(out of memory)";
	ring[next++ % 8] = out;
	o = out;
	while (*p) {
		uint32_t cp;
		size_t n = utf8_seq(p, &cp);
		if (terminal && (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)))
			n = 0;
		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			o += sprintf(o, "\\x%02x", *p++);
		}
	}
	*o = '\0';
	return out;
}

const char *dsv_cli_shown(const char *s)
{
	return dsv_cli_escaped(s, 1);
}

const char *dsv_cli_path_escaped(const char *path, int terminal)
{
	char *cut = strndup(path, dsv_url_shown_len(path));
	const char *out = cut ? dsv_cli_escaped(cut, terminal) : "(out of memory)";
	free(cut);
	return out;
}

void dsv_cli_error(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "dsview: %s\n", dsv_cli_shown(line));
}

int dsv_cli_int_arg(const char *opt, const char *arg, long lo, long hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		dsv_cli_error("%s '%s' must be an integer from %ld to %ld", opt, arg, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

const char *dsv_cli_reason(const dsv_errbuf *eb, const char *file, const char *dataset)
{
	if (!strcmp(eb->file, file) && (!eb->where[0] || (dataset && !strcmp(eb->where, dataset))))
		return eb->reason;
	return eb->msg;
}

void dsv_cli_getopt_start(void)
{
	optind = 0; /* 0, not 1: GNU getopt then starts afresh, its own state too */
}

int dsv_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
		   const struct option *longopts)
{
	char spec[64];
	/* ':' first: a missing value is ':' apart from an unknown option '?' */
	snprintf(spec, sizeof(spec), ":%s", shortopts);
	opterr = 0;
	int c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	/* A long option's word is the one getopt just stepped over; a short
	 * one is optopt (maybe inside a cluster such as -zq). */
	const char *w = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	char name[64];
	int valued = 0;
	if (!strncmp(w, "--", 2) && w[2]) {
		snprintf(name, sizeof(name), "%.60s", w);
		char *eq = strchr(name, '=');
		if (eq) {
			*eq = '\0';
			valued = 1;
		}
	} else {
		snprintf(name, sizeof(name), "-%c", optopt ? optopt : '?');
	}
	if (c == ':')
		dsv_cli_error("option '%s' needs a value (try 'dsview %s --help')", name, cmd);
	else if (valued && optopt) /* --force=1: a known option that takes none */
		dsv_cli_error("option '%s' takes no value (try 'dsview %s --help')", name, cmd);
	else
		dsv_cli_error("unknown option '%s' (try 'dsview %s --help')", name, cmd);
	return '?';
}

int dsv_cli_operands(const char *cmd, int argc, char **argv, int min, int max, const char *what)
{
	int n = argc - optind;
	if (n < min) {
		dsv_cli_error("missing %s (try 'dsview %s --help')", what, cmd);
		return -1;
	}
	if (n > max) {
		dsv_cli_error("unexpected argument '%s': %s takes %s (try 'dsview %s --help')",
			      argv[optind + max], cmd, what, cmd);
		return -1;
	}
	return 0;
}

/* v as the largest binary unit it is a whole multiple of: 4K, 64M, 3 */
static void size_str(uint64_t v, char *buf, size_t cap)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (u < 3 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, cap, "%llu", (unsigned long long)v);
	else
		snprintf(buf, cap, "%llu%c", (unsigned long long)v, units[u]);
}

int dsv_cli_size_arg(const char *opt, const char *arg, uint64_t unit, uint64_t max,
		     const char *max_what, uint64_t *out)
{
	char a[32], b[32];
	uint64_t v;
	if (dsv_parse_size(arg, &v)) {
		dsv_cli_error("%s '%s' is not a size (e.g. 512K, 64M, 2G)", opt, arg);
		return -1;
	}
	if (unit > 1 && v % unit) {
		size_str(unit, a, sizeof(a));
		dsv_cli_error("%s '%s' is not a whole multiple of %s", opt, arg, a);
		return -1;
	}
	if (max && v > max) {
		size_str(max, a, sizeof(a));
		snprintf(b, sizeof(b), "%.1f GiB", (double)max / (1u << 30));
		dsv_cli_error("%s '%s' exceeds %s (%s)", opt, arg, max_what,
			      max >= (1ull << 30) ? b : a);
		return -1;
	}
	*out = v;
	return 0;
}

void dsv_cli_absolute(const char *in, char *out, size_t cap)
{
	char parent[PATH_MAX], tmp[PATH_MAX + 1];
	const char *slash;
	snprintf(tmp, sizeof(tmp), "%s", in);
	size_t n = strlen(tmp);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	slash = strrchr(tmp, '/');
	if (slash) {
		snprintf(parent, sizeof(parent), "%.*s",
			 (int)(slash - tmp) ? (int)(slash - tmp) : 1, tmp);
		char *real = realpath(parent, NULL);
		if (real) {
			snprintf(out, cap, "%s%s%s", real, strcmp(real, "/") ? "/" : "", slash + 1);
			free(real);
			return;
		}
	} else if (getcwd(parent, sizeof(parent))) {
		snprintf(out, cap, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", tmp);
		return;
	}
	snprintf(out, cap, "%s", tmp);
}

json_int_t dsv_cli_jint(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key); /* NULL if o is NULL or not an object */
	return json_is_integer(v) ? json_integer_value(v) : 0;
}

const char *dsv_cli_jstr(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : def;
}

int dsv_cli_disk_cache(const dsv_manifest *m, const char *dir, const char *size_arg)
{
	uint64_t size = m && m->has_disk_cache_size ? m->disk_cache_size
						    : (uint64_t)DSV_DEFAULT_DISK_CACHE_GIB << 30;
	dsv_errbuf eb;

	if (!m && !dir && size_arg) {
		dsv_cli_error("--disk-cache-size needs a directory (--disk-cache DIR)");
		return -1;
	}
	if (m && !dir && !m->disk_cache && m->has_disk_cache_size) {
		dsv_cli_error("%s: disk_cache_size needs disk_cache (or --disk-cache DIR)",
			      m->path);
		return -1;
	}
	if (m && dir && (size_arg || !m->has_disk_cache_size))
		return 0; /* set before the manifest was read */
	if (m && !dir)
		dir = m->disk_cache;
	if (size_arg && dsv_cli_size_arg("--disk-cache-size", size_arg, 1, 0, NULL, &size))
		return -1;
	if (!size) {
		dsv_cli_error("--disk-cache-size '%s' must be above 0", size_arg);
		return -1;
	}
	if (dir && dsv_net_disk_cache(dir, size, &eb)) {
		dsv_cli_error("%s", eb.msg);
		return -1;
	}
	return 0;
}
