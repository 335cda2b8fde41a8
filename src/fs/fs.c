/*
 * DESIGN
 *
 * The FUSE front end (low-level API). It is the top of the house, a thin
 * one: requests, inodes, the kernel's page cache and errno are its; what
 * a read needs besides is the engine's (src/engine, engine.c's DESIGN: the
 * views, the chunk cache, the backend, readahead, hints, the page budget,
 * the counters). Only src/fs/ includes FUSE headers or speaks errno, and
 * of the rooms below it includes only the engine (and common's helpers).
 *
 * The files (fs_i.h holds what they share):
 *   fs.c     this note; mount, serve (signal handlers, the kernel's
 *            readahead window), unmount and teardown
 *   tree.c   the node table; lookup, getattr, readdir
 *   ops.c    open, read, release, statfs, the hints ioctl, the read-only
 *            refusals
 *   sink.c   the engine's pages stored in the kernel's page cache
 *            (notify_store) and dropped from it (notify_inval_inode)
 *   stats.c  /.stats.json
 *
 * The tree is built once at mount and never changes: inode 1 is the root,
 * then for every view its directories (zero-config HDF5 groups), V.dat,
 * V.npy and V.json, /.stats.json, and /.skipped.json when a zero-config
 * mount passed over datasets (fixed text, served like a V.json). Inode
 * numbers are indexes into a node array, so lookups need no lock; a V.dat
 * or V.npy node knows its file number in the engine, and the file's inode
 * is kept for the sink. Data files are immutable, so they are opened with
 * keep_cache and never direct_io (mmap needs the page cache); only
 * /.stats.json, whose content changes, is direct_io, rendered at open and
 * owned by the file handle.
 *
 * Reads: the requested range is clipped at EOF; the engine makes its
 * bytes (behind the .npy header where there is one) in this worker
 * thread's reply buffer, which is reused by every request the thread
 * serves (warm pages, no fault per reply), and the reply is written
 * synchronously. Any failed piece fails the whole request with EIO: a
 * short reply would make the kernel treat the file as ending there and
 * hand out zeros, which we must never do. What a reply leaves in the
 * page cache counts in the engine's page budget (the sink's reads_kept).
 *
 * Readahead and hints: the engine's threads make what a sequential stream
 * will read next and the rows a sampler hinted, and the sink stores them
 * in the kernel's page cache for the file, so the reader finds them there
 * without a request. The kernel's own readahead window stays small
 * (--readahead, 128 KiB), which is what shuffled memmap readers need.
 *
 * Signals: dsv_fs_serve installs libfuse's SIGTERM/SIGINT/SIGHUP handlers,
 * which end the loop through the session; every way out of dsv_fs_serve
 * removes them, since dsv_fs_destroy frees that session.
 *
 * Errors: the engine returns dsv_err; dsv_err_to_errno (ops.c) is the one
 * place that turns them into errno.
 */
#include <errno.h>
#include <stdarg.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/log.h"
#include "common/str.h"
#include "fs/fs_i.h"

/* ---- lifecycle ---- */

/* While dsv_fs_mount talks to libfuse, what libfuse would print on stderr
 * ("fuse: mount failed: Invalid argument") is kept here instead, so the
 * mount command's one error line can end with it. */
static char fuse_said[256];

static void keep_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	size_t n = strlen(fuse_said); /* one message may come in pieces */
	vsnprintf(fuse_said + n, sizeof(fuse_said) - n, fmt, ap);
	n = strlen(fuse_said);
	while (n && fuse_said[n - 1] == '\n')
		fuse_said[--n] = '\0';
}

/* What libfuse said without its "fuse: " prefix, or dflt */
/* 1 when an executable named name is on $PATH. */
static int on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	while (path && *path) {
		size_t len = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, name);
		if (access(buf, X_OK) == 0)
			return 1;
		path += len + (path[len] == ':');
	}
	return 0;
}

