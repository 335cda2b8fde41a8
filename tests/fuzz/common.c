/* Helpers shared by the fuzz targets; see fuzz.h. */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "formats/formats.h"

static char dir[64];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void rm_dir(void)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(void)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/dsv-fuzz-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(rm_dir);
	}
	return dir;
}

const char *fuzz_write(const char *name, const void *data, size_t size)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd))
		abort();
	return path;
}

const char *fuzz_write_npy(const char *name, const char *descr, uint64_t rows, uint64_t cols,
			   const void *data, size_t size)
{
	char head[128];
	int n = snprintf(head + 10, sizeof(head) - 10,
			 "{'descr': '%s', 'fortran_order': False, 'shape': (%llu, %llu), }", descr,
			 (unsigned long long)rows, (unsigned long long)cols);
	size_t total = (size_t)n + 10 + 1, pad = (64 - total % 64) % 64;
	char *buf = malloc(total + pad + size);
	if (!buf)
		abort();
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)((total + pad - 10) & 0xff);
	buf[9] = (char)((total + pad - 10) >> 8);
	memcpy(buf + 10, head + 10, (size_t)n);
	memset(buf + 10 + n, ' ', pad);
	buf[total + pad - 1] = '\n';
	if (size)
		memcpy(buf + total + pad, data, size);
	const char *p = fuzz_write(name, buf, total + pad + size);
	free(buf);
	return p;
}

void fuzz_read_chunks(const dsv_source *s)
{
	const dsv_source_info *in = dsv_source_get_info(s);
	size_t scratch_n = dsv_source_scratch_size(s);
	if (scratch_n > (64u << 20))
		return;
	void *scratch = malloc(scratch_n ? scratch_n : 1);
	/* At most 256 chunks and 4 MiB: a library fallback over millions of
	 * tiny HDF5 chunks is slow (32 s for 50 MB of 24-byte chunks), not
	 * stuck, and reading more of one dataset finds nothing new. */
	uint64_t budget = 4u << 20;
	for (uint64_t i = 0; i < in->nchunks && i < 256 && scratch; i++) {
		dsv_chunk_ref r;
		if (dsv_source_chunk(s, i, &r))
			abort(); /* every index below nchunks has a chunk */
		uint64_t need = r.nelems * dsv_dtype_size(in->dtype);
		if (need > budget)
			break;
		budget -= need;
		void *dst = malloc(need ? need : 1);
		if (dst)
			(void)dsv_source_read_chunk(s, &r, dst, need, scratch, scratch_n, NULL);
		free(dst);
	}
	free(scratch);
}

void fuzz_open_all(const char *format, const char *path)
{
	const dsv_format *f = dsv_format_named(format);
	char **names = NULL;
	size_t n = 0;
	dsv_errbuf eb;
	if (!f || f->list(path, &names, &n, &eb) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		dsv_source *s;
		if (f->open(path, names[i], &s, &eb) == 0) {
			fuzz_read_chunks(s);
			dsv_source_close(s);
		}
		free(names[i]);
	}
	free(names);
}
