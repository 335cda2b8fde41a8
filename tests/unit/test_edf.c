/* EDF/BDF headers and sources: files built here byte by byte, each header
 * field malformed in turn (its code and the field named), the channels
 * picked, and every run of elements read from the records compared with
 * the values computed here; a recording's index cache entry made into its
 * source again, and damaged entries refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/bytes.h"
#include "dsview/source.h"
#include "fixture.h"
#include "formats/edf/edf.h"
#include "source/source.h"

static char dir[] = "/tmp/dsv-test-edf-XXXXXX";

/* A recording to build: signals with their samples per record. */
typedef struct rec_spec {
	int bdf;
	const char *reserved; /* "", "EDF+C", "BDF+D", ... */
	size_t ns;
	const uint64_t *spr;
	const char *const *labels;
	uint64_t records;
	const char *records_field; /* NULL: records */
} rec_spec;

/* Writes text left-justified in a field of width bytes, space-padded. */
static void put(uint8_t *p, size_t width, const char *text)
{
	memset(p, ' ', width);
	memcpy(p, text, strlen(text) < width ? strlen(text) : width);
}

static int64_t dmin_of(const rec_spec *r, size_t i)
{
	return (r->bdf ? -8000000 : -32000) + (int64_t)i * 7;
}

static int64_t dmax_of(const rec_spec *r, size_t i)
{
	return (r->bdf ? 8000000 : 32000) - (int64_t)i * 3;
}

static double pmin_of(size_t i)
{
	return -250.5 - (double)i;
}

static double pmax_of(size_t i)
{
	return 300.25 + 0.5 * (double)i;
}

/* Signal i's digital sample t: spread over its range, both signs. */
static int64_t sample(const rec_spec *r, size_t i, uint64_t t)
{
	int64_t lo = dmin_of(r, i), hi = dmax_of(r, i);
	uint64_t span = (uint64_t)(hi - lo + 1);
	return lo + (int64_t)((t * 2654435761u + i * 40503u) % span);
}

static double phys(const rec_spec *r, size_t i, uint64_t t)
{
	double gain = (pmax_of(i) - pmin_of(i)) / ((double)dmax_of(r, i) - (double)dmin_of(r, i));
	double off = pmax_of(i) / gain - (double)dmax_of(r, i);
	return gain * (off + (double)sample(r, i, t));
}

/* The file's bytes (malloc'd), *len of them. */
static uint8_t *build(const rec_spec *r, size_t *len)
{
	size_t ns = r->ns, hb = 256 * (ns + 1), bps = r->bdf ? 3 : 2, rb = 0;
	char t[64];
	for (size_t i = 0; i < ns; i++)
		rb += r->spr[i] * bps;
	*len = hb + rb * r->records;
	uint8_t *b = calloc(1, *len), *p;
	assert_non_null(b);
	if (r->bdf) {
		b[0] = 0xff;
		memcpy(b + 1, "BIOSEMI", 7);
	} else {
		put(b, 8, "0");
	}
	put(b + 8, 80, "X X X X");
	put(b + 88, 80, "Startdate X X X X");
	put(b + 168, 8, "06.12.26");
	put(b + 176, 8, "04.45.00");
	snprintf(t, sizeof(t), "%zu", hb);
	put(b + 184, 8, t);
	put(b + 192, 44, r->reserved);
	snprintf(t, sizeof(t), "%llu", (unsigned long long)r->records);
	put(b + 236, 8, r->records_field ? r->records_field : t);
	put(b + 244, 8, "1");
	snprintf(t, sizeof(t), "%zu", ns);
	put(b + 252, 4, t);
	p = b + 256;
	for (size_t i = 0; i < ns; i++) {
		put(p + 16 * i, 16, r->labels[i]);
		put(p + ns * 16 + 80 * i, 80, "AgAgCl electrode");
		put(p + ns * 96 + 8 * i, 8, "uV");
		snprintf(t, sizeof(t), "%g", pmin_of(i));
		put(p + ns * 104 + 8 * i, 8, t);
		snprintf(t, sizeof(t), "%g", pmax_of(i));
		put(p + ns * 112 + 8 * i, 8, t);
		snprintf(t, sizeof(t), "%lld", (long long)dmin_of(r, i));
		put(p + ns * 120 + 8 * i, 8, t);
		snprintf(t, sizeof(t), "%lld", (long long)dmax_of(r, i));
		put(p + ns * 128 + 8 * i, 8, t);
		put(p + ns * 136 + 80 * i, 80, "HP:0.1Hz");
		snprintf(t, sizeof(t), "%llu", (unsigned long long)r->spr[i]);
		put(p + ns * 216 + 8 * i, 8, t);
		put(p + ns * 224 + 32 * i, 32, "");
	}
	p = b + hb;
	for (uint64_t k = 0; k < r->records; k++)
		for (size_t i = 0; i < ns; i++)
			for (uint64_t j = 0; j < r->spr[i]; j++, p += bps) {
				uint64_t v = (uint64_t)sample(r, i, k * r->spr[i] + j);
				for (size_t q = 0; q < bps; q++)
					p[q] = (uint8_t)(v >> (8 * q));
			}
	return b;
}

