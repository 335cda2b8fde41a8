/*
 * dsview mount: validate everything, mount, daemonise, return once the mount
 * answers. The order matters:
 *  1. load and check the manifest and every source (no mount yet: a user
 *     error leaves nothing behind);
 *  2. mount (fuse_session_mount) in this process, so mount errors are ours
 *     to report;
 *  3. fork before any thread exists; the child serves. The parent closes
 *     its copy of /dev/fuse (so a dying child aborts the connection instead
 *     of leaving stat() hanging), then stat()s the mountpoint, which only
 *     returns once the child's loop answered. Then the parent _exit()s
 *     without touching the mount or HDF5.
 * dsv_cmd_mount runs these steps, one function each: parse_args,
 * load_manifest, fs_options, prepare_mountpoint, mount_and_serve.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/raw_opts.h"
#include "cli/cli.h"
#include "common/cgroup.h"
#include "common/log.h"
#include "common/str.h"
#include "dsview/fs.h"
#include "dsview/view.h"
#include "net/net.h"
#include "manifest/manifest.h"
#include "source/source.h"
#include "view/view.h"

/* The readahead default's text; the number is the public header's. */
#define DEFAULT_READAHEAD_TEXT DSV_STR(DSV_FS_DEFAULT_READAHEAD_KIB) "K"

static const char mount_usage[] =
	"usage: dsview mount [OPTIONS] SOURCE [MOUNTPOINT]\n"
	"\n"
	"SOURCE is a manifest (.ini), a single .npy / .h5 file (every array in it\n"
	"becomes a view, cast to --dtype), a raw file (with --source-dtype and\n"
	"--source-shape), or a directory of them (each .h5 file a\n"
	"directory of its arrays; EEG recordings, .edf/.bdf/.set/.vhdr, also in its\n"
	"subdirectories, a BIDS tree). MOUNTPOINT defaults to " DSV_DEFAULT_MOUNTPOINT
	"\nand is created if missing. Returns once the mount answers. Datasets of an\n"
	"HDF5 SOURCE that cannot be served (strings, tables, ...) are listed in\n"
	"MOUNTPOINT/.skipped.json and the rest are served.\n"
	"\n"
	"options:\n"
	"  -f, --foreground     stay in the foreground (log to stderr)\n"
	"      --dtype T        output dtype for a .npy/.h5/raw SOURCE (default " DSV_DEFAULT_DTYPE
	"):\n"
	"                       float32, bfloat16, float16, or an integer type for\n"
	"                       integer data (int8 ... uint64; values must "
	"fit)\n" DSV_CLI_RAW_USAGE_MOUNT
	"      --strict         an .h5 or directory SOURCE: refuse it all when one of\n"
	"                       its datasets cannot be served\n"
	"      --cache-size S   chunk cache budget, e.g. 2G, 512M; 0 disables it\n"
	"                       (default: the smaller of " DSV_DEFAULT_CACHE_TEXT
	" and " DSV_DEFAULT_CACHE_RAM_PERCENT_TEXT "% of RAM)\n"
	"      --threads N      FUSE worker threads (default " DSV_DEFAULT_THREADS_TEXT ")\n"
	"      --readahead S    the kernel's readahead window of the mount (default\n"
	"                       " DEFAULT_READAHEAD_TEXT
	"; 64K: less read around shuffled memmap rows,\n"
	"                       1M: fewer requests for sequential passes)\n"
	"      --gpu G          auto, off, or a CUDA device number (default " DSV_DEFAULT_GPU ")\n"
	"      --gpu-cache S    device memory that keeps decoded LZ4 chunks for the\n"
	"                       next epoch, e.g. 16G (default 0: none); fails the\n"
	"                       mount when the device has not that much free\n"
	"      --disk-cache DIR keep the stored bytes that objects' GETs fetch\n"
	"                       (s3://, https://) in DIR, for the next epoch and the\n"
	"                       next mount; several mounts may share DIR\n"
	"      --disk-cache-size S  the most DIR holds, e.g. 100G "
	"(default " DSV_DEFAULT_DISK_CACHE_TEXT "); the\n"
	"                       least recently used go first\n"
	"      --index-cache DIR  keep what the mount learnt of its sources (shapes,\n"
	"                       offsets) in DIR: the next mount of SOURCE reads the\n"
	"                       header of a changed source only (default: the disk\n"
	"                       cache's DIR, if any)\n"
	"  -o OPTS              FUSE mount options, e.g. allow_other (rw, suid, dev\n"
	"                       and direct_io are refused; nonempty mounts over a\n"
	"                       directory that is not empty)\n"
	"      --log FILE       daemon log file (default: syslog when /dev/log exists,\n"
	"                       else /run/dsview/MOUNTPOINT.log, '/' written '-';\n"
	"                       $XDG_RUNTIME_DIR/dsview/ for a user)\n"
	"      --log-level L    error, warning or info (default " DSV_DEFAULT_LOG_LEVEL "); a bad\n"
	"                       chunk is logged once a minute, with a count\n"
	"      --debug          log every FUSE request (implies -f)\n"
	"  -h, --help           this help\n";

