/*
 * /.stats.json: the mount's identity and the engine's counters, as JSON. Its text is
 * rendered at open and owned by the handle (a snapshot), so a reader sees
 * one consistent document however it reads it; the file is direct_io.
 * Its st_size is the snapshot's length: fstat of an open handle gives its
 * own, and a stat by path renders the text that an open within the next
 * second takes, so stat, open, read (cp, tar, rsync) agree on the size.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/str.h"
#include "fs/fs_i.h"

/* The mount's identity, what `dsview status` shows besides the counters:
 * mountpoint, source (absolute when it can be resolved), start time (Unix
 * seconds), where the log goes and the daemon's pid; then the engine's
 * counters (dsv_engine_stats_add). A new string ending in a newline, or
 * NULL when out of memory. */
static char *render(dsv_fs *fs)
{
	/* JSON strings are UTF-8: paths shown as fsname shows them (\xNN) */
	char mp[4 * PATH_MAX + 4], log[4 * PATH_MAX + 4], *text = NULL, *s = NULL;
	const char *target = dsv_log_target();
	json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:i}", "mountpoint",
			      dsv_shown(fs->mountpoint, strlen(fs->mountpoint), PATH_MAX, mp),
			      "source", fs->source, "started", (json_int_t)fs->mount_time.tv_sec,
			      "log", dsv_shown(target, strlen(target), PATH_MAX, log), "pid",
			      (int)getpid());
	if (o && dsv_engine_stats_add(fs->engine, o) == 0)
		text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (text && asprintf(&s, "%s\n", text) < 0)
		s = NULL;
	json_decref(o);
	free(text);
	return s;
}

/* seconds from a to b */
static double elapsed(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* The text a stat sized under a second ago, or a new rendering. */
static char *next_text(dsv_fs *fs)
{
	struct timespec now;
	char *s = NULL;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&fs->snap_lock);
	if (fs->stats_next && elapsed(&fs->stats_next_at, &now) < 1.0) {
		s = fs->stats_next;
		fs->stats_next = NULL;
	}
	pthread_mutex_unlock(&fs->snap_lock);
	return s ? s : render(fs);
}

uint64_t dsv_fs_stats_size(dsv_fs *fs, const struct fuse_file_info *fi)
{
	if (fi && fi->fh)
		return strlen(((const stats_snap *)(uintptr_t)fi->fh)->text);
	char *s = render(fs), *old;
	if (!s)
		return 0;
	uint64_t len = strlen(s);
	pthread_mutex_lock(&fs->snap_lock);
	old = fs->stats_next;
	fs->stats_next = s;
	clock_gettime(CLOCK_MONOTONIC, &fs->stats_next_at);
	pthread_mutex_unlock(&fs->snap_lock);
	free(old);
	return len;
}

stats_snap *dsv_fs_snap_new(dsv_fs *fs)
{
	char *s = next_text(fs);
	size_t len = s ? strlen(s) : 0;
	stats_snap *snap = s ? malloc(sizeof(*snap) + len + 1) : NULL;
	if (snap) {
		memcpy(snap->text, s, len + 1);
		pthread_mutex_lock(&fs->snap_lock);
		snap->prev = NULL;
		snap->next = fs->snaps;
		if (fs->snaps)
			fs->snaps->prev = snap;
		fs->snaps = snap;
		pthread_mutex_unlock(&fs->snap_lock);
	}
	free(s);
	return snap;
}

void dsv_fs_snap_free(dsv_fs *fs, stats_snap *snap)
{
	pthread_mutex_lock(&fs->snap_lock);
	if (snap->prev)
		snap->prev->next = snap->next;
	else
		fs->snaps = snap->next;
	if (snap->next)
		snap->next->prev = snap->prev;
	pthread_mutex_unlock(&fs->snap_lock);
	free(snap);
}
