/*
 * dsview as a mount helper, for mount -t fuse.dsview and /etc/fstab.
 * mount(8) runs /sbin/mount.fuse.dsview SOURCE MOUNTPOINT [-sfnv] [-o OPTS]
 * [-t TYPE] (make install links it to dsview); without that link, fuse3's
 * mount.fuse3 runs "dsview SOURCE MOUNTPOINT -o OPTS". Both become dsview
 * mount, with the -o options sorted: dsview's own (cache_size=S,
 * threads=N, readahead=S, gpu=G, gpu_cache=S, disk_cache=DIR,
 * disk_cache_size=S, index_cache=DIR, dtype=T, log=FILE, log_level=L, strict)
 * become its options, mount(8)'s and fstab's (rw, ro, defaults, noauto,
 * _netdev, nofail, x-systemd.*, ...) are dropped (the mount is always
 * read-only, nosuid, nodev), and the rest go to FUSE (allow_other,
 * max_read=N, nonempty, ...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* mount(8)'s and fstab's own options: not for FUSE or dsview */
static const char *const dropped[] = {
	"rw",         "ro",       "defaults",   "auto",        "noauto",   "user",       "nouser",
	"users",      "owner",    "group",      "_netdev",     "nofail",   "exec",       "noexec",
	"suid",       "nosuid",   "dev",        "nodev",       "async",    "sync",       "atime",
	"noatime",    "relatime", "norelatime", "strictatime", "diratime", "nodiratime", "lazytime",
	"nolazytime", "loud",     "silent",     "mand",        "nomand",   NULL,
};

/* -o key=value of dsview's own and the mount option each becomes */
static const struct {
	const char *key, *opt;
} own[] = {
	{ "cache_size", "--cache-size" },
	{ "threads", "--threads" },
	{ "readahead", "--readahead" },
	{ "gpu", "--gpu" },
	{ "gpu_cache", "--gpu-cache" },
	{ "disk_cache", "--disk-cache" },
	{ "disk_cache_size", "--disk-cache-size" },
	{ "index_cache", "--index-cache" },
	{ "dtype", "--dtype" },
	{ "log", "--log" },
	{ "log_level", "--log-level" },
};

#define MAX_ARGS 64

typedef struct helper_args {
	char *argv[MAX_ARGS];
	int argc;
	char fuse[1024];
} helper_args;

static int push(helper_args *h, char *arg)
{
	if (h->argc >= MAX_ARGS - 1) {
		dsv_cli_error("mount helper: too many options");
		return -1;
	}
	h->argv[h->argc++] = arg;
	return 0;
}

/* Sorts one -o list (split at ','; opts is modified) into h. */
static int sort_opts(helper_args *h, char *opts)
{
	for (char *save = NULL, *o = strtok_r(opts, ",", &save); o;
	     o = strtok_r(NULL, ",", &save)) {
		int done = 0;
		for (size_t i = 0; dropped[i] && !done; i++)
			done = !strcmp(o, dropped[i]);
		if (done || !strncmp(o, "x-", 2) || !strncmp(o, "comment=", 8))
			continue;
		if (!strcmp(o, "strict")) {
			if (push(h, (char *)"--strict"))
				return -1;
			continue;
		}
		char *eq = strchr(o, '=');
		for (size_t i = 0; eq && !done && i < sizeof(own) / sizeof(own[0]); i++) {
			if ((size_t)(eq - o) == strlen(own[i].key) &&
			    !strncmp(o, own[i].key, (size_t)(eq - o))) {
				if (push(h, (char *)own[i].opt) || push(h, eq + 1))
					return -1;
				done = 1;
			}
		}
		if (done)
			continue;
		size_t len = strlen(h->fuse);
		if (len + strlen(o) + 2 > sizeof(h->fuse)) {
			dsv_cli_error("mount helper: -o options too long");
			return -1;
		}
		snprintf(h->fuse + len, sizeof(h->fuse) - len, "%s%s", len ? "," : "", o);
	}
	return 0;
}

int dsv_cmd_mount_helper(int argc, char **argv)
{
	static helper_args h;
	char *operands[2];
	int n = 0, fake = 0;

	h.argc = 0;
	h.fuse[0] = '\0';
	push(&h, (char *)"mount");
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (!strcmp(a, "-o") || !strcmp(a, "-t")) {
			if (i + 1 >= argc) {
				dsv_cli_error("mount helper: option '%s' needs a value", a);
				return EXIT_USER;
			}
			if (a[1] == 'o' && sort_opts(&h, argv[++i]))
				return EXIT_USER;
			if (a[1] == 't' && strcmp(argv[++i], "fuse.dsview") &&
			    strcmp(argv[i], "dsview")) {
				dsv_cli_error("mount helper: type '%s' is not fuse.dsview",
					      argv[i]);
				return EXIT_USER;
			}
		} else if (!strncmp(a, "-o", 2)) {
			if (sort_opts(&h, a + 2))
				return EXIT_USER;
		} else if (a[0] == '-' && a[1] && strspn(a + 1, "sfnv") == strlen(a + 1)) {
			fake |= strchr(a, 'f') != NULL; /* -f: everything but the mount */
		} else if (a[0] == '-' && a[1]) {
			dsv_cli_error(
				"mount helper: unknown option '%s' (see man dsview, MOUNT HELPER)",
				a);
			return EXIT_USER;
		} else if (n < 2) {
			operands[n++] = a;
		} else {
			dsv_cli_error("mount helper: unexpected argument '%s'", a);
			return EXIT_USER;
		}
	}
	if (n < 2) {
		dsv_cli_error("mount helper: usage: mount.fuse.dsview SOURCE MOUNTPOINT [-o OPTS]");
		return EXIT_USER;
	}
	if (fake)
		return EXIT_OK;
	if ((h.fuse[0] && (push(&h, (char *)"-o") || push(&h, h.fuse))) || push(&h, (char *)"--") ||
	    push(&h, operands[0]) || push(&h, operands[1]))
		return EXIT_USER;
	h.argv[h.argc] = NULL;
	return dsv_cmd_mount(h.argc, h.argv);
}

int dsv_cli_is_helper_call(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (!strcmp(base, "mount.fuse.dsview"))
		return 1;
	/* mount.fuse3: dsview SOURCE MOUNTPOINT [-o OPTS], SOURCE an existing
	 * file (a mistyped command stays an unknown command) */
	return (argc == 3 || (argc == 5 && !strcmp(argv[3], "-o"))) && argv[1][0] != '-' &&
	       argv[2][0] != '-' && access(argv[1], F_OK) == 0;
}
