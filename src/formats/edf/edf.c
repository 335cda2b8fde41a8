/*
 * EDF/EDF+ and BDF/BDF+ recordings as sources: one recording is one row
 * of shape (channels, time), the source (1, C, T), so that a list of
 * recordings concatenates along axis 0 and windows over the last axis
 * never cross two of them.
 *
 * The file is a header (edf_hdr.c) and data records, each holding, signal
 * after signal, that signal's samples of the record's duration: int16
 * (EDF) or int24 (BDF), little-endian. The channels served are the
 * signals at the most common sample rate (dsv_edf_pick); the others and
 * the annotation signals are named in the source's attributes with why
 * (V.json, and /.skipped.json of a zero-configuration mount).
 *
 * Values are served in physical units, each channel's linear map of
 * [dmin, dmax] onto [pmin, pmax] computed in float64 as EDFlib (and so
 * pyedflib's readSignal) computes it, gain * (d + pmax / gain - dmax):
 * the source's elements are float64, which the view's transform takes as
 * they are and rounds once to its output type; where that transform is a
 * linear map to float32 or bfloat16, a window's gather applies it itself
 * as it decodes (edf_gather_to), with the same float64 arithmetic. The
 * elements are gathered from the records at read time (edf_read, the
 * source's lib_read): any run of them, a few channels' stretch of time,
 * reads one span of bytes a record, or a batch of whole records where the
 * span is most of one.
 *
 * Refused, with the field named: EDF+D/BDF+D (records with their own start
 * times), a header that disagrees with the file's size (a short last
 * record included; a record count of -1 is taken from the size), a record
 * duration of 0 with samples in it.
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/arith.h"
#include "common/disk.h"
#include "common/samples.h"
#include "common/str.h"
#include "common/tlsbuf.h"
#include "dsview/source.h"
#include "formats/edf/edf.h"
#include "source/source_i.h"

/* Samples widened to int32 at a time before they are scaled. */
#define DECODE_BLOCK 256
/* Bytes of whole records read by one pread, at most. */
#define EDF_BATCH_BYTES (1u << 20)
/* The block of a file the kernel is asked for around a window's records:
 * its disk's readahead window (what a memmap of a file on that disk reads
 * around a faulted page), at least EDF_AHEAD_MIN, at most EDF_AHEAD_MAX. */
#define EDF_AHEAD_MIN (1u << 20)
#define EDF_AHEAD_MAX (64u << 20)
/* Source bytes a chunk, the unit of the cache and of verify: a few
 * channels' whole time. Random 2 s windows of a BDF+ collection read at
 * 0.25x the .npy copies' rate with 4 MiB, 0.14x with 1 MiB (make
 * bench-eeg, 64 MB, on a loaded 2-core machine). */
#define EDF_CHUNK_BYTES (4u << 20)

/* What reads need: the header, and per channel served its signal and
 * scale. Owned by the source (s->fmt). */
typedef struct edf_state {
	dsv_edf_hdr h;
	size_t nchan;
	size_t *sig; /* the signal of each channel */
	/* a channel's value is gain * (off + d): gain = (pmax - pmin) /
	 * (dmax - dmin), off = pmax / gain - dmax (EDFlib's and pyedflib's
	 * arithmetic, so the float64 values are theirs bit for bit) */
	double *gain, *off;
	uint64_t spr, time; /* samples a record, samples a channel */
	uint64_t ahead;     /* bytes of the block the kernel is asked for */
	/* one bit per block of the file: set once the kernel has been asked
	 * for the block (NULL: not kept, every gather asks) */
	_Atomic uint64_t *asked;
} edf_state;

static void edf_state_free(void *p)
{
	edf_state *st = p;
	if (!st)
		return;
	dsv_edf_hdr_free(&st->h);
	free(st->sig);
	free(st->gain);
	free(st->off);
	free((void *)st->asked);
	free(st);
}

/* 1 when some block of [a, b) (aligned to st->ahead) had not been asked
 * for before; all of them count as asked from now on. */