static int mkdirs(const char *path)
{
	char buf[4096];
	if (strlen(path) >= sizeof(buf))
		return -1;
	strcpy(buf, path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* 1 if directory path holds anything but . and .. (0 also when unreadable:
 * the mount then says why). */
static int dir_has_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int found = 0;
	if (!d)
		return 0;
	while (!found && (e = readdir(d)))
		found = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return found;
}

static int check_mountpoint(const char *mp, int nonempty)
{
	struct stat st, parent;
	char up[4200];
	if (stat(mp, &st) < 0) {
		if (errno == ENOTCONN) {
			dsv_cli_error("%s: a dead mount is still attached here; run 'dsview umount "
				      "%s' first",
				      mp, mp);
			return -1;
		}
		if (errno != ENOENT || mkdirs(mp) < 0 || stat(mp, &st) < 0) {
			dsv_cli_error("%s: cannot create mountpoint: %s", mp, strerror(errno));
			return -1;
		}
	}
	if (!S_ISDIR(st.st_mode)) {
		dsv_cli_error("%s: mountpoint is not a directory", mp);
		return -1;
	}
	snprintf(up, sizeof(up), "%s/..", mp);
	if (stat(up, &parent) == 0 && parent.st_dev != st.st_dev) {
		/* stat may be answered from cached attributes; statfs always asks
		 * the filesystem, so it tells a dead daemon from a live one */
		struct statfs sfs;
		if (statfs(mp, &sfs) < 0 && errno == ENOTCONN)
			dsv_cli_error("%s: a dead mount is still attached here; run 'dsview umount "
				      "%s' first",
				      mp, mp);
		else
			dsv_cli_error("%s: something is already mounted here (dsview umount %s)",
				      mp, mp);
		return -1;
	}
	if (!nonempty && dir_has_entries(mp)) {
		dsv_cli_error(
			"%s: mountpoint is not empty: the mount would hide its files (-o nonempty "
			"mounts over them)",
			mp);
		return -1;
	}
	return 0;
}

/* The -o options that would undo what every dsview mount is. libfuse lets
 * a later option override an earlier one, so "-o rw" after our "ro" used to
 * give a writable mount (and suid/dev dropped nosuid/nodev); direct_io
 * would break mmap. Each is refused by name, before anything is loaded. */
static const struct {
	const char *opt, *why;
} refused_fuse_opts[] = {
	{ "rw", "dsview mounts are always read-only, nosuid, nodev" },
	{ "suid", "dsview mounts are always read-only, nosuid, nodev" },
	{ "dev", "dsview mounts are always read-only, nosuid, nodev" },
	{ "direct_io", "it breaks mmap; dsview chooses direct_io per file" },
};

/* -o s3_KEY=VALUE: an object-storage setting, dsview's own (never
 * passed to FUSE), winning over the manifest's. @return 0, or -1 after
 * the error. */
static int s3_setting(const char *opt)
{
	const char *eq = strchr(opt, '=');
	char key[64];
	dsv_errbuf eb;
	if (!eq || (size_t)(eq - opt) - 3 >= sizeof(key)) {
		dsv_cli_error("-o %.*s: expected s3_KEY=VALUE", eq ? (int)(eq - opt) : 64, opt);
		return -1;
	}
	snprintf(key, sizeof(key), "%.*s", (int)(eq - opt) - 3, opt + 3);
	if (dsv_net_setting(key, eq + 1, DSV_NET_FROM_OPTION, &eb)) {
		dsv_cli_error("-o: %s", eb.reason);
		return -1;
	}
	return 0;
}

/* Checks one -o argument the way libfuse will split it: options end at an
 * unescaped ',', and a backslash escapes the next character or starts an
 * octal \NNN, so "r\w" is "rw" too. Appends its options to acc (cap
 * bytes, comma-separated, as they were written) except "nonempty", which
 * sets *nonempty instead: libfuse 3 no longer knows it, and dsview
 * itself refuses a non-empty mountpoint without it; and s3_KEY=VALUE,
 * set with s3_setting instead. @return 0, or -1 after the error. */
static int add_fuse_opts(const char *opts, char *acc, size_t cap, int *nonempty)
{
	char opt[256];
	size_t n = 0;
	int overlong = 0;
	const char *tok = opts;

	for (const char *s = opts;; s++) {
		char ch = *s;
		if (ch == ',' || ch == '\0') {
			opt[n] = '\0';
			if (!overlong && !strcmp(opt, "nonempty")) {
				*nonempty = 1;
			} else if (!overlong && !strncmp(opt, "s3_", 3)) {
				if (s3_setting(opt))
					return -1;
			} else if (s > tok) {
				size_t len = strlen(acc);
				if (len + 1 + (size_t)(s - tok) >= cap) {
					dsv_cli_error("-o: FUSE options too long");
					return -1;
				}
				snprintf(acc + len, cap - len, "%s%.*s", len ? "," : "",
					 (int)(s - tok), tok);
			}
			tok = s + 1;
			for (size_t i = 0;
			     !overlong &&
			     i < sizeof(refused_fuse_opts) / sizeof(refused_fuse_opts[0]);
			     i++) {
				if (!strcmp(opt, refused_fuse_opts[i].opt)) {
					dsv_cli_error("-o %s: refused (%s)", opt,
						      refused_fuse_opts[i].why);
					return -1;
				}
			}
			if (ch == '\0')
				return 0;
			n = 0;
			overlong = 0;
			continue;
		}
		if (ch == '\\' && s[1]) {
			s++;
			if (s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' &&
			    s[2] >= '0' && s[2] <= '7') {
				ch = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
				s += 2;
			} else {
				ch = *s;
			}
		}
		if (n < sizeof(opt) - 1)
			opt[n++] = ch;
		else
			overlong = 1; /* longer than any refused option */
	}
}

/* What mount's command line says, read before anything is loaded. */
typedef struct mount_args {
	const char *source, *mountpoint;
	const char *dtype, *cache, *readahead, *gpu, *gpu_cache, *disk, *disk_size, *log_path;
	const char *index_dir; /* --index-cache */
	const char *fuse_opts; /* -o's FUSE options, or NULL */
	dsv_cli_raw raw;       /* --source-dtype, --source-shape, --source-offset */
	int foreground, debug, strict, nonempty, threads, log_level;
} mount_args;

/* parse_args: the command line was read, go on */
#define GO_ON (-1)

/* Reads argv into a, checking what needs nothing loaded. @return GO_ON,
 * or the exit status now (--help, or a user error after its line). */
static int parse_args(int argc, char **argv, mount_args *a)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "dtype", required_argument, NULL, 'D' },
		{ "cache-size", required_argument, NULL, 'C' },
		{ "threads", required_argument, NULL, 'T' },
		{ "readahead", required_argument, NULL, 'R' },
		{ "gpu", required_argument, NULL, 'G' },
		{ "gpu-cache", required_argument, NULL, 'g' },
		{ "disk-cache", required_argument, NULL, 'K' },
		{ "disk-cache-size", required_argument, NULL, 'k' },
		{ "index-cache", required_argument, NULL, 'I' },
		{ "log", required_argument, NULL, 'L' },
		{ "log-level", required_argument, NULL, 'V' },
		{ "debug", no_argument, NULL, 'd' },
		{ "strict", no_argument, NULL, 'S' },
		DSV_CLI_RAW_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char fuse_opts[1024]; /* o.fuse_opts points here while the mount lives */
	int c;

	*a = (mount_args){ .mountpoint = DSV_DEFAULT_MOUNTPOINT,
			   .log_level = dsv_log_parse_level(DSV_DEFAULT_LOG_LEVEL) };
	dsv_cli_getopt_start();
	while ((c = dsv_cli_getopt("mount", argc, argv, "fo:h", longopts)) != -1) {
		switch (c) {
		case 'f': a->foreground = 1; break;
		case 'D': a->dtype = optarg; break;
		case 'C': a->cache = optarg; break;
		case 'R': a->readahead = optarg; break;
		case 'T':
			if (dsv_cli_int_arg("--threads", optarg, 1, DSV_MAX_THREADS, &a->threads))
				return EXIT_USER;
			break;
		case 'G': a->gpu = optarg; break;
		case 'g': a->gpu_cache = optarg; break;
		case 'K': a->disk = optarg; break;
		case 'I': a->index_dir = optarg; break;
		case 'k': a->disk_size = optarg; break;
		case 'o':
			if (add_fuse_opts(optarg, fuse_opts, sizeof(fuse_opts), &a->nonempty))
				return EXIT_USER;
			a->fuse_opts = fuse_opts[0] ? fuse_opts : NULL;
			break;
		case 'L': a->log_path = optarg; break;
		case 'V':
			if ((a->log_level = dsv_log_parse_level(optarg)) < 0) {
				dsv_cli_error("--log-level '%s' must be error, warning or info",
					      optarg);
				return EXIT_USER;
			}
			break;
		case 'd': a->debug = a->foreground = 1; break;
		case 'S': a->strict = 1; break;
		case 'h': fputs(mount_usage, stdout); return EXIT_OK;
		default:
			if (dsv_cli_raw_opt(c, optarg, &a->raw))
				break;
			return EXIT_USER;
		}
	}
	if (dsv_cli_operands("mount", argc, argv, 1, 2, "SOURCE [MOUNTPOINT]"))
		return EXIT_USER;
	a->source = argv[optind];
	if (argc - optind == 2)
		a->mountpoint = argv[optind + 1];
	return GO_ON;
}

