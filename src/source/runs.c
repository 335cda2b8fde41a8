/*
 * Sources made of runs (source_i.h: dsv_source_set_runs): a 1-D array
 * whose elements lie in several contiguous pieces, of one file (an Arrow
 * IPC file's record batches, one values buffer each) or of several (a
 * LitData dataset's chunk files), as a 1-D array or as rows of a fixed
 * length (an Arrow fixed_size_list). Runs stored as they are make a flat
 * source whose file is virtual: element i at byte i * esize, read through
 * s->more->vpread by one pread per run a read crosses, so the read path reads
 * only what a request needs, as from a .npy. Where a run is compressed
 * (an Arrow buffer in an LZ4 or zstd frame) the source is a chunk grid
 * along axis 0 (grid.c): grid chunk i is rows [i * G, (i + 1) * G), G
 * rows about DSV_RUNS_CHUNK_BYTES, each compressed run it crosses decoded
 * whole and its part copied. The run an element lies in is found by
 * binary search of the runs' first elements.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "common/arith.h"
#include "common/tlsbuf.h"
#include "dsview/codec.h"
#include "source/source_i.h"

/* Bytes of a grid chunk: the read path's unit over runs; the band
 * grouping (dsv_grid_set_bands) takes it as one chunk-row. */
#define DSV_RUNS_CHUNK_BYTES (256u << 10)

typedef struct runs {
	dsv_run *r;
	uint64_t *first; /* first[i]: the element run i starts at; first[n]: all */
	size_t n;
} runs;

/* Closes the runs' files of their own, each once. */
static void close_files(dsv_run *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].file) {
			dsv_source *f = r[i].file;
			for (size_t k = i; k < n; k++)
				if (r[k].file == f)
					r[k].file = NULL;
			dsv_source_close(f);
		}
}

static void runs_close(void *p)
{
	runs *rs = p;
	if (!rs)
		return;
	close_files(rs->r, rs->n);
	free(rs->r);
	free(rs->first);
	free(rs);
}