static int first_ask(const edf_state *st, uint64_t a, uint64_t b)
{
	int any = 0;
	if (!st->asked)
		return 1;
	for (uint64_t k = a / st->ahead; k < b / st->ahead; k++) {
		uint64_t bit = 1ull << (k % 64);
		any |= !(atomic_fetch_or(&st->asked[k / 64], bit) & bit);
	}
	return any;
}

/* n samples of signal sig from sample k on, in physical units, stored by
 * o from output element at on; rec holds a record's bytes from its byte
 * base on. */
static void decode(const edf_state *st, size_t sig, double gain, double off, const uint8_t *rec,
		   uint64_t base, uint64_t k, uint64_t n, const dsv_xform_lin *o, void *out,
		   uint64_t at)
{
	uint64_t bps = st->h.bdf ? 3 : 2;
	const uint8_t *p = rec + (st->h.sig[sig].rec_off - base) + bps * k;
	int32_t d[DECODE_BLOCK];
	for (uint64_t i = 0; i < n; i += DECODE_BLOCK) {
		size_t m = (size_t)(n - i < DECODE_BLOCK ? n - i : DECODE_BLOCK);
		if (st->h.bdf)
			dsv_le24s_to_i32(d, p + bps * i, m);
		else
			dsv_le16s_to_i32(d, p + bps * i, m);
		dsv_xform_lin_put(o, gain, off, d, m,
				  (char *)out + (at + i) * dsv_dtype_size(o->dst));
	}
}

/* The source's own elements: float64, as decoded. */
static const dsv_xform_lin as_f64 = { .dst = DSV_F64, .cast = 1, .scale = 1.0 };

/* The part of record r that channels [c0, c1] need, from elements
 * [e, e + n) of the source, decoded into out (element e at out[0]); rec
 * holds the record's bytes from byte base on (the first channel's). */
static void gather_record(const edf_state *st, const uint8_t *rec, uint64_t base, uint64_t r,
			  uint64_t e, uint64_t n, size_t c0, size_t c1, double *out)
{
	uint64_t T = st->time, t0 = r * st->spr, t1 = t0 + st->spr;
	for (size_t c = c0; c <= c1; c++) {
		uint64_t a = c * T + t0, b = c * T + t1; /* this record's elements of c */
		if (a < e)
			a = e;
		if (b > e + n)
			b = e + n;
		if (a >= b)
			continue;
		decode(st, st->sig[c], st->gain[c], st->off[c], rec, base, a - c * T - t0, b - a,
		       &as_f64, out, a - e);
	}
}

/* What a record read is for: a run of elements of channels c0 .. c1
 * (edf_read), or the same stretch of time of several channels (edf_gather). */
typedef struct rec_job {
	uint64_t e, n; /* edf_read's elements */
	size_t c0, c1; /* and channels */
	int runs;      /* edf_gather's: run p is channel c0 + p * step's */
	uint64_t step, nruns, t0, len;
	/* and of its runs' elements (one after another) [skip, skip + lim),
	 * stored by lin from out[0] on */
	uint64_t skip, lim;
	const dsv_xform_lin *lin;
	void *out;
} rec_job;

/* Record r's part of job, from rec (the record's bytes from byte base on). */
static void visit_record(const edf_state *st, const uint8_t *rec, uint64_t base, uint64_t r,
			 const rec_job *job)
{
	if (!job->runs) {
		gather_record(st, rec, base, r, job->e, job->n, job->c0, job->c1, job->out);
		return;
	}
	uint64_t r0 = r * st->spr, a = job->t0 > r0 ? job->t0 : r0;
	uint64_t b = job->t0 + job->len < r0 + st->spr ? job->t0 + job->len : r0 + st->spr;
	uint64_t end = job->skip + job->lim;
	for (uint64_t p = 0; p < job->nruns; p++) {
		size_t c = job->c0 + (size_t)(p * job->step);
		/* this record's part of run p, as elements of the runs */
		uint64_t g = p * job->len + (a - job->t0), lo = g, hi = g + (b - a);
		if (lo < job->skip)
			lo = job->skip;
		if (hi > end)
			hi = end;
		if (lo >= hi)
			continue;
		decode(st, st->sig[c], st->gain[c], st->off[c], rec, base, a - r0 + (lo - g),
		       hi - lo, job->lin, job->out, lo - job->skip);
	}
}