/* The manifest of a->source: a .ini loaded, or one made for a file or
 * directory (--dtype, --strict), every source opened and checked. The
 * disk cache is set first: opening an object's source may fetch through
 * it. @return EXIT_OK with *out set, or the exit status after the error. */
static int load_manifest(const mount_args *a, dsv_manifest **out)
{
	dsv_dtype dt = dsv_dtype_parse(a->dtype ? a->dtype : DSV_DEFAULT_DTYPE);
	dsv_errbuf eb;
	dsv_raw_layout raw;
	int err, is_raw;

	if (dsv_cli_disk_cache(NULL, a->disk, a->disk_size) ||
	    (is_raw = dsv_cli_raw_layout("mount", a->source, &a->raw, a->dtype, &raw)) < 0)
		return EXIT_USER;
	if (a->index_dir && !*a->index_dir) {
		dsv_cli_error("--index-cache must name a directory");
		return EXIT_USER;
	}
	dsv_manifest_index_dirs(a->index_dir, a->disk);
	if (dsv_has_ext(a->source, ".ini")) {
		if (is_raw) {
			dsv_cli_error(
				"--source-dtype and --source-shape apply to a raw SOURCE; set "
				"source_dtype and source_shape per view in %s",
				a->source);
			return EXIT_USER;
		}
		if (a->dtype) {
			dsv_cli_error(
				"--dtype applies to a .npy/.h5 SOURCE; set dtype per view in %s",
				a->source);
			return EXIT_USER;
		}
		if (a->strict) {
			dsv_cli_error("--strict applies to a .npy/.h5 SOURCE; in a manifest every "
				      "error is fatal");
			return EXIT_USER;
		}
	} else if (!dsv_dtype_is_output(dt)) {
		dsv_cli_error("--dtype '%s' must be float32, bfloat16, float16 or an "
			      "integer type (int8 ... uint64)",
			      a->dtype);
		return EXIT_USER;
	}
	err = is_raw ? dsv_manifest_from_raw(a->source, &raw, dt, out, &eb)
		     : dsv_manifest_open(a->source, dt,
					 (a->strict ? DSV_FROM_FILE_STRICT : 0) |
						 (a->dtype ? DSV_FROM_FILE_DTYPE : 0),
					 out, &eb);
	if (err && a->dtype && !strcmp(eb.key, "dtype")) {
		/* the view's dtype is --dtype's here (clip needs a manifest) */
		dsv_cli_error("--dtype %s: %s", a->dtype, eb.msg);
		return EXIT_USER;
	}
	if (err) {
		dsv_cli_error("%s", eb.msg);
		return err == DSV_ERR_INTERNAL || err == DSV_ERR_NOMEM ? EXIT_INTERNAL : EXIT_USER;
	}
	return EXIT_OK;
}