static const uint64_t spr7[] = { 50, 50, 10, 50, 30, 50, 50 };
static const char *const labels7[] = { "Fp1", "Fp2", "SpO2", "C3", "BDF Annotations", "C4", "O1" };

static void test_parse_and_pick(void **state)
{
	(void)state;
	rec_spec r = { 1, "BDF+C", 7, spr7, labels7, 4, NULL };
	size_t len, pick[7], n;
	uint8_t *b = build(&r, &len);
	dsv_edf_hdr h;
	dsv_errbuf eb;
	assert_int_equal(dsv_edf_parse(b, len, len, &h, &eb), 0);
	assert_true(h.bdf && h.plus == DSV_EDF_PLUS_C && h.ns == 7 && h.records == 4);
	assert_int_equal(h.record_bytes, (50 * 5 + 10 + 30) * 3);
	assert_string_equal(h.sig[3].label, "C3");
	assert_string_equal(h.sig[3].unit, "uV");
	assert_true(h.sig[4].annotation && !h.sig[3].annotation);
	assert_true(h.sig[1].pmin == -251.5 && h.sig[1].pmax == 300.75);
	assert_int_equal(h.sig[2].rec_off, 300);
	assert_int_equal(dsv_edf_pick(&h, pick, &n), 50);
	assert_int_equal(n, 5);
	assert_true(pick[0] == 0 && pick[1] == 1 && pick[2] == 3 && pick[3] == 5 && pick[4] == 6);
	dsv_edf_hdr_free(&h);
	free(b);
}

/* A copy of the built file with text at off; its parse fails with code
 * and a where holding field. */
static void bad(const uint8_t *b, size_t len, size_t off, const char *text, int code,
		const char *field)
{
	uint8_t *c = malloc(len);
	dsv_edf_hdr h;
	dsv_errbuf eb;
	memcpy(c, b, len);
	memcpy(c + off, text, strlen(text));
	int err = dsv_edf_parse(c, len, len, &h, &eb);
	dsv_edf_hdr_free(&h);
	if (err != code || !strstr(eb.where, field))
		fail_msg("'%s' at %zu: %d (%s: %s), want %d naming %s", text, off, err, eb.where,
			 eb.reason, code, field);
	free(c);
}

