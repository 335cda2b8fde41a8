/*
 * The fixtures beside the unit tests (tests/unit/fixtures/): their paths,
 * reading one whole, and the data pattern the generator scripts write
 * (gen_h5plugin.py and gen_bshuf.py: pattern()); a test's scratch
 * directory and files written into it; bytes in memory behind a reader
 * callback. Needs cmocka included first.
 */
#ifndef DSV_TESTS_FIXTURE_H
#define DSV_TESTS_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/dsview.h"

/* __FILE__ is this header's path: make runs tests from the repo root. */
static inline void fixture_path(char *out, size_t cap, const char *name)
{
	const char *f = __FILE__, *slash = strrchr(f, '/');
	int dlen = slash ? (int)(slash - f) : 1;
	snprintf(out, cap, "%.*s/fixtures/%s", dlen, slash ? f : ".", name);
}

/* The whole fixture file, in a new buffer (one byte more than *len). */
static inline void *read_fixture(const char *name, size_t *len)
{
	char path[512];
	fixture_path(path, sizeof(path), name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open fixture %s (run tests from the repository root)", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A test's scratch directory, made from a mkdtemp(3) template (e.g.
 * "/tmp/dsv-test-x-XXXXXX", edited in place) in a group setup and removed
 * whole in its teardown. @return 0 or -1, as cmocka's group fixtures. */
static inline int scratch_make(char *tmpl)
{
	return mkdtemp(tmpl) ? 0 : -1;
}

static inline int scratch_remove(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The group fixtures setup() and teardown() of a test whose scratch
 * directory is the template dir: made before the group, removed after. */
#define SCRATCH_GROUP_FIXTURES(dir)         \
	static int setup(void **state)      \
	{                                   \
		(void)state;                \
		return scratch_make(dir);   \
	}                                   \
	static int teardown(void **state)   \
	{                                   \
		(void)state;                \
		return scratch_remove(dir); \
	}

/* Writes n bytes to dir/name; returns the path (a static buffer). */
static inline const char *scratch_write(const char *dir, const char *name, const void *data,
					size_t n)
{
	static char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
	return path;
}

/* Bytes in memory read through the formats' reader callbacks
 * (fn(arg, buf, n, off)): mem_read(&m, ...) with a mem {p, n}. */
typedef struct mem {
	const uint8_t *p;
	size_t n;
} mem;

static inline int mem_read(void *arg, void *buf, size_t n, uint64_t off)
{
	const mem *m = arg;
	if (off > m->n || n > m->n - off)
		return DSV_ERR_TRUNCATED;
	memcpy(buf, m->p + off, n);
	return 0;
}

/* The generators' pattern(): runs of i % 7 and pseudo-random bytes. */
static inline void fixture_pattern(int64_t *out, size_t n, uint64_t seed)
{
	uint64_t x = seed;
	for (size_t i = 0; i < n; i++) {
		x = (x * 1103515245u + 12345u) % (1ull << 31);
		out[i] = (i / 40) % 3 == 2 ? (int64_t)((x >> 16) % 251) : (int64_t)(i % 7);
	}
}

#endif