/* The chunk cache's budget: --cache-size, else the manifest's, else the
 * default, never above usable memory. @return 0, or -1 after the error. */
static int cache_size(const mount_args *a, const dsv_manifest *m, uint64_t usable, uint64_t *out)
{
	*out = m->has_cache_size ? m->cache_size : dsv_default_cache_size(usable);
	if (a->cache) {
		return dsv_cli_size_arg("--cache-size", a->cache, 1, usable,
					"this machine's memory or memory limit", out);
	}
	if (m->has_cache_size && *out > usable) {
		dsv_cli_error(
			"%s: cache_size exceeds this machine's memory or memory limit (%.1f GiB)",
			a->source, (double)usable / (1u << 30));
		return -1;
	}
	return 0;
}

/* The filesystem's options: the command line's over the manifest's
 * [dsview] over the defaults, checked against this machine; the
 * manifest's disk cache set. @return 0, or -1 after the error. */
static int fs_options(const mount_args *a, const dsv_manifest *m, dsv_fs_opts *o)
{
	/* the daemon's control group's memory limit, read once */
	uint64_t limit = dsv_cgroup_mem_limit(0), usable = dsv_usable_mem(limit);
	int gpu_dev;

	*o = (dsv_fs_opts){ .fuse_opts = a->fuse_opts, .debug = a->debug };
	if (cache_size(a, m, usable, &o->cache_size))
		return -1;
	/* the kernel keeps the window in whole pages: 3K would become 0 */
	o->readahead = DSV_FS_DEFAULT_READAHEAD;
	if (a->readahead &&
	    dsv_cli_size_arg("--readahead", a->readahead, (uint64_t)sysconf(_SC_PAGESIZE),
			     (uint64_t)DSV_MAX_READAHEAD_MIB << 20,
			     "the largest window, " DSV_MAX_READAHEAD_TEXT, &o->readahead))
		return -1;
	o->threads = a->threads ? a->threads : m->has_threads ? m->threads : DSV_DEFAULT_THREADS;
	o->mem_limit = limit == UINT64_MAX ? 0 : limit;
	o->gpu = a->gpu ? a->gpu : m->gpu;
	if (dsv_parse_gpu(o->gpu, &gpu_dev)) { /* the manifest's was checked at load */
		dsv_cli_error("--gpu '%s' must be auto, off or a device number", o->gpu);
		return -1;
	}
	o->gpu_cache = m->has_gpu_cache ? m->gpu_cache : 0;
	if (a->gpu_cache &&
	    dsv_cli_size_arg("--gpu-cache", a->gpu_cache, 0, 0, NULL, &o->gpu_cache))
		return -1;
	if (o->gpu_cache && gpu_dev == DSV_GPU_OFF) {
		dsv_cli_error("%s needs a GPU, and --gpu is off",
			      a->gpu_cache ? "--gpu-cache" : "the manifest's gpu_cache");
		return -1;
	}
	return dsv_cli_disk_cache(m, a->disk, a->disk_size); /* the manifest's */
}

