/*
 * The DSVIEW_* environment variables (knobs.h): the table, and their
 * reading, once per process. Every knob the code reads is in the table
 * below, with its default and range; nowhere else calls getenv for one.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "common/log.h"

static const char *const kernel_names[] = { "scalar",     "avx2",       "avx512",
					    "avx512vbmi", "avx512bf16", NULL };

/* The order of enum dsv_knob. Defaults that name a constant elsewhere say
 * where: keep the two equal. */
static const dsv_knob_def table[DSV_KNOB__COUNT] = {
	[DSV_KNOB_GRID_BAND_KB] = { "DSVIEW_GRID_BAND_KB", 256, 0, 256 << 10, NULL,
				    "KiB of elements in one band of an N-d chunk grid (a chunk of "
				    "the read path); "
				    "at most source_i.h's DSV_GRID_BAND_MAX" },
	[DSV_KNOB_H5_GRID] = { "DSVIEW_H5_GRID", 1, 0, 1, NULL,
			       "0: HDF5 chunks that split rows are read through the HDF5 library "
			       "(make bench-grid compares the two)" },
	[DSV_KNOB_OPEN_FILES] = { "DSVIEW_OPEN_FILES", 0, 0, 1 << 24, NULL,
				  "descriptors the sources keep open at once (the rest are "
				  "reopened when read); 0: three quarters of the descriptor "
				  "limit" },
	[DSV_KNOB_KERNEL] = { "DSVIEW_KERNEL", -1, 0, 0, kernel_names,
			      "the CPU transform kernel (scalar, avx2, avx512, avx512vbmi, "
			      "avx512bf16); unset: "
			      "the widest the processor has" },
	[DSV_KNOB_GPU_EMULATE] = { "DSVIEW_GPU_EMULATE", 0, 0, 1, NULL,
				   "1: with --gpu auto and no device, the device readahead runs "
				   "the host build "
				   "of the device code (for tests)" },
	[DSV_KNOB_GPU_MIN_KB] = { "DSVIEW_GPU_MIN_KB", 0, 0, 1 << 30, NULL,
				  "chunks of fewer KiB are decoded on the CPU, not the GPU" },
	[DSV_KNOB_GPU_MIN_BLOCKS] = { "DSVIEW_GPU_MIN_BLOCKS", 16, 1, 1 << 20, NULL,
				      "a chunk read alone goes to the GPU only with this many LZ4 "
				      "blocks (one warp "
				      "each); fewer decode faster on a CPU core" },
	[DSV_KNOB_READAHEAD_KB] = { "DSVIEW_READAHEAD_KB", 8 << 10, 0, 1 << 30, NULL,
				    "KiB of decoded bytes dsview reads ahead of a sequential "
				    "stream; 0 turns it off" },
	[DSV_KNOB_CLONE_FD] = { "DSVIEW_CLONE_FD", 0, 0, 1, NULL,
				"1: each FUSE worker thread reads /dev/fuse through its own "
				"descriptor" },
	[DSV_KNOB_MAX_BACKGROUND] = { "DSVIEW_MAX_BACKGROUND", 0, 0, 65535, NULL,
				      "the kernel's FUSE max_background; 0: libfuse's default" },
	[DSV_KNOB_HINT_THREADS] = { "DSVIEW_HINT_THREADS", 16, 1, 256, NULL,
				    "threads that store the rows of sampler hints in the page "
				    "cache" },
	[DSV_KNOB_NET_RETRIES] = { "DSVIEW_NET_RETRIES", 5, 0, 20, NULL,
				   "times a GET or HEAD of an object is tried again after a "
				   "connection error, a timeout, 5xx, 408 or 429" },
	[DSV_KNOB_NET_BACKOFF_MS] = { "DSVIEW_NET_BACKOFF_MS", 100, 0, 5000, NULL,
				      "ms before the first retry of an object request; doubled "
				      "each retry (at most 5 s), with jitter" },
	[DSV_KNOB_NET_TIMEOUT_S] = { "DSVIEW_NET_TIMEOUT_S", 20, 1, 3600, NULL,
				     "s to connect to an object store; a transfer that stalls "
				     "this long fails (and is retried)" },
	[DSV_KNOB_NET_AHEAD_KB] = { "DSVIEW_NET_AHEAD_KB", 32 << 10, 0, 1 << 20, NULL,
				    "KiB of an object fetched ahead of a sequential stream of "
				    "reads (net/ahead.c); 0 turns it off" },
	[DSV_KNOB_NET_GET_KB] = { "DSVIEW_NET_GET_KB", 4 << 10, 64, 64 << 10, NULL,
				  "KiB one readahead GET of an object fetches" },
	[DSV_KNOB_NET_GETS] = { "DSVIEW_NET_GETS", 8, 1, 64, NULL,
				"readahead GETs of objects in flight at once, the process "
				"(its threads)" },
	[DSV_KNOB_NET_LIST_PAGE] = { "DSVIEW_NET_LIST_PAGE", 1000, 1, 1000, NULL,
				     "names one request of a bucket listing asks for (max-keys); "
				     "more come page by page" },
};

static int64_t value[DSV_KNOB__COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The index of s in names, or -1. */
static int64_t name_index(const char *const *names, const char *s)
{
	for (int64_t i = 0; names[i]; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

/* A whole decimal number in [min, max], all of s: 0 with *out, or -1. */
static int parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static void warn_names(const dsv_knob_def *d, const char *env)
{
	char list[128] = "";
	size_t n = 0;
	for (int i = 0; d->names[i] && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
				      d->names[i]);
	dsv_log_warn("%s='%s' is not one of %s: unset", d->name, env, list);
}

static void read_one(dsv_knob k)
{
	const dsv_knob_def *d = &table[k];
	const char *env = getenv(d->name);
	int64_t v = d->def;

	if (env && *env) {
		if (d->names)
			v = name_index(d->names, env);
		if (d->names ? v < 0 : parse_int(env, d->min, d->max, &v)) {
			if (d->names)
				warn_names(d, env);
			else
				dsv_log_warn("%s='%s' is not a whole number in [%" PRId64
					     ", %" PRId64 "]: %" PRId64 " used",
					     d->name, env, d->min, d->max, d->def);
			v = d->def;
		}
	}
	value[k] = v;
}

static void read_all(void)
{
	for (int k = 0; k < DSV_KNOB__COUNT; k++)
		read_one((dsv_knob)k);
}

const dsv_knob_def *dsv_knob_get_def(dsv_knob k)
{
	return &table[k];
}

int64_t dsv_knob_int(dsv_knob k)
{
	pthread_once(&once, read_all);
	return value[k];
}

const char *dsv_knob_name(dsv_knob k)
{
	int64_t v = dsv_knob_int(k);
	return table[k].names && v >= 0 ? table[k].names[v] : NULL;
}

void dsv_knobs_reload(void)
{
	pthread_once(&once, read_all);
	read_all();
}