static void test_malformed(void **state)
{
	(void)state;
	rec_spec r = { 1, "BDF+C", 7, spr7, labels7, 3, NULL };
	size_t len, ns = 7, S = 256;
	uint8_t *b = build(&r, &len);
	bad(b, len, 0, "0", DSV_ERR_FORMAT, "version");
	bad(b, len, 192, "BDF+X", DSV_ERR_FORMAT, "reserved");
	bad(b, len, 192, "EDF+C", DSV_ERR_FORMAT, "reserved");
	bad(b, len, 184, "2304    ", DSV_ERR_FORMAT, "number of bytes in header");
	bad(b, len, 236, "-2      ", DSV_ERR_FORMAT, "number of data records");
	bad(b, len, 236, "4       ", DSV_ERR_TRUNCATED, "number of data records");
	bad(b, len, 236, "2       ", DSV_ERR_FORMAT, "number of data records");
	bad(b, len, 236, "1 2     ", DSV_ERR_FORMAT, "number of data records");
	bad(b, len, 244, "-1      ", DSV_ERR_FORMAT, "duration of a data record");
	bad(b, len, 244, "inf     ", DSV_ERR_FORMAT, "duration of a data record");
	bad(b, len, 252, "x   ", DSV_ERR_FORMAT, "number of signals");
	bad(b, len, 252, "9999", DSV_ERR_FORMAT, "number of signals");
	bad(b, len, S + ns * 104 + 8, "1e999   ", DSV_ERR_FORMAT,
	    "signal 1 (Fp2): physical minimum");
	bad(b, len, S + ns * 112 + 16, "-252.5  ", DSV_ERR_FORMAT,
	    "signal 2 (SpO2): physical maximum");
	bad(b, len, S + ns * 120 + 24, "-9000000", DSV_ERR_FORMAT,
	    "signal 3 (C3): digital minimum");
	bad(b, len, S + ns * 128 + 0, "-8000000", DSV_ERR_FORMAT,
	    "signal 0 (Fp1): digital maximum");
	bad(b, len, S + ns * 216 + 40, "5.5     ", DSV_ERR_FORMAT,
	    "signal 5 (C4): number of samples in each data record");
	/* cut short: inside the fixed part, the signal fields, a record */
	dsv_edf_hdr h;
	dsv_errbuf eb;
	assert_int_equal(dsv_edf_parse(b, 200, 200, &h, &eb), DSV_ERR_FORMAT);
	assert_string_equal(eb.where, "header");
	assert_int_equal(dsv_edf_parse(b, 1000, 1000, &h, &eb), DSV_ERR_TRUNCATED);
	assert_string_equal(eb.where, "number of bytes in header");
	assert_int_equal(dsv_edf_parse(b, len, len - 1, &h, &eb), DSV_ERR_TRUNCATED);
	assert_non_null(strstr(eb.reason, "short last record"));
	dsv_edf_hdr_free(&h);
	free(b);
}

/* Reads runs [e, e + n) of the source and checks each value. */
static void check_run(const dsv_source *s, const rec_spec *r, const size_t *sig, uint64_t e,
		      uint64_t n)
{
	const dsv_source_info *in = dsv_source_get_info(s);
	uint64_t T = in->shape[2];
	if (n > in->nelems - e)
		n = in->nelems - e;
	double *got = malloc(n * sizeof(double));
	dsv_chunk_ref ref = { 0 };
	ref.elem_start = e;
	ref.nelems = n;
	ref.fallback = 1;
	assert_non_null(got);
	int err = dsv_source_read_fallback(s, &ref, got, n * sizeof(double));
	if (err)
		fail_msg("elements [%llu, +%llu): %d", (unsigned long long)e, (unsigned long long)n,
			 err);
	for (uint64_t k = 0; k < n; k++) {
		uint64_t c = (e + k) / T, t = (e + k) % T;
		double want = phys(r, sig[c], t);
		if (got[k] != want)
			fail_msg("element %llu (channel %llu, t %llu): %.17g, want %.17g",
				 (unsigned long long)(e + k), (unsigned long long)c,
				 (unsigned long long)t, got[k], want);
	}
	free(got);
}

/* Gathers nruns runs of len elements, stride apart, from start
 * (dsv_source_read_runs) and checks each value. */
