/*
 * Sources whose file holds samples time-major, channel fastest: K trials
 * of T time rows of C elements each, served as (K, C, T) (EEGLAB's data,
 * embedded in a MAT-file v6 or v7.3, or in a .fdt). A run of a channel's
 * samples is gathered from the time rows, read a batch of rows at a
 * time; a window's channels (dsv_source_read_runs) from one read of its
 * rows.
 */
#include <stdlib.h>
#include <string.h>

#include "common/tlsbuf.h"
#include "source/source.h"
#include "source/source_i.h"

/* Source bytes a chunk (the unit of the cache and of verify): large, so
 * that a recording's rows are read a few times at most when all of it is
 * read. */
#define ROWS_CHUNK (32u << 20)

/* Bytes of whole time rows read by one pread, at most. */
#define ROWS_BATCH_BYTES (1u << 20)

typedef struct rows_state {
	uint64_t C, T, K; /* channels, time rows, trials */
	size_t es;
	uint64_t data_off;
	dsv_source *data; /* the file that holds them; NULL: the source's own */
} rows_state;

static void rows_state_free(void *p)
{
	rows_state *st = p;
	if (st)
		dsv_source_close(st->data);
	free(st);
}

/* n bytes at byte off of the rows: from the file that holds them, or
 * from data's elements where data is a source with a shape (an HDF5
 * dataset: its chunks decoded as its reads decode them). */
static int read_at(const dsv_source *s, const rows_state *st, void *buf, size_t n, uint64_t off)
{
	if (!st->data || !st->data->info.nelems)
		return dsv_source_pread(st->data ? st->data : s, buf, n, off);
	dsv_range r;
	uint64_t bad;
	int err = dsv_range_init(&r, st->data);
	if (!err) {
		err = dsv_range_read(&r, off / st->es, n / st->es, buf, &bad);
		dsv_range_free(&r);
	}
	return err;
}

/* Elements [w, w + m) of trial k's (C, T) into out, from its time rows. */
static int gather_trial(const dsv_source *s, const rows_state *st, uint64_t k, uint64_t w,
			uint64_t m, uint8_t *out)
{
	uint64_t C = st->C, T = st->T, es = st->es, rb = C * es;
	uint64_t c0 = w / T, c1 = (w + m - 1) / T;
	uint64_t t_lo = c0 == c1 ? w % T : 0, t_hi = c0 == c1 ? (w + m - 1) % T + 1 : T;
	uint64_t batch = ROWS_BATCH_BYTES / rb ? ROWS_BATCH_BYTES / rb : 1;
	uint8_t *buf = dsv_tls_buf(DSV_TLS_TIME_ROWS, (size_t)(batch * rb));
	if (!buf)
		return DSV_ERR_NOMEM;
	for (uint64_t t = t_lo; t < t_hi; t += batch) {
		uint64_t nb = t_hi - t < batch ? t_hi - t : batch;
		int err = read_at(s, st, buf, (size_t)(nb * rb), st->data_off + (k * T + t) * rb);
		if (err)
			return err;
		for (uint64_t c = c0; c <= c1; c++) {
			uint64_t a = c == c0 ? w % T : 0, b = c == c1 ? (w + m - 1) % T + 1 : T;
			if (a < t)
				a = t;
			if (b > t + nb)
				b = t + nb;
			uint8_t *o = out + (c * T + a - w) * es;
			const uint8_t *in = buf + ((a - t) * C + c) * es;
			for (uint64_t i = a; i < b; i++, o += es, in += rb)
				memcpy(o, in, es);
		}
	}
	return 0;
}

/* Elements [ref->elem_start, + ref->nelems) of (K, C, T), trial by trial. */
static int rows_read(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap)
{
	const rows_state *st = s->fmt;
	uint64_t e = ref->elem_start, n = ref->nelems, ct = st ? st->C * st->T : 0;
	uint8_t *out = dst;
	if (!st || e > s->info.nelems || n > s->info.nelems - e || dst_cap / st->es < n)
		return DSV_ERR_INVALID;
	while (n) {
		uint64_t w = e % ct, m = ct - w < n ? ct - w : n;
		int err = gather_trial(s, st, e / ct, w, m, out);
		if (err)
			return err;
		out += m * st->es;
		e += m;
		n -= m;
	}
	return 0;
}

/* The source's gather: runs that are channels' samples [t0, t0 + len) of
 * one trial (a window's, or a tile of windows') copied from one read of
 * those time rows; runs that are not such are read run by run. */
static int rows_gather(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
		       uint64_t len, void *dst)
{
	const rows_state *st = s->fmt;
	uint64_t C = st->C, T = st->T, es = st->es, rb = C * es, ct = C * T;
	uint64_t k = start / ct, c0 = start % ct / T, t0 = start % T;
	uint8_t *out = dst;
	if (t0 + len > T || stride % T || (start % ct) + (nruns - 1) * stride >= ct) {
		for (uint64_t p = 0; p < nruns; p++) {
			dsv_chunk_ref ref = { .elem_start = start + p * stride, .nelems = len };
			int err = rows_read(s, &ref, out + p * len * es, (size_t)(len * es));
			if (err)
				return err;
		}
		return 0;
	}
	uint64_t step = stride / T, batch = ROWS_BATCH_BYTES / rb ? ROWS_BATCH_BYTES / rb : 1;
	uint8_t *buf = dsv_tls_buf(DSV_TLS_TIME_ROWS, (size_t)((len < batch ? len : batch) * rb));
	if (!buf)
		return DSV_ERR_NOMEM;
	for (uint64_t t = t0; t < t0 + len; t += batch) {
		uint64_t nb = t0 + len - t < batch ? t0 + len - t : batch;
		int err = read_at(s, st, buf, (size_t)(nb * rb), st->data_off + (k * T + t) * rb);
		if (err)
			return err;
		for (uint64_t p = 0; p < nruns; p++) {
			const uint8_t *in = buf + (c0 + p * step) * es;
			uint8_t *o = out + (p * len + t - t0) * es;
			for (uint64_t i = 0; i < nb; i++, o += es, in += rb)
				memcpy(o, in, es);
		}
	}
	return 0;
}

int dsv_source_set_time_rows(dsv_source *s, dsv_source *data, uint64_t off, uint64_t K, uint64_t C,
			     uint64_t T)
{
	rows_state *st = calloc(1, sizeof(*st));
	uint64_t shape[3] = { K, C, T };
	if (!st) {
		dsv_source_close(data);
		return DSV_ERR_NOMEM;
	}
	*st = (rows_state){ C, T, K, dsv_dtype_size(s->info.dtype), off, data };
	s->fmt = st;
	s->fmt_close = rows_state_free;
	if (!st->es || dsv_source_set_shape(s, 3, shape))
		return DSV_ERR_OVERFLOW;
	s->fallback = 1;
	s->more->lib_read = rows_read;
	s->more->gather = rows_gather;
	dsv_source_flat_chunks(s, ROWS_CHUNK);
	return 0;
}
