/*
 * dsview status: every dsview mount on the machine (or one), from the
 * mount table and each mount's /.stats.json: source, pid, start and
 * uptime, backend, views, the bytes made for readers (served on request,
 * made ahead by the readahead and for hints), cache hit rate and use, read
 * errors, log. Also the mount-table reader that umount shares.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "common/str.h"
#include "cli/progress.h"
#include "common/clock.h"

static const char status_usage[] =
	"usage: dsview status [--json] [--watch[=SECONDS]] [MOUNTPOINT]\n"
	"\n"
	"Lists every dsview mount (or the one at MOUNTPOINT): its source (manifest\n"
	"or file), the daemon's pid, when it started and its uptime, backend,\n"
	"views, the bytes made for readers -- served on request (\"bytes_served\")\n"
	"and made ahead of them into the page cache by the readahead\n"
	"(\"bytes_readahead\") and for a loader's hints (\"bytes_hinted\") -- and\n"
	"their average rate since the start (\"mb_per_s\"), the chunk cache's hit\n"
	"rate and use, read errors, and where the daemon logs. A mount whose\n"
	"daemon died is listed as dead (dsview umount detaches it); one another\n"
	"user mounted, which this user may not read, as not inspectable.\n"
	"\n"
	"options:\n"
	"  --json       one JSON array, an object per mount (\"started\" in Unix\n"
	"               seconds)\n"
	"  --watch[=S]  again every S seconds (default " DSV_DEFAULT_WATCH_TEXT
	") until interrupted, each\n"
	"               pass headed by the local time, with each mount's MB/s\n"
	"               since the last pass (\"mb_per_s_now\"); with --json, one\n"
	"               array per line\n"
	"  -h, --help   this help\n"
	"\n"
	"Exit status: 0, or 1 when MOUNTPOINT is not a dsview mount.\n";

int dsv_cli_each_mount(int (*fn)(const dsv_cli_mount *mnt, void *arg), void *arg)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[3 * PATH_MAX];
	int rc = 0;
	if (!f)
		return -1;
	while (!rc && fgets(line, sizeof(line), f)) {
		dsv_cli_mount mnt;
		/* id parent maj:min root mountpoint opts ... - type source superopts */
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt.point) != 1 ||
		    sscanf(dash + 3, "%255s %4095s", mnt.type, mnt.source) != 2)
			continue;
		dsv_mountinfo_unescape(mnt.point);
		dsv_mountinfo_unescape(mnt.source);
		const char *uid = strstr(dash, "user_id=");
		mnt.uid = uid ? strtol(uid + 8, NULL, 10) : -1;
		rc = fn(&mnt, arg);
	}
	fclose(f);
	return 0;
}

typedef struct status_job {
	const char *only; /* a mountpoint, or NULL for all */
	int found;
	json_t *list; /* this pass's entries */
} status_job;

/* The bytes dsview made for a mount's readers: served on request, and
 * stored ahead of them by the readahead and for sampler hints. */
static json_int_t bytes_made(const json_t *st)
{
	return dsv_cli_jint(st, "bytes_served") + dsv_cli_jint(st, "bytes_readahead") +
	       dsv_cli_jint(st, "bytes_hinted");
}

/* Object storage's counters and the disk cache's, for mounts that use
 * them, copied from .stats.json (st) into the entry (out). */
static void add_net(json_t *out, const json_t *st)
{
	static const char *const net[] = { "net_heads", "net_gets", "net_bytes", "net_retries",
					   "net_failures" };
	static const char *const disk[] = { "disk_cache_hits",      "disk_cache_misses",
					    "disk_cache_hit_bytes", "disk_cache_evictions",
					    "disk_cache_corrupt",   "disk_cache_size",
					    "disk_cache_used" };
	for (size_t i = 0; dsv_cli_jint(st, "net_heads") && i < sizeof(net) / sizeof(*net); i++)
		json_object_set_new(out, net[i], json_integer(dsv_cli_jint(st, net[i])));
	for (size_t i = 0; dsv_cli_jint(st, "disk_cache_size") && i < sizeof(disk) / sizeof(*disk);
	     i++)
		json_object_set_new(out, disk[i], json_integer(dsv_cli_jint(st, disk[i])));
}