/* Opens --log, checks the mountpoint (made when missing) and writes its
 * canonical path to real_mp (PATH_MAX bytes), sets the log level, and
 * opens the default log of a daemon without --log: its path into
 * default_log (cap bytes), "" for syslog. @return 0, or -1 after the
 * error. */
static int prepare_mountpoint(const mount_args *a, char *real_mp, char *default_log, size_t cap)
{
	if (a->log_path && dsv_log_open(a->log_path)) {
		dsv_cli_error("%s: cannot open log file: %s%s", a->log_path, strerror(errno),
			      dsv_source_open_hint(errno));
		return -1;
	}
	if (check_mountpoint(a->mountpoint, a->nonempty))
		return -1;
	/* Canonical now, while nothing is mounted there: afterwards resolving
	 * it would itself be a request to our not-yet-serving mount. */
	if (!realpath(a->mountpoint, real_mp)) {
		dsv_cli_error("%s: %s", a->mountpoint, strerror(errno));
		return -1;
	}
	dsv_log_set_level(a->log_level);
	if (!a->log_path && !a->foreground && dsv_cli_default_log(real_mp, default_log, cap))
		return -1;
	return 0;
}

/* -f: the loop was reached (a failure after it is not a start-up one). */
static void note_serving(void *arg)
{
	*(int *)arg = 1;
}