static void check_gather(const dsv_source *s, const rec_spec *r, const size_t *sig, uint64_t start,
			 uint64_t stride, uint64_t nruns, uint64_t len)
{
	uint64_t T = dsv_source_get_info(s)->shape[2];
	double *got = malloc(nruns * len * sizeof(double));
	assert_non_null(got);
	int err = dsv_source_read_runs(s, start, stride, nruns, len, got);
	if (err)
		fail_msg("runs from %llu, %llu apart: %d", (unsigned long long)start,
			 (unsigned long long)stride, err);
	for (uint64_t p = 0; p < nruns; p++)
		for (uint64_t k = 0; k < len; k++) {
			uint64_t e = start + p * stride + k, c = e / T, t = e % T;
			if (got[p * len + k] != phys(r, sig[c], t))
				fail_msg("run %llu element %llu: %.17g, want %.17g",
					 (unsigned long long)p, (unsigned long long)k,
					 got[p * len + k], phys(r, sig[c], t));
		}
	free(got);
}

/* A window's runs, and runs that are not one stretch of time (read run by
 * run); runs past the source refused. */
static void gathers(const dsv_source *s, const rec_spec *r, const size_t *sig, uint64_t T)
{
	double one;
	assert_true(dsv_source_gathers(s));
	check_gather(s, r, sig, 0, T, 5, T < 200 ? T : 200);
	check_gather(s, r, sig, T - 20, T, 4, 20);        /* the last samples */
	check_gather(s, r, sig, T + 3, 2 * T, 2, T - 3);  /* channels 1 and 3 */
	check_gather(s, r, sig, 2 * T - 5, T + 1, 3, 10); /* across a channel's end */
	check_gather(s, r, sig, 7, T + 11, 4, 9);         /* a later time each */
	/* windows all along the file (several of the blocks the kernel is
	 * asked for once), each read twice: the second finds its block asked
	 * for already */
	uint64_t len = T < 100 ? T : 100;
	for (uint64_t t = 0; t + len <= T; t += T / 9 + 1) {
		check_gather(s, r, sig, t, T, 5, len);
		check_gather(s, r, sig, t, T, 5, len);
	}
	assert_int_equal(dsv_source_read_runs(s, 5 * T - 1, T, 1, 2, &one), DSV_ERR_INVALID);
	assert_int_equal(dsv_source_read_runs(s, 0, T, 6, 1, &one), DSV_ERR_INVALID);
}