/* Records [r0, r1), bytes [lo, lo + span) of each, read batch records at
 * a time (whole records between the first and last of a batch) and
 * handed to visit_record. */
static int read_records(const dsv_source *s, const edf_state *st, uint64_t r0, uint64_t r1,
			uint64_t lo, uint64_t span, uint64_t batch, const rec_job *job)
{
	uint64_t RB = st->h.record_bytes;
	if (batch < 1)
		batch = 1;
	if (batch > r1 - r0)
		batch = r1 - r0;
	uint8_t *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)((batch - 1) * RB + span));
	if (!buf)
		return DSV_ERR_NOMEM;
	for (uint64_t r = r0; r < r1; r += batch) {
		uint64_t k = r1 - r < batch ? r1 - r : batch;
		int err = dsv_source_pread(s, buf, (size_t)((k - 1) * RB + span),
					   st->h.bytes + r * RB + lo);
		if (err)
			return err;
		for (uint64_t j = 0; j < k; j++)
			visit_record(st, buf + j * RB, lo, r + j, job);
	}
	return 0;
}

/* Elements [ref->elem_start, + ref->nelems) of (1, C, T): channel by
 * channel, gathered from the records that hold them. */
static int edf_read(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap)
{
	const edf_state *st = s->fmt;
	uint64_t e = ref->elem_start, n = ref->nelems;
	if (!st || e > s->info.nelems || n > s->info.nelems - e || dst_cap / 8 < n)
		return DSV_ERR_INVALID;
	if (n == 0)
		return 0;
	uint64_t T = st->time, RB = st->h.record_bytes;
	size_t c0 = (size_t)(e / T), c1 = (size_t)((e + n - 1) / T);
	uint64_t r0 = c0 == c1 ? (e % T) / st->spr : 0;
	uint64_t r1 = c0 == c1 ? ((e + n - 1) % T) / st->spr + 1 : st->h.records;
	const dsv_edf_signal *first = &st->h.sig[st->sig[c0]], *last = &st->h.sig[st->sig[c1]];
	uint64_t lo = first->rec_off, span = last->rec_off + st->spr * dsv_edf_bps(&st->h) - lo;
	/* records read whole in batches where the span is most of one */
	uint64_t batch = span * 4 >= RB * 3 ? EDF_BATCH_BYTES / RB : 1;
	/* A span a record is read a few KiB every record's length apart: the
	 * kernel is asked for the records whole, in large reads, first (the
	 * pages the other channels' chunks read next). */
	int fd = batch <= 1 ? dsv_source_fd_get(s) : -1; /* the descriptor cache's (fds.c) */
	if (fd >= 0) {
		(void)posix_fadvise(fd, (off_t)(st->h.bytes + r0 * RB), (off_t)((r1 - r0) * RB),
				    POSIX_FADV_WILLNEED);
		dsv_source_fd_put(s);
	}
	rec_job job = { .e = e, .n = n, .c0 = c0, .c1 = c1, .out = dst };
	return read_records(s, st, r0, r1, lo, span, batch, &job);
}

/* Runs of len elements that are channels' samples [t0, t0 + len) (a
 * window's, or a tile of windows'): their elements [skip, skip + lim)
 * (the runs one after another) decoded from one read of the records that
 * hold that stretch of time and stored by lin into dst. */