/* One mount's entry: what its .stats.json says, with uptime and rates.
 * Paths from the mount table may hold bytes that are not UTF-8, which a
 * JSON string cannot: those are written \xNN. */
static json_t *describe(const dsv_cli_mount *mnt)
{
	char path[PATH_MAX + 32];
	json_error_t je;
	snprintf(path, sizeof(path), "%s/.stats.json", mnt->point);
	json_t *st = json_load_file(path, 0, &je), *out;
	int saved = errno;
	if (!json_is_object(st) && (saved == EACCES || saved == EPERM)) {
		/* not ours to read: FUSE lets only the user who mounted it in */
		char why[160];
		json_decref(st);
		snprintf(why, sizeof(why),
			 "mounted by user %ld: only that user (or -o allow_other) can read it (%s)",
			 mnt->uid, strerror(saved));
		return json_pack("{s:s, s:s, s:n, s:s}", "mountpoint",
				 dsv_cli_escaped(mnt->point, 0), "source",
				 dsv_cli_escaped(mnt->source, 0), "alive", "why", why);
	}
	if (!json_is_object(st)) {
		json_decref(st);
		return json_pack(
			"{s:s, s:s, s:b, s:s}", "mountpoint", dsv_cli_escaped(mnt->point, 0),
			"source", dsv_cli_escaped(mnt->source, 0), "alive", 0, "why",
			saved == ENOTCONN ? "the daemon is gone (dsview umount detaches it)"
					  : strerror(saved));
	}
	time_t now = time(NULL);
	json_int_t started = dsv_cli_jint(st, "started");
	json_int_t up = started ? (json_int_t)now - started : 0;
	json_int_t hits = dsv_cli_jint(st, "cache_hits"), misses = dsv_cli_jint(st, "cache_misses");
	out = json_pack(
		"{s:s, s:s, s:b, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:o, s:I, s:I, "
		"s:I, s:s}",
		"mountpoint", dsv_cli_escaped(mnt->point, 0), "source",
		dsv_cli_escaped(mnt->source, 0), "alive", 1, "pid", dsv_cli_jint(st, "pid"),
		"started", started, "uptime_s", up, "backend", dsv_cli_jstr(st, "backend", "?"),
		"views", dsv_cli_jint(st, "views"), "read_requests",
		dsv_cli_jint(st, "read_requests"), "bytes_served", dsv_cli_jint(st, "bytes_served"),
		"bytes_readahead", dsv_cli_jint(st, "bytes_readahead"), "bytes_hinted",
		dsv_cli_jint(st, "bytes_hinted"), "mb_per_s",
		up > 0 ? (double)bytes_made(st) / 1e6 / (double)up : 0.0, "cache_hit_rate",
		hits + misses ? json_real((double)hits / (double)(hits + misses)) : json_null(),
		"cache_bytes", dsv_cli_jint(st, "cache_bytes"), "cache_budget",
		dsv_cli_jint(st, "cache_budget"), "read_errors", dsv_cli_jint(st, "read_errors"),
		"log", dsv_cli_jstr(st, "log", "?"));
	if (out)
		add_net(out, st);
	json_decref(st);
	return out;
}

/* t as local time, with the date (long) or the time of day alone. */
static const char *local_time(char *buf, size_t cap, time_t t, int date)
{
	struct tm tm;
	if (!localtime_r(&t, &tm) ||
	    !strftime(buf, cap, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm))
		snprintf(buf, cap, "?");
	return buf;
}