/* The run element e lies in: the last i with first[i] <= e. */
static size_t run_of(const runs *rs, uint64_t e)
{
	size_t lo = 0, hi = rs->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (rs->first[mid] <= e)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* n bytes of run r of s at byte off of its file (its own, or s's) into
 * out, through the descriptor cache. */
static int run_pread(const dsv_source *s, const dsv_run *r, void *out, size_t n, uint64_t off)
{
	const dsv_source *f = r->file ? r->file : s;
	int fd = dsv_source_fd_get(f), err;
	if (fd < 0)
		return DSV_ERR_IO;
	err = dsv_pread_fd(fd, out, n, off);
	dsv_source_fd_put(f);
	return err;
}

/* Elements [at, at + n) of compressed run r of s into out. */
static int read_packed(const dsv_source *s, const dsv_run *r, uint64_t at, uint64_t n, size_t es,
		       void *out)
{
	unsigned char *in = dsv_tls_buf(DSV_TLS_RUN_IN, (size_t)r->stored);
	unsigned char *raw = dsv_tls_buf(DSV_TLS_RUN_OUT, (size_t)r->raw);
	int64_t got;
	int err;
	if (!in || !raw)
		return DSV_ERR_NOMEM;
	if ((err = run_pread(s, r, in, (size_t)r->stored, r->off)))
		return err;
	got = r->codec == DSV_RUN_LZ4F
		      ? dsv_lz4f_decode(raw, (size_t)r->raw, in, (size_t)r->stored)
		      : dsv_zstd_decode(raw, (size_t)r->raw, in, (size_t)r->stored);
	if (got < 0 || (uint64_t)got != r->raw)
		return DSV_ERR_CORRUPT;
	memcpy(out, raw + r->skip + at * es, (size_t)(n * es));
	return 0;
}

/* The flat layout's bytes [off, off + n) (element i at i * esize). */
static int runs_pread(const dsv_source *s, void *buf, size_t n, uint64_t off)
{
	const runs *rs = s->fmt;
	size_t es = dsv_dtype_size(s->info.dtype);
	unsigned char *out = buf;
	uint64_t total = rs->first[rs->n] * es;

	if (off > total || n > total - off)
		return DSV_ERR_TRUNCATED;
	for (size_t i = n ? run_of(rs, off / es) : rs->n; n; i++) {
		const dsv_run *r = &rs->r[i];
		uint64_t at = off - rs->first[i] * es, left = rs->first[i + 1] * es - off;
		size_t k = left < n ? (size_t)left : n;
		int err = run_pread(s, r, out, k, r->off + at);
		if (err)
			return err;
		out += k;
		off += k;
		n -= k;
	}
	return 0;
}

static int runs_chunk(const dsv_source *s, dsv_grid_io *io, const uint64_t *idx, void *dst,
		      size_t size)
{
	const runs *rs = s->fmt;
	size_t es = dsv_dtype_size(s->info.dtype);
	uint64_t row = s->info.row_elems;
	uint64_t e = idx[0] * s->more->gshape[0] * row, end = e + s->more->gshape[0] * row;
	unsigned char *out = dst;

	if (end > s->info.nelems)
		end = s->info.nelems;
	if ((end - e) * es < size) /* the short last chunk, stored whole */
		memset(out + (end - e) * es, 0, size - (size_t)((end - e) * es));
	for (size_t i = run_of(rs, e); e < end; i++) {
		const dsv_run *r = &rs->r[i];
		uint64_t at = e - rs->first[i], n = rs->first[i + 1] - e;
		if (n > end - e)
			n = end - e;
		int err = r->codec ? read_packed(s, r, at, n, es, out)
				   : run_pread(s, r, out, (size_t)(n * es), r->off + at * es);
		if (err) {
			dsv_grid_fault(io, err, NULL, NULL,
				       "run %zu (%llu elements at byte %llu): %s", i,
				       (unsigned long long)r->count, (unsigned long long)r->off,
				       err == DSV_ERR_TRUNCATED ? "the file ends before it"
				       : err == DSV_ERR_CORRUPT ? "its frame does not decode"
								: "read error");
			return err;
		}
		out += n * es;
		e += n;
	}
	return 0;
}

int dsv_source_set_runs(dsv_source *s, dsv_run *r, size_t n, uint64_t row)
{
	runs *rs = calloc(1, sizeof(*rs));
	size_t es = dsv_dtype_size(s->info.dtype);
	uint64_t total = 0, g = row ? DSV_RUNS_CHUNK_BYTES / es / row : 0;
	int err = 0;

	if (!rs || !(rs->first = malloc((n + 1) * sizeof(*rs->first)))) {
		if (rs)
			free(rs);
		rs = NULL;
		err = DSV_ERR_NOMEM;
	}
	if (rs) {
		rs->r = r;
		rs->n = n;
		s->fmt = rs;
		s->fmt_close = runs_close;
	}
	for (size_t i = 0; !err && i < n; i++) {
		rs->first[i] = total;
		if (dsv_add_u64(total, r[i].count, &total))
			err = DSV_ERR_OVERFLOW;
	}
	if (!rs) {
		close_files(r, n);
		free(r);
	}
	if (err)
		return err;
	rs->first[n] = total;
	if (!row || total % row)
		return DSV_ERR_INVALID;
	uint64_t shape[2] = { total / row, row };
	if ((err = dsv_source_set_shape(s, row == 1 ? 1 : 2, shape)))
		return err;
	s->info.kind = DSV_SRC_RUNS;
	int packed = 0;
	for (size_t i = 0; i < n; i++)
		packed |= r[i].codec != DSV_RUN_PLAIN;
	if (!packed) { /* flat, through runs_pread */
		s->more->vpread = runs_pread;
		s->data_offset = 0;
		s->more->vsize = total * es;
		s->info.stored_bytes = total * es;
		dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
		return 0;
	}
	if (dsv_source_dims(s))
		return DSV_ERR_NOMEM;
	s->grid = s->chunked = 1;
	s->more->gshape[0] = g ? g : 1;
	s->more->gshape[1] = row;
	s->more->gcount[0] = (shape[0] + s->more->gshape[0] - 1) / s->more->gshape[0];
	s->more->gcount[1] = 1;
	s->more->grid_chunk = runs_chunk;
	dsv_grid_set_bands(s);
	s->info.stored_bytes = 0;
	for (size_t i = 0; i < n; i++)
		s->info.stored_bytes += r[i].codec ? r[i].stored : r[i].count * es;
	return 0;
}