static int gather_runs(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
		       uint64_t len, const dsv_xform_lin *lin, uint64_t skip, uint64_t lim,
		       void *dst)
{
	const edf_state *st = s->fmt;
	uint64_t T = st->time, t0 = start % T, lo = UINT64_MAX, hi = 0;
	size_t c0 = (size_t)(start / T), step = (size_t)(stride / T);
	for (uint64_t p = 0; p < nruns; p++) {
		const dsv_edf_signal *g = &st->h.sig[st->sig[c0 + p * step]];
		if (g->rec_off < lo)
			lo = g->rec_off;
		if (g->rec_off + st->spr * dsv_edf_bps(&st->h) > hi)
			hi = g->rec_off + st->spr * dsv_edf_bps(&st->h);
	}
	/* Random windows read a recording a few records at a time: the
	 * kernel is asked for the aligned block around them at once, so that
	 * the next windows near them find their records read. Each block is
	 * asked for once: the advice walks the block's pages (about as long
	 * as the pread of a window's records), and a block asked for before
	 * is read or being read; one evicted since is read by the pread. */
	uint64_t r0 = t0 / st->spr, r1 = (t0 + len - 1) / st->spr + 1, RB = st->h.record_bytes;
	uint64_t A = st->ahead, a = (st->h.bytes + r0 * RB) / A * A;
	uint64_t b = (st->h.bytes + r1 * RB + A - 1) / A * A;
	int fd = first_ask(st, a, b) ? dsv_source_fd_get(s) : -1;
	if (fd >= 0) {
		(void)posix_fadvise(fd, (off_t)a, (off_t)(b - a), POSIX_FADV_WILLNEED);
		dsv_source_fd_put(s);
	}
	rec_job job = { .runs = 1,
			.c0 = c0,
			.step = step,
			.nruns = nruns,
			.t0 = t0,
			.len = len,
			.skip = skip,
			.lim = lim,
			.lin = lin,
			.out = dst };
	return read_records(s, st, r0, r1, lo, hi - lo, EDF_BATCH_BYTES / st->h.record_bytes, &job);
}

/* The runs gather_runs serves: each a channel's stretch of time, one
 * stretch for all. */
static int same_time(const edf_state *st, uint64_t start, uint64_t stride, uint64_t len)
{
	return start % st->time + len <= st->time && stride % st->time == 0;
}

/* The source's gather: runs of one stretch of time decoded from one read
 * of its records (gather_runs); others (a run that crosses channels, runs
 * at different times) are read run by run. */
static int edf_gather(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
		      uint64_t len, void *dst)
{
	const edf_state *st = s->fmt;
	if (same_time(st, start, stride, len))
		return gather_runs(s, start, stride, nruns, len, &as_f64, 0, nruns * len, dst);
	for (uint64_t p = 0; p < nruns; p++) {
		dsv_chunk_ref ref = { .elem_start = start + p * stride, .nelems = len };
		int err = edf_read(s, &ref, (double *)dst + p * len, (size_t)(len * 8));
		if (err)
			return err;
	}
	return 0;
}

/* The gather straight into a view's output (dsv_source_read_runs_to):
 * the runs gather_runs serves, others refused (read through edf_gather
 * and the transform instead). */
static int edf_gather_to(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
			 uint64_t len, const dsv_gather_out *o, void *dst)
{
	if (!same_time(s->fmt, start, stride, len))
		return DSV_ERR_UNSUPPORTED;
	if (o->n == 0)
		return 0;
	return gather_runs(s, start, stride, nruns, len, &o->lin, o->skip, o->n, dst);
}

/* A header string as JSON: printable ASCII, others as '?' (the header is
 * ASCII; a byte that is not would not be UTF-8). */