static void read_all_runs(int bdf, uint64_t records)
{
	rec_spec r = { bdf, bdf ? "BDF+C" : "EDF+C", 7, spr7, labels7, records, NULL };
	static const size_t sig[] = { 0, 1, 3, 5, 6 };
	size_t len;
	uint8_t *b = build(&r, &len);
	const char *path = scratch_write(dir, bdf ? "r.bdf" : "r.edf", b, len);
	dsv_source *s;
	dsv_errbuf eb;
	assert_int_equal(dsv_source_open(path, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	uint64_t T = 50 * records, N = 5 * T;
	assert_int_equal(in->dtype, DSV_F64);
	assert_int_equal(in->ndim, 3);
	assert_true(in->shape[0] == 1 && in->shape[1] == 5 && in->shape[2] == T);
	assert_int_equal(in->kind, DSV_SRC_EDF);
	assert_non_null(strstr(in->attrs, "\"skipped_signals\""));
	assert_non_null(strstr(in->attrs, "\"SpO2\""));
	/* whole; each chunk; inside one record; across records of one channel;
	 * across channels; the last element; then at random */
	check_run(s, &r, sig, 0, N);
	for (uint64_t c = 0; c < in->nchunks; c++)
		check_run(s, &r, sig, c * in->chunk_elems,
			  c + 1 < in->nchunks ? in->chunk_elems : N - c * in->chunk_elems);
	check_run(s, &r, sig, 7, 30);
	check_run(s, &r, sig, T + 45, 170);
	check_run(s, &r, sig, T - 3, 9);
	check_run(s, &r, sig, 2 * T - 60, T + 120);
	check_run(s, &r, sig, N - 1, 1);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 200; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t e = x % N, n = 1 + (x >> 20) % (i % 4 ? 400 : 3 * T);
		check_run(s, &r, sig, e, n < N - e ? n : N - e);
	}
	gathers(s, &r, sig, T);
	dsv_source_close(s);
	free(b);
}

static void test_reads(void **state)
{
	(void)state;
	read_all_runs(1, 3000); /* 750,000 elements: several chunks */
	read_all_runs(0, 700);
	read_all_runs(1, 1);
}

static void test_open_refused(void **state)
{
	(void)state;
	dsv_source *s;
	dsv_errbuf eb;
	size_t len;
	rec_spec d = { 0, "EDF+D", 7, spr7, labels7, 3, NULL };
	uint8_t *b = build(&d, &len);
	const char *path = scratch_write(dir, "d.edf", b, len);
	assert_int_equal(dsv_source_open(path, &s, &eb), DSV_ERR_UNSUPPORTED);
	assert_string_equal(eb.file, path);
	assert_string_equal(eb.where, "reserved");
	assert_non_null(strstr(eb.reason, "discontinuous"));
	free(b);
	/* -1: the count from the size; a part of a record more: refused */
	rec_spec u = { 1, "", 7, spr7, labels7, 5, "-1" };
	b = build(&u, &len);
	path = scratch_write(dir, "u.bdf", b, len);
	assert_int_equal(dsv_source_open(path, &s, &eb), 0);
	assert_int_equal(dsv_source_get_info(s)->shape[2], 250);
	dsv_source_close(s);
	path = scratch_write(dir, "u2.bdf", b, len - 2);
	assert_int_equal(dsv_source_open(path, &s, &eb), DSV_ERR_TRUNCATED);
	assert_string_equal(eb.where, "number of data records");
	free(b);
	/* annotations alone: nothing to serve */
	static const uint64_t one[] = { 30 };
	static const char *const ann[] = { "EDF Annotations" };
	rec_spec a = { 0, "EDF+C", 1, one, ann, 2, NULL };
	b = build(&a, &len);
	path = scratch_write(dir, "a.edf", b, len);
	assert_int_equal(dsv_source_open(path, &s, &eb), DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.reason, "annotations only"));
	free(b);
}

/* Loads blob[0 .. len) as the recording at path from the index cache. */
static int from_entry(const char *path, const void *blob, size_t len, dsv_source **out)
{
	struct stat fs;
	dsv_index_stamp st;
	dsv_errbuf eb;
	assert_int_equal(stat(path, &fs), 0);
	dsv_index_stamp_of(&fs, &st);
	int err = dsv_edf_index_load(path, NULL, blob, len, &st, out, &eb);
	if (err) {
		assert_null(*out);
		assert_string_equal(eb.file, path);
		assert_non_null(strstr(eb.reason, "index cache"));
	}
	return err;
}

static void store_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A recording saved into its index entry and made again from it: the
 * same shape, attributes and samples, no file opened before a read, the
 * same bytes saved again; every value no header could hold refused. */
