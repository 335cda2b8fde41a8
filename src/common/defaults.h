/*
 * What dsview does when neither an option nor a manifest says otherwise.
 * Each default has one name here, and the usage texts are built from the
 * names, so that a text and its value cannot drift apart: a number's
 * _TEXT is its digits, with the unit a size is written in ("10G"). The
 * man page (doc/dsview.1), README.md and docs/ give the same values in
 * prose: change them together.
 *
 * The mount's readahead window is DSV_FS_DEFAULT_READAHEAD_KIB in the
 * public dsview/fs.h, where a library user finds it.
 */
#ifndef DSV_COMMON_DEFAULTS_H
#define DSV_COMMON_DEFAULTS_H

#include "common/str.h" /* DSV_STR */

/* mount and umount: where, when no MOUNTPOINT is given */
#define DSV_DEFAULT_MOUNTPOINT "/mnt/dsview"

/* mount --dtype: the views' type of a .npy/.h5 SOURCE */
#define DSV_DEFAULT_DTYPE "float32"

/* mount --threads, [dsview] threads: FUSE worker threads, and the most */
#define DSV_DEFAULT_THREADS 8
#define DSV_DEFAULT_THREADS_TEXT DSV_STR(DSV_DEFAULT_THREADS)
/* Threads that open a glob's or a directory's files at once (reading
 * their headers), one more for each DSV_OPEN_PER_THREAD files: a view of
 * thousands of files waits on the disk's latency, not one read at a
 * time. */
#define DSV_OPEN_THREADS 8
#define DSV_OPEN_PER_THREAD 64
#define DSV_MAX_THREADS 256
/* the in-process reader's gather threads (its `threads` option): a gather
 * of rows shared by this many, the caller among them, so the reads of a
 * batch overlap their I/O and decode */
#define DSV_DEFAULT_READER_THREADS 4
#define DSV_MAX_THREADS_TEXT DSV_STR(DSV_MAX_THREADS)

/* mount --cache-size, [dsview] cache_size: the smaller of this many GiB
 * and this share of RAM (or of the memory limit) */
#define DSV_DEFAULT_CACHE_GIB 1
#define DSV_DEFAULT_CACHE_TEXT DSV_STR(DSV_DEFAULT_CACHE_GIB) "G"
#define DSV_DEFAULT_CACHE_RAM_PERCENT 10
#define DSV_DEFAULT_CACHE_RAM_PERCENT_TEXT DSV_STR(DSV_DEFAULT_CACHE_RAM_PERCENT)

/* mount --readahead: the largest window */
#define DSV_MAX_READAHEAD_MIB 64
#define DSV_MAX_READAHEAD_TEXT DSV_STR(DSV_MAX_READAHEAD_MIB) "M"

/* mount --gpu, [dsview] gpu (dsv_parse_gpu's words) */
#define DSV_DEFAULT_GPU "auto"

/* --disk-cache-size, [dsview] disk_cache_size: the most a disk cache holds */
#define DSV_DEFAULT_DISK_CACHE_GIB 10
#define DSV_DEFAULT_DISK_CACHE_TEXT DSV_STR(DSV_DEFAULT_DISK_CACHE_GIB) "G"

/* mount --log-level (dsv_log_parse_level's words) */
#define DSV_DEFAULT_LOG_LEVEL "info"

/* status --watch: seconds between passes */
#define DSV_DEFAULT_WATCH_S 2
#define DSV_DEFAULT_WATCH_TEXT DSV_STR(DSV_DEFAULT_WATCH_S)

#endif