static json_t *ascii(const char *s)
{
	char t[96];
	size_t i = 0;
	for (; s[i] && i + 1 < sizeof(t); i++)
		t[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	t[i] = '\0';
	return json_string(t);
}

/* Why signal i is not served. */
static void skip_reason(const edf_state *st, size_t i, char *out, size_t cap)
{
	const dsv_edf_signal *g = &st->h.sig[i];
	if (g->annotation)
		snprintf(out, cap, "an annotation signal (EDF+ text), not samples");
	else if (!g->spr)
		snprintf(out, cap, "no samples in a data record");
	else
		snprintf(out, cap, "sampled at %g Hz, not the recording's %g Hz",
			 (double)g->spr / st->h.duration, (double)st->spr / st->h.duration);
}

/* The recording's attributes (V.json): format, start, rate, channels
 * with their units, and the signals not served with why. */
static char *edf_attrs(const edf_state *st)
{
	json_t *o = json_object(), *labels = json_array(), *units = json_array();
	json_t *skipped = json_array();
	const char *fmt = st->h.bdf ? (st->h.plus ? "BDF+C" : "BDF")
				    : (st->h.plus ? "EDF+C" : "EDF");
	char why[96];
	for (size_t c = 0; c < st->nchan; c++) {
		json_array_append_new(labels, ascii(st->h.sig[st->sig[c]].label));
		json_array_append_new(units, ascii(st->h.sig[st->sig[c]].unit));
	}
	for (size_t i = 0, c = 0; i < st->h.ns; i++) {
		if (c < st->nchan && st->sig[c] == i) {
			c++;
			continue;
		}
		skip_reason(st, i, why, sizeof(why));
		json_t *k = json_object();
		json_object_set_new(k, "label", ascii(st->h.sig[i].label));
		json_object_set_new(k, "samples_per_record",
				    json_integer((json_int_t)st->h.sig[i].spr));
		json_object_set_new(k, "reason", json_string(why));
		json_array_append_new(skipped, k);
	}
	json_object_set_new(o, "format", json_string(fmt));
	json_object_set_new(o, "start", ascii(st->h.start));
	json_object_set_new(o, "sample_rate", json_real((double)st->spr / st->h.duration));
	json_object_set_new(o, "record_duration", json_real(st->h.duration));
	json_object_set_new(o, "records", json_integer((json_int_t)st->h.records));
	json_object_set_new(o, "channels", labels);
	json_object_set_new(o, "units", units);
	json_object_set_new(o, "skipped_signals", skipped);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

/* The channels served and their scales, from st->h. */
static int pick_channels(edf_state *st, const char *path, dsv_errbuf *eb)
{
	dsv_edf_hdr *h = &st->h;
	if (!(st->sig = calloc(h->ns, sizeof(*st->sig))) ||
	    !(st->gain = calloc(h->ns, sizeof(double))) ||
	    !(st->off = calloc(h->ns, sizeof(double))))
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	st->spr = dsv_edf_pick(h, st->sig, &st->nchan);
	if (!st->spr)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, NULL,
				   "no signal holds samples (annotations only)");
	if (!(h->duration > 0))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, "duration of a data record",
				   "0 seconds, with %llu samples a record",
				   (unsigned long long)st->spr);
	for (size_t c = 0; c < st->nchan; c++) {
		const dsv_edf_signal *g = &h->sig[st->sig[c]];
		st->gain[c] = (g->pmax - g->pmin) / ((double)g->dmax - (double)g->dmin);
		st->off[c] = g->pmax / st->gain[c] - (double)g->dmax;
	}
	return 0;
}

/* The header of s's file, parsed and checked against its size. */
static int read_header(dsv_source *s, dsv_edf_hdr *h, dsv_errbuf *eb)
{
	uint8_t fixed[DSV_EDF_FIXED];
	dsv_errbuf sub;
	int err;
	size_t len = s->file_size < sizeof(fixed) ? (size_t)s->file_size : sizeof(fixed);

	if ((err = dsv_source_pread(s, fixed, len, 0)))
		return dsv_errf_at(eb, err, s->path, NULL, "cannot read the EDF/BDF header");
	if ((err = dsv_edf_parse_fixed(fixed, len, h, &sub)))
		return dsv_errf_at(eb, err, s->path, sub.where, "%s", sub.reason);
	if (h->plus == DSV_EDF_PLUS_D)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, "reserved",
				   "%s+D: a discontinuous recording, whose records each start at "
				   "their own time; only contiguous ones (EDF, EDF+C, BDF, BDF+C) "
				   "are served",
				   h->bdf ? "BDF" : "EDF");
	if (s->file_size < h->bytes)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, s->path, "number of bytes in header",
				   "%llu, but the file is %llu bytes", (unsigned long long)h->bytes,
				   (unsigned long long)s->file_size);
	size_t slen = h->ns * DSV_EDF_SIGNAL;
	uint8_t *sig = malloc(slen);
	if (!sig)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, s->path, NULL, "out of memory");
	if ((err = dsv_source_pread(s, sig, slen, DSV_EDF_FIXED)))
		err = dsv_errf_at(eb, err, s->path, NULL, "cannot read the signal headers");
	else if ((err = dsv_edf_parse_signals(sig, slen, h, &sub)) ||
		 (err = dsv_edf_check_size(h, s->file_size, &sub)))
		err = dsv_errf_at(eb, err, s->path, sub.where, "%s", sub.reason);
	free(sig);
	return err;
}

