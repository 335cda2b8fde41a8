/*
 * Knobs: the DSVIEW_* environment variables the library and the command
 * read, all of them, in one table (knobs.c: name, default, range, what it
 * is for). They exist for measuring and for tests; the mount's own
 * settings are its options and the manifest's [dsview] section.
 *
 * Each is read from the environment once per process, at the first call
 * of a getter, and checked: a value that is not a whole number in the
 * knob's range (or not one of its names) is not taken: one warning line
 * names the variable and the value, and the knob keeps its default. Unset
 * and set to "" are the same.
 *
 * Thread safety: the getters may be called from any thread (the reading
 * is done once, under pthread_once); dsv_knobs_reload is for tests and
 * must not run beside anything.
 */
#ifndef DSV_COMMON_KNOBS_H
#define DSV_COMMON_KNOBS_H

#include <stdint.h>

typedef enum dsv_knob {
	DSV_KNOB_GRID_BAND_KB,   /* source: bytes of a band of an N-d chunk grid */
	DSV_KNOB_H5_GRID,        /* source: 0 leaves row-splitting chunks to HDF5 */
	DSV_KNOB_OPEN_FILES,     /* source: descriptors the sources keep open, 0 from the limit */
	DSV_KNOB_KERNEL,         /* xform: the CPU kernel variant, by name */
	DSV_KNOB_GPU_EMULATE,    /* backend: the device path on the CPU, for tests */
	DSV_KNOB_GPU_MIN_KB,     /* gpu: smaller chunks stay on the CPU */
	DSV_KNOB_GPU_MIN_BLOCKS, /* gpu: chunks of fewer LZ4 blocks stay on the CPU */
	DSV_KNOB_READAHEAD_KB,   /* fs: dsview's readahead per stream, 0 off */
	DSV_KNOB_CLONE_FD,       /* fs: libfuse's clone_fd */
	DSV_KNOB_MAX_BACKGROUND, /* fs: FUSE max_background, 0 libfuse's */
	DSV_KNOB_HINT_THREADS,   /* fs: threads that store sampler-hinted rows */
	DSV_KNOB_NET_RETRIES,    /* net: tries after the first of a failed request */
	DSV_KNOB_NET_BACKOFF_MS, /* net: the first wait before a retry */
	DSV_KNOB_NET_TIMEOUT_S,  /* net: connect timeout; a transfer stalled this long fails */
	DSV_KNOB_NET_AHEAD_KB,   /* net: bytes GET ahead of a sequential stream, 0 off */
	DSV_KNOB_NET_GET_KB,     /* net: the size of a readahead GET */
	DSV_KNOB_NET_GETS,       /* net: readahead GETs in flight, the process */
	DSV_KNOB_NET_LIST_PAGE,  /* net: names a listing request asks for (max-keys) */
	DSV_KNOB__COUNT
} dsv_knob;

/* One knob's entry in the table. An integer knob takes a whole number in
 * [min, max]; a named knob (names not NULL) one of names, and its value
 * is the name's index in names, or def (-1: unset) when not set. */
typedef struct dsv_knob_def {
	const char *name; /* "DSVIEW_..." */
	int64_t def, min, max;
	const char *const *names; /* NULL-terminated, or NULL for an integer knob */
	const char *help;         /* one line: what it is for */
} dsv_knob_def;

/* The table's entry of k. */
const dsv_knob_def *dsv_knob_get_def(dsv_knob k);

/* k's value: the environment's, when it was valid, else the default. */
int64_t dsv_knob_int(dsv_knob k);
/* A named knob's name, or NULL when unset (or set to a name not known). */
const char *dsv_knob_name(dsv_knob k);

/* Reads the environment again, as at the first call: for tests that
 * setenv between cases. Not thread-safe. */
void dsv_knobs_reload(void);

#endif