/* 1 when /etc/fuse.conf has a user_allow_other line. */
static int user_allow_other(void)
{
	char line[256];
	int yes = 0;
	FILE *f = fopen("/etc/fuse.conf", "r");
	while (f && !yes && fgets(line, sizeof(line), f))
		yes = !strncmp(line, "user_allow_other", 16);
	if (f)
		fclose(f);
	return yes;
}

/* What a failed mount lacked, as far as can be told from here: the
 * device, the right to open it, fusermount3 (which mounts for a user
 * other than root), user_allow_other for -o allow_other. */
static const char *mount_missing(const char *opts)
{
	int user = geteuid() != 0;
	if (access("/dev/fuse", F_OK))
		return "/dev/fuse is missing (load the fuse module; a container needs "
		       "--device /dev/fuse)";
	if (access("/dev/fuse", R_OK | W_OK))
		return "this user may not open /dev/fuse (its mode is root's alone here: ask for "
		       "access to it, or mount as root)";
	if (user && !on_path("fusermount3"))
		return "fusermount3, which mounts for users other than root, is missing "
		       "(Debian: fuse3)";
	if (user && opts && strstr(opts, "allow_other") && !user_allow_other())
		return "-o allow_other needs a user_allow_other line in /etc/fuse.conf";
	return "are the -o options ones the kernel knows?";
}

static const char *fuse_reason(const char *dflt)
{
	const char *s = strncmp(fuse_said, "fuse: ", 6) ? fuse_said : fuse_said + 6;
	return *s ? s : dflt;
}

/* Finds -o max_read=N with libfuse's own option parser, on a copy of the
 * arguments (a matched template is consumed from the list it parses). */
static int parse_max_read(dsv_fs *fs, const char *optbuf)
{
	static const struct fuse_opt spec[] = {
		{ "max_read=%u", offsetof(dsv_fs, max_read), 0 },
		FUSE_OPT_END,
	};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	int rc = 0;
	if (fuse_opt_add_arg(&args, "dsview") || fuse_opt_add_arg(&args, optbuf))
		rc = DSV_ERR_NOMEM;
	else if (fuse_opt_parse(&args, fs, spec, NULL) != 0)
		rc = DSV_ERR_INVALID;
	fuse_opt_free_args(&args);
	return rc;
}