/* s's shape, layout and description, from st. */
static int edf_layout(dsv_source *s, edf_state *st, dsv_errbuf *eb)
{
	uint64_t shape[3] = { 1, st->nchan, 0 };
	if (dsv_mul_u64(st->spr, st->h.records, &st->time))
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, s->path, NULL, "too many samples");
	shape[2] = st->time;
	s->info.dtype = DSV_F64;
	if (dsv_source_set_shape(s, 3, shape))
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, s->path, NULL, "too many samples");
	s->info.kind = DSV_SRC_EDF;
	s->info.stored_bytes = st->h.records * st->h.record_bytes;
	dsv_source_why(s, "%d-bit samples gathered from %llu records", st->h.bdf ? 24 : 16,
		       (unsigned long long)st->h.records);
	if (!(s->attrs_json = edf_attrs(st)))
		return dsv_errf_at(eb, DSV_ERR_NOMEM, s->path, NULL, "out of memory");
	s->info.attrs = s->attrs_json;
	s->fallback = 1;
	s->more->lib_read = edf_read;
	s->more->gather = edf_gather;
	s->more->gather_to = edf_gather_to;
	uint64_t ra = dsv_disk_readahead(s->path);
	st->ahead = ra < EDF_AHEAD_MIN ? EDF_AHEAD_MIN : ra > EDF_AHEAD_MAX ? EDF_AHEAD_MAX : ra;
	/* without it every gather asks: slower, not wrong */
	st->asked = calloc((size_t)(s->file_size / st->ahead / 64 + 1), sizeof(*st->asked));
	dsv_source_flat_chunks(s, EDF_CHUNK_BYTES);
	return 0;
}

int dsv_edf_take_header(dsv_source *s, dsv_edf_hdr *h, dsv_errbuf *eb)
{
	edf_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st) {
		dsv_edf_hdr_free(h);
		return dsv_errf_at(eb, DSV_ERR_NOMEM, s->path, NULL, "out of memory");
	}
	st->h = *h;
	*h = (dsv_edf_hdr){ 0 };
	s->fmt = st;
	s->fmt_close = edf_state_free;
	if (!(err = pick_channels(st, s->path, eb)))
		err = edf_layout(s, st, eb);
	return err;
}

const dsv_edf_hdr *dsv_edf_header_of(const dsv_source *s)
{
	return s->fmt && s->fmt_close == edf_state_free ? &((const edf_state *)s->fmt)->h : NULL;
}

int dsv_source_open_edf(const char *path, dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(path, NULL);
	dsv_edf_hdr h = { 0 };
	int err;

	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)) || (err = read_header(s, &h, eb)) ||
	    (err = dsv_edf_take_header(s, &h, eb))) {
		dsv_edf_hdr_free(&h);
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}

static size_t edf_by_name(const char *name)
{
	return dsv_has_ext(name, ".edf") || dsv_has_ext(name, ".bdf") ? 4 : 0;
}

/* BDF's version field, or EDF's with a fixed part that parses. */
static int edf_by_magic(int fd)
{
	uint8_t buf[DSV_EDF_FIXED];
	dsv_edf_hdr h;
	dsv_errbuf eb;
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	return n == (ssize_t)sizeof(buf) && dsv_edf_parse_fixed(buf, sizeof(buf), &h, &eb) == 0;
}

static int edf_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	return dsv_source_open_edf(file, out, eb);
}

const dsv_format dsv_format_edf = {
	.name = "edf",
	.noun = "an EDF or BDF recording (.edf, .bdf)",
	.traits = DSV_FMT_TREE,
	.by_name = edf_by_name,
	.by_magic = edf_by_magic,
	.open = edf_open,
	.save = dsv_edf_index_save,
	.load = dsv_edf_index_load,
};