/* Who serves, since when, and what it made for its readers. */
static void print_made(const json_t *e)
{
	char a[32], b[32], c[32];
	json_int_t up = dsv_cli_jint(e, "uptime_s"), reqs = dsv_cli_jint(e, "read_requests");
	printf("  pid %lld, started %s (up %lldh%02lldm%02llds), backend %s, %lld view%s\n",
	       (long long)dsv_cli_jint(e, "pid"),
	       local_time(a, sizeof(a), (time_t)dsv_cli_jint(e, "started"), 1),
	       (long long)(up / 3600), (long long)(up / 60 % 60), (long long)(up % 60),
	       dsv_cli_jstr(e, "backend", "?"), (long long)dsv_cli_jint(e, "views"),
	       dsv_cli_jint(e, "views") == 1 ? "" : "s");
	printf("  served %s on request (%lld read request%s); made ahead %s by readahead, %s "
	       "for hints\n",
	       dsv_fmt_bytes(a, sizeof(a), (uint64_t)dsv_cli_jint(e, "bytes_served")),
	       (long long)reqs, reqs == 1 ? "" : "s",
	       dsv_fmt_bytes(b, sizeof(b), (uint64_t)dsv_cli_jint(e, "bytes_readahead")),
	       dsv_fmt_bytes(c, sizeof(c), (uint64_t)dsv_cli_jint(e, "bytes_hinted")));
	printf("  %s in all, %.1f MB/s on average\n",
	       dsv_fmt_bytes(a, sizeof(a), (uint64_t)bytes_made(e)),
	       json_real_value(json_object_get(e, "mb_per_s")));
}

static void print_cache(const json_t *e)
{
	char a[32], b[32], c[32];
	json_t *rate = json_object_get(e, "cache_hit_rate");
	if (json_is_real(rate))
		printf("  chunk cache hit rate %.1f%%", 100 * json_real_value(rate));
	else
		printf("  chunk cache not used yet");
	printf(" (%s of %s), %lld read error%s\n",
	       dsv_fmt_bytes(b, sizeof(b), (uint64_t)dsv_cli_jint(e, "cache_bytes")),
	       dsv_fmt_bytes(c, sizeof(c), (uint64_t)dsv_cli_jint(e, "cache_budget")),
	       (long long)dsv_cli_jint(e, "read_errors"),
	       dsv_cli_jint(e, "read_errors") == 1 ? "" : "s");
	if (json_object_get(e, "net_heads"))
		printf("  object storage: %lld objects, %lld GETs, %s fetched, %lld retries, %lld "
		       "failed reads\n",
		       (long long)dsv_cli_jint(e, "net_heads"),
		       (long long)dsv_cli_jint(e, "net_gets"),
		       dsv_fmt_bytes(a, sizeof(a), (uint64_t)dsv_cli_jint(e, "net_bytes")),
		       (long long)dsv_cli_jint(e, "net_retries"),
		       (long long)dsv_cli_jint(e, "net_failures"));
	if (json_object_get(e, "disk_cache_size"))
		printf("  disk cache: %lld hits, %lld misses, %s served, %s of %s, %lld evicted, "
		       "%lld damaged dropped\n",
		       (long long)dsv_cli_jint(e, "disk_cache_hits"),
		       (long long)dsv_cli_jint(e, "disk_cache_misses"),
		       dsv_fmt_bytes(a, sizeof(a),
				     (uint64_t)dsv_cli_jint(e, "disk_cache_hit_bytes")),
		       dsv_fmt_bytes(b, sizeof(b), (uint64_t)dsv_cli_jint(e, "disk_cache_used")),
		       dsv_fmt_bytes(c, sizeof(c), (uint64_t)dsv_cli_jint(e, "disk_cache_size")),
		       (long long)dsv_cli_jint(e, "disk_cache_evictions"),
		       (long long)dsv_cli_jint(e, "disk_cache_corrupt"));
}

static void print_text(const json_t *e)
{
	printf("%s  %s\n", dsv_cli_shown(dsv_cli_jstr(e, "mountpoint", "?")),
	       dsv_cli_shown(dsv_cli_jstr(e, "source", "?")));
	if (json_is_null(json_object_get(e, "alive"))) {
		printf("  not inspectable: %s\n", dsv_cli_jstr(e, "why", "?"));
		return;
	}
	if (!json_is_true(json_object_get(e, "alive"))) {
		printf("  dead: %s\n", dsv_cli_jstr(e, "why", "?"));
		return;
	}
	print_made(e);
	print_cache(e);
	printf("  log %s\n", dsv_cli_shown(dsv_cli_jstr(e, "log", "?")));
}