static void test_index_entry(void **state)
{
	(void)state;
	rec_spec r = { 1, "BDF+C", 7, spr7, labels7, 20, NULL };
	static const size_t sig[] = { 0, 1, 3, 5, 6 };
	size_t len;
	uint8_t *b = build(&r, &len);
	const char *path = scratch_write(dir, "i.bdf", b, len);
	dsv_source *s, *back;
	dsv_errbuf eb;
	dsv_index_buf e = { 0 }, again = { 0 };
	dsv_source_fd_stats before, after;

	free(b);
	assert_int_equal(dsv_source_open(path, &s, &eb), 0);
	assert_int_equal(dsv_edf_index_save(s, &e), 0);
	assert_int_equal(e.len, 48 + 17 + 7 * 64);
	dsv_source_fd_counts(&before);
	assert_int_equal(from_entry(path, e.p, e.len, &back), 0);
	dsv_source_fd_counts(&after);
	assert_int_equal(after.firsts, before.firsts); /* nothing opened yet */
	const dsv_source_info *a = dsv_source_get_info(s), *z = dsv_source_get_info(back);
	assert_int_equal(z->kind, DSV_SRC_EDF);
	assert_memory_equal(z->shape, a->shape, sizeof(a->shape));
	assert_int_equal(z->nchunks, a->nchunks);
	assert_string_equal(z->attrs, a->attrs);
	assert_string_equal(z->why, a->why);
	check_run(back, &r, sig, 0, z->nelems);
	assert_int_equal(dsv_edf_index_save(back, &again), 0);
	assert_int_equal(again.len, e.len);
	assert_memory_equal(again.p, e.p, e.len);
	free(again.p);
	dsv_source_close(back);
	dsv_source_close(s);

	double nan = NAN, inf = INFINITY, neg = -1.0;
	uint64_t nan_bits, inf_bits, neg_bits;
	memcpy(&nan_bits, &nan, 8);
	memcpy(&inf_bits, &inf, 8);
	memcpy(&neg_bits, &neg, 8);
	uint8_t *blob = e.p;
	const size_t S0 = 48 + 17; /* signal 0: label, unit, pmin, pmax, dmin, dmax, spr */
	const struct {
		size_t at;
		uint64_t bad;
	} cases[] = {
		{ 0, 2 },                        /* neither EDF nor BDF */
		{ 8, DSV_EDF_PLUS_D },           /* discontinuous */
		{ 16, 257 },                     /* header bytes not 256 * (ns + 1) */
		{ 24, (uint64_t)-2 },            /* a record count below -1 */
		{ 24, 21 },                      /* more records than the file holds */
		{ 32, nan_bits },                /* a duration that is no number */
		{ 32, neg_bits },                /* a negative duration */
		{ 40, 0 },                       /* no signals */
		{ 40, 5000 },                    /* more signals than a header holds */
		{ 40, 6 },                       /* fewer signals than saved */
		{ S0 + 24, inf_bits },           /* a physical minimum that is no number */
		{ S0 + 32, nan_bits },           /* a physical maximum that is no number */
		{ S0 + 40, (uint64_t)-9000000 }, /* a digital minimum past 24 bits */
		{ S0 + 48, (uint64_t)-8000000 }, /* a digital maximum at the minimum */
		{ S0 + 56, (1ull << 40) + 1 },   /* too many samples a record */
		{ S0 + 56, 51 },                 /* records that no longer fill the file */
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t keep = dsv_load_le64(blob + cases[k].at);
		store_le64(blob + cases[k].at, cases[k].bad);
		if (from_entry(path, blob, e.len, &back) != DSV_ERR_CORRUPT)
			fail_msg("case %zu (at %zu) not refused", k, cases[k].at);
		store_le64(blob + cases[k].at, keep);
	}
	uint8_t pmax[8];
	memcpy(pmax, blob + S0 + 32, 8);
	memcpy(blob + S0 + 32, blob + S0 + 24, 8); /* no scale: pmax at pmin */
	assert_int_equal(from_entry(path, blob, e.len, &back), DSV_ERR_CORRUPT);
	memcpy(blob + S0 + 32, pmax, 8);
	assert_int_equal(from_entry(path, blob, e.len - 1, &back), DSV_ERR_CORRUPT);
	assert_int_equal(from_entry(path, blob, e.len, &back), 0);
	dsv_source_close(back);
	free(e.p);
}

SCRATCH_GROUP_FIXTURES(dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_pick), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_reads),          cmocka_unit_test(test_open_refused),
		cmocka_unit_test(test_index_entry),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