int dsv_fs_mount(dsv_manifest *m, const char *mountpoint, const dsv_fs_opts *o, dsv_fs **out,
		 dsv_errbuf *eb)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char optbuf[1024 + 8 * PATH_MAX], fsname[8 * PATH_MAX], real[PATH_MAX];
	char shown[4 * PATH_MAX + 4];
	dsv_fs *fs = calloc(1, sizeof(*fs));
	int err = 0;

	*out = NULL;
	if (!fs)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	fs->o = *o;
	pthread_mutex_init(&fs->snap_lock, NULL);
	clock_gettime(CLOCK_REALTIME, &fs->mount_time);
	dsv_engine_opts eo = { .cache_size = o->cache_size,
			       .gpu = o->gpu,
			       .gpu_cache = o->gpu_cache,
			       .mem_limit = o->mem_limit };
	if ((err = dsv_engine_new(m, &eo, &fs->engine, eb)))
		goto fail;
	fs->mountpoint = strdup(mountpoint);
	if (!fs->mountpoint || (err = dsv_fs_tree_build(fs))) {
		err = dsv_errf_at(eb, err ? err : DSV_ERR_NOMEM, dsv_engine_source(fs->engine),
				  NULL, "view names collide or out of memory");
		goto fail;
	}
	/* The caller's options go first: libfuse lets a later option undo an
	 * earlier one, so what every dsview mount is comes last, where no -o
	 * can turn it off (the CLI refuses rw, suid and dev outright), and a
	 * string too long for the buffer is an error, never cut short. */
	/* fsname: the manifest or source, so findmnt and df say what is
	 * mounted where; bytes outside printable ASCII written \xNN (the mount
	 * table is read as text: one byte that is not UTF-8 there breaks its
	 * readers), then ',' and '\\' escaped for libfuse's option parser */
	const char *src = dsv_engine_source(fs->engine);
	src = realpath(src, real) ? real : src;
	size_t k = 0;
	src = dsv_shown(src, dsv_url_shown_len(src), PATH_MAX, shown); /* no URL query */
	if (!(fs->source = strdup(src))) {
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (; *src && k + 2 < sizeof(fsname); src++) {
		if (*src == ',' || *src == '\\')
			fsname[k++] = '\\';
		fsname[k++] = *src;
	}
	fsname[k] = '\0';
	if (snprintf(optbuf, sizeof(optbuf),
		     "-o%s%sfsname=%s,subtype=dsview,ro,nosuid,nodev,"
		     "default_permissions",
		     o->fuse_opts ? o->fuse_opts : "", o->fuse_opts ? "," : "",
		     fsname) >= (int)sizeof(optbuf)) {
		err = dsv_errf_at(eb, DSV_ERR_INVALID, mountpoint, NULL, "FUSE options too long");
		goto fail;
	}
	if (fuse_opt_add_arg(&args, "dsview") || fuse_opt_add_arg(&args, optbuf) ||
	    (o->debug && fuse_opt_add_arg(&args, "-d"))) {
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((err = parse_max_read(fs, optbuf))) {
		fuse_opt_free_args(&args);
		err = dsv_errf_at(eb, err, mountpoint, NULL, "bad FUSE options '%s'",
				  o->fuse_opts ? o->fuse_opts : "");
		goto fail;
	}
	fuse_said[0] = '\0';
	fuse_set_log_func(keep_fuse_log);
	fs->se = fuse_session_new(&args, &dsv_fs_ops, sizeof(dsv_fs_ops), fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		fuse_set_log_func(NULL);
		err = dsv_errf_at(eb, DSV_ERR_INVALID, mountpoint, NULL,
				  "bad FUSE options '%s': %s", o->fuse_opts ? o->fuse_opts : "",
				  fuse_reason("refused by libfuse"));
		goto fail;
	}
	if (fuse_session_mount(fs->se, mountpoint) != 0) {
		fuse_set_log_func(NULL);
		err = dsv_errf_at(eb, DSV_ERR_IO, mountpoint, NULL,
				  "%s: %s; without FUSE, read the views in-process: "
				  "dsview.open(SOURCE, VIEW) in Python, or libdsview's reader",
				  fuse_reason("mount failed"), mount_missing(o->fuse_opts));
		goto fail;
	}
	fuse_set_log_func(NULL); /* libfuse's own again: stderr (-f, --debug) */
	fs->mounted = 1;
	*out = fs;
	return 0;
fail:
	dsv_engine_forget(fs->engine); /* the caller keeps the manifest on failure */
	fs->engine = NULL;
	dsv_fs_destroy(fs);
	return err;
}

/* 1 if mountpoint still holds a mount whose connection is gone. */
static int dead_mount(const char *mountpoint)
{
	struct statvfs sv; /* not stat: the kernel may answer that from its cache */
	return statvfs(mountpoint, &sv) < 0 && errno == ENOTCONN;
}

/* The kernel's readahead for this mount is the bdi's read_ahead_kb; set it
 * to the chosen window (FUSE's own default is the largest request size).
 * The device number comes from mountinfo: a stat() of the mountpoint would be
 * a FUSE request that nobody answers yet (so is realpath: mountpoint must
 * already be canonical). Needs root; harmless to skip. */
static void set_readahead(const char *mountpoint, uint64_t bytes)
{
	char line[8192], path[128];
	unsigned maj = 0, min = 0;
	int found = 0;
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char point[4096];
		unsigned a, b;
		if (sscanf(line, "%*s %*s %u:%u %*s %4095s", &a, &b, point) != 3)
			continue;
		dsv_mountinfo_unescape(point);
		if (!strcmp(point, mountpoint) && strstr(line, " fuse.dsview ")) {
			maj = a;
			min = b;
			found = 1;
		}
	}
	fclose(f);
	f = NULL;
	if (!found)
		goto out;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	f = fopen(path, "w");
	if (f)
		fprintf(f, "%llu\n", (unsigned long long)(bytes / 1024));
out:
	if (f)
		fclose(f);
}