static int each(const dsv_cli_mount *mnt, void *arg)
{
	status_job *j = arg;
	if (strcmp(mnt->type, "fuse.dsview") || (j->only && strcmp(mnt->point, j->only)))
		return 0;
	json_t *e = describe(mnt);
	if (!e)
		return 0;
	j->found++;
	json_array_append_new(j->list, e);
	return 0;
}

/* --watch: each entry's MB/s since the last pass ("mb_per_s_now"), from
 * the bytes made for readers then (prev, NULL on the first pass) and now. */
static void add_rates(json_t *list, const json_t *prev, double secs)
{
	size_t i, k;
	json_t *e, *p;
	json_array_foreach(list, i, e)
	{
		json_array_foreach(prev, k, p)
		{
			if (secs > 0 && json_is_true(json_object_get(e, "alive")) &&
			    !strcmp(dsv_cli_jstr(e, "mountpoint", "?"),
				    dsv_cli_jstr(p, "mountpoint", "?")) &&
			    dsv_cli_jint(e, "pid") == dsv_cli_jint(p, "pid"))
				json_object_set_new(
					e, "mb_per_s_now",
					json_real((double)(bytes_made(e) - bytes_made(p)) / 1e6 /
						  secs));
		}
	}
}

static void print_all(const json_t *list, int json, int watch)
{
	size_t i;
	json_t *e;
	if (json) {
		char *s = json_dumps(list, watch ? JSON_COMPACT | JSON_PRESERVE_ORDER
						 : JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (s)
			printf("%s\n", s);
		free(s);
		return;
	}
	json_array_foreach(list, i, e)
	{
		printf("%s", i ? "\n" : "");
		print_text(e);
		json_t *now = json_object_get(e, "mb_per_s_now");
		if (now)
			printf("  now %.1f MB/s\n", json_real_value(now));
	}
}

int dsv_cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	status_job j = { 0 };
	char mp[PATH_MAX];
	int c, json = 0, watch = 0;
	json_t *prev = NULL;
	double t_prev = 0;

	dsv_cli_getopt_start();
	while ((c = dsv_cli_getopt("status", argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'w':
			watch = DSV_DEFAULT_WATCH_S;
			if (optarg && dsv_cli_int_arg("--watch", optarg, 1, 3600, &watch))
				return EXIT_USER;
			break;
		case 'h': fputs(status_usage, stdout); return EXIT_OK;
		default: return EXIT_USER;
		}
	}
	if (dsv_cli_operands("status", argc, argv, 0, 1, "[MOUNTPOINT]"))
		return EXIT_USER;
	if (optind < argc) {
		/* resolve the parent only: the mount itself may be dead */
		dsv_cli_absolute(argv[optind], mp, sizeof(mp));
		j.only = mp;
	}
	for (;;) { /* once, or every --watch seconds until interrupted */
		j.found = 0;
		j.list = json_array();
		double t = dsv_now();
		if (!j.list || dsv_cli_each_mount(each, &j) < 0) {
			dsv_cli_error("cannot read /proc/self/mountinfo: %s", strerror(errno));
			json_decref(j.list);
			json_decref(prev);
			return EXIT_INTERNAL;
		}
		if (j.only && !j.found) {
			dsv_cli_error("%s: not a dsview mount", j.only);
			json_decref(j.list);
			json_decref(prev);
			return EXIT_USER;
		}
		add_rates(j.list, prev, t - t_prev);
		if (watch && !json) {
			char at[32];
			if (isatty(1))
				printf("\033[H\033[J"); /* a terminal: redraw in place */
			printf("--- %s\n", local_time(at, sizeof(at), time(NULL), 0));
		}
		print_all(j.list, json, watch);
		if (!json && !j.found)
			printf("no dsview mounts\n");
		fflush(stdout);
		json_decref(prev);
		prev = j.list;
		t_prev = t;
		if (!watch)
			break;
		sleep((unsigned)watch);
	}
	json_decref(prev);
	return EXIT_OK;
}