/* -f: serves fs in this process until it is unmounted, then destroys it.
 * @return the exit status. */
static int serve_here(dsv_fs *fs)
{
	dsv_errbuf eb;
	int started = 0, err;

	dsv_fs_on_serving(fs, note_serving, &started);
	err = dsv_fs_serve(fs, &eb);
	if (err)
		dsv_cli_error("%s", eb.msg);
	dsv_fs_destroy(fs);
	return !err ? EXIT_OK : started ? EXIT_INTERNAL : dsv_cli_startup_status(err);
}

const char *dsv_cli_left_line(const dsv_cli_left *l, const char *source, const char *mountpoint,
			      char *buf, size_t cap)
{
	buf[0] = '\0';
	if (l->nskipped == l->ndatasets && l->nskipped)
		snprintf(buf, cap,
			 "served %zu of %zu datasets of %s; %zu skipped: %s (see %s/.skipped.json)",
			 l->nserved, l->nserved + l->nskipped, source, l->nskipped, l->kinds,
			 mountpoint);
	else if (l->nskipped) /* signals of recordings served: not datasets */
		snprintf(buf, cap,
			 "served %zu of %zu datasets of %s; left out: %s (see %s/.skipped.json)",
			 l->nserved, l->nserved + l->ndatasets, source, l->kinds, mountpoint);
	return buf;
}

/* Mounts m at mountpoint (m is the mount's from then on, freed here when
 * the mount fails), says what was skipped, and serves: here with -f, else
 * in a daemon, returning once the mount answers. @return the exit status. */
static int mount_and_serve(const mount_args *a, dsv_manifest *m, const dsv_fs_opts *o,
			   const char *mountpoint, int use_syslog)
{
	char kinds[256], line[PATH_MAX + 600];
	dsv_cli_left left = { m->nviews, dsv_manifest_skipped_datasets(m), m->nskipped, kinds };
	dsv_fs *fs = NULL;
	dsv_errbuf eb;

	dsv_manifest_skipped_kinds(m, kinds, sizeof(kinds));
	if (dsv_fs_mount(m, mountpoint, o, &fs, &eb)) {
		dsv_cli_error("%s", eb.msg);
		dsv_manifest_free(m);
		return EXIT_USER;
	}
	if (*dsv_cli_left_line(&left, a->source, mountpoint, line, sizeof(line)))
		dsv_cli_error("%s", line); /* the one line a user sees; the list is in the mount */
	malloc_trim(0);                    /* what loading freed (a large view's JSON made once) */
	if (a->foreground)
		return serve_here(fs);
	return dsv_cli_daemonise(fs, mountpoint, use_syslog, a->source, &left);
}

int dsv_cmd_mount(int argc, char **argv)
{
	mount_args a;
	dsv_fs_opts o;
	dsv_manifest *m = NULL;
	char real_mp[PATH_MAX], default_log[PATH_MAX + 300] = "";
	int status = parse_args(argc, argv, &a);

	if (status != GO_ON)
		return status;
	/* a view of many files: their descriptors are budgeted under the
	 * limit (source/fds.c), the higher the better */
	dsv_source_raise_fd_limit();
	if ((status = load_manifest(&a, &m)))
		return status;
	if (fs_options(&a, m, &o) ||
	    prepare_mountpoint(&a, real_mp, default_log, sizeof(default_log))) {
		dsv_manifest_free(m);
		return EXIT_USER;
	}
	return mount_and_serve(&a, m, &o, real_mp, !a.log_path && !default_log[0]);
}