int dsv_fs_serve(dsv_fs *fs, dsv_errbuf *eb)
{
	struct fuse_loop_config *cfg;
	dsv_engine_sink sink;
	int err, threads = fs->o.threads > 0 ? fs->o.threads : 8;

	dsv_fs_sink(fs, &sink);
	if ((err = dsv_engine_start(fs->engine, &sink, eb)))
		return err;
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	/* Two levers of the crossing, off by default: a /dev/fuse descriptor
	 * per worker thread, and how many background (readahead) requests the
	 * kernel keeps in flight. make bench-shuffle (4 workers of 12 KB rows)
	 * read 0.72x and 0.87x the defaults with them (docs/benchmarks/levers.md). */
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)dsv_knob_int(DSV_KNOB_CLONE_FD));
	fs->max_background = (unsigned)dsv_knob_int(DSV_KNOB_MAX_BACKGROUND);
	fuse_loop_cfg_set_max_threads(cfg, (unsigned)threads);
	fuse_loop_cfg_set_idle_threads(cfg, (unsigned)threads);
	/* The handlers point at fs->se, which dsv_fs_destroy frees: from here
	 * every way out removes them (libfuse's, too, when it installed only
	 * some: it resets those that are its own). */
	if (fuse_set_signal_handlers(fs->se) != 0) {
		err = dsv_errf(eb, DSV_ERR_INTERNAL, "cannot install signal handlers");
		goto out_handlers;
	}
	dsv_log_info("serving %zu view(s) from %s at %s (cache %llu bytes, %d threads, readahead "
		     "%llu KiB, kernel %s)",
		     dsv_engine_nviews(fs->engine), dsv_engine_source(fs->engine), fs->mountpoint,
		     (unsigned long long)fs->o.cache_size, threads,
		     (unsigned long long)(fs->o.readahead / 1024), dsv_engine_kernel());
	set_readahead(fs->mountpoint, fs->o.readahead);
	if (fs->serving)
		fs->serving(fs->serving_arg);
	err = fuse_session_loop_mt(fs->se, cfg);
	/* An unmount that races a request the kernel is handing to a worker
	 * fails that read with ECONNABORTED instead of ENODEV (libfuse's
	 * clean end). Gone from the mount table means unmounted, not aborted:
	 * an abort through /sys/fs/fuse/connections leaves a dead mount. */
	if (err == -ECONNABORTED && !dead_mount(fs->mountpoint))
		err = 0;
	dsv_engine_stop(fs->engine);
	fuse_session_unmount(fs->se);
	fs->mounted = 0;
	dsv_log_limited_flush(); /* how often the errors it held back came */
	dsv_log_info("unmounted %s", fs->mountpoint);
	/* > 0: the signal that ended the loop, a clean end */
	err = err < 0 ? dsv_errf(eb, DSV_ERR_IO, "FUSE loop failed: %s", strerror(-err)) : 0;
out_handlers:
	fuse_remove_signal_handlers(fs->se);
	fuse_loop_cfg_destroy(cfg);
	return err;
}

void dsv_fs_on_serving(dsv_fs *fs, void (*fn)(void *arg), void *arg)
{
	fs->serving = fn;
	fs->serving_arg = arg;
}

void dsv_fs_close_fd(dsv_fs *fs)
{
	close(fuse_session_fd(fs->se));
}

void dsv_fs_destroy(dsv_fs *fs)
{
	if (!fs)
		return;
	dsv_engine_stop(fs->engine); /* its threads store pages in the session */
	if (fs->se) {
		if (fs->mounted)
			fuse_session_unmount(fs->se);
		fuse_session_destroy(fs->se);
	}
	dsv_fs_tree_free(fs);
	dsv_engine_free(fs->engine);
	free(fs->mountpoint);
	free(fs->source);
	while (fs->snaps)
		dsv_fs_snap_free(fs, fs->snaps);
	free(fs->stats_next);
	pthread_mutex_destroy(&fs->snap_lock);
	free(fs);
}
