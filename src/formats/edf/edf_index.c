/*
 * EDF/BDF recordings in the index cache (source/index.h): the header's
 * values that make the source (dsv_edf_take_header) kept, and the source
 * made again from them with no read of the file. What the source does
 * not use (transducer, prefilter, patient and recording fields) is not
 * kept. The load checks every value as the header's parse (edf_hdr.c)
 * checks its text, and the records against the file's size as the open
 * does, so that an entry makes no source the header could not.
 *
 * The saved fields, little-endian: u64 bdf, plus, header bytes, the
 * record count as stored (-1: unknown), the record duration (float64's
 * bits), ns; the start (17 bytes); then per signal its label (16 bytes)
 * and unit (8), NUL-padded, physical minimum and maximum (float64's
 * bits), digital minimum and maximum, samples a record: 64 bytes a
 * signal.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/edf/edf.h"
#include "source/source_i.h"

#define START_LEN 17
#define LABEL_LEN 16
#define UNIT_LEN 8
#define FIXED_FIELDS 6
#define SIGNAL_BYTES (LABEL_LEN + UNIT_LEN + 5 * 8)
/* the most samples a record a signal's field may hold (edf_hdr.c's) */
#define SPR_MAX (1ull << 40)

static uint64_t bits_of(double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	return u;
}

static double double_of(uint64_t u)
{
	double v;
	memcpy(&v, &u, sizeof(v));
	return v;
}

/* text as a field of n bytes, NUL-padded (text holds at most n). */
static void put_field(dsv_index_buf *b, const char *text, size_t n)
{
	char f[32] = { 0 }; /* the longest field, START_LEN */
	size_t len = strnlen(text, n);
	memcpy(f, text, len);
	dsv_index_put(b, f, n);
}

int dsv_edf_index_save(const dsv_source *s, dsv_index_buf *out)
{
	const dsv_edf_hdr *h = dsv_edf_header_of(s);

	if (!h || s->net || !s->fd_file)
		return DSV_ERR_UNSUPPORTED;
	const uint64_t fixed[FIXED_FIELDS] = {
		(uint64_t)h->bdf,           (uint64_t)h->plus,    h->bytes,
		(uint64_t)h->records_field, bits_of(h->duration), (uint64_t)h->ns
	};
	for (size_t k = 0; k < FIXED_FIELDS; k++)
		dsv_index_put_u64(out, fixed[k]);
	put_field(out, h->start, START_LEN);
	for (size_t i = 0; i < h->ns; i++) {
		const dsv_edf_signal *g = &h->sig[i];
		put_field(out, g->label, LABEL_LEN);
		put_field(out, g->unit, UNIT_LEN);
		dsv_index_put_u64(out, bits_of(g->pmin));
		dsv_index_put_u64(out, bits_of(g->pmax));
		dsv_index_put_u64(out, (uint64_t)g->dmin);
		dsv_index_put_u64(out, (uint64_t)g->dmax);
		dsv_index_put_u64(out, g->spr);
	}
	return out->bad ? DSV_ERR_NOMEM : 0;
}

/* A field of n bytes at c into out (n + 1 bytes), ended at its first
 * NUL, NULs alone after it (as put_field writes it): else c->bad. */
static void get_field(dsv_index_cur *c, size_t n, char *out)
{
	const unsigned char *p = dsv_index_get(c, n);
	size_t len = p ? strnlen((const char *)p, n) : 0;
	if (p)
		memcpy(out, p, len);
	out[len] = '\0';
	for (size_t i = len; p && i < n; i++)
		if (p[i])
			c->bad = 1;
}

/* The fixed part at c into h, each value one the header's parse gives. */
static int get_fixed(dsv_index_cur *c, dsv_edf_hdr *h)
{
	uint64_t v[FIXED_FIELDS];
	for (size_t k = 0; k < FIXED_FIELDS; k++)
		v[k] = dsv_index_get_u64(c);
	get_field(c, START_LEN, h->start);
	h->bdf = (int)(v[0] & 1);
	h->plus = (int)(v[1] & 3);
	h->bytes = v[2];
	h->records_field = (int64_t)v[3];
	h->duration = double_of(v[4]);
	h->ns = (size_t)v[5];
	if (c->bad || v[0] > 1 || (v[1] != DSV_EDF_PLAIN && v[1] != DSV_EDF_PLUS_C) || !v[5] ||
	    v[5] > DSV_EDF_MAX_SIGNALS || h->bytes != DSV_EDF_FIXED * (v[5] + 1) ||
	    h->records_field < -1 || !isfinite(h->duration) || h->duration < 0)
		return DSV_ERR_CORRUPT;
	/* exactly ns signals left */
	return (uint64_t)(c->end - c->p) == h->ns * SIGNAL_BYTES ? 0 : DSV_ERR_CORRUPT;
}

/* Signal i at c into h->sig[i]: a digital range a sample holds, a
 * physical one with a scale (an annotation's may have none), a count of
 * samples. */
static int get_signal(dsv_index_cur *c, dsv_edf_hdr *h, size_t i)
{
	dsv_edf_signal *g = &h->sig[i];
	int64_t lo = h->bdf ? -8388608 : -32768, hi = -lo - 1;

	get_field(c, LABEL_LEN, g->label);
	get_field(c, UNIT_LEN, g->unit);
	g->pmin = double_of(dsv_index_get_u64(c));
	g->pmax = double_of(dsv_index_get_u64(c));
	g->dmin = (int64_t)dsv_index_get_u64(c);
	g->dmax = (int64_t)dsv_index_get_u64(c);
	g->spr = dsv_index_get_u64(c);
	g->annotation = !strcmp(g->label, h->bdf ? "BDF Annotations" : "EDF Annotations");
	if (c->bad || g->dmin < lo || g->dmin > hi || g->dmax < lo || g->dmax > hi ||
	    g->dmax <= g->dmin || !isfinite(g->pmin) || !isfinite(g->pmax) ||
	    (g->pmax == g->pmin && !g->annotation) || g->spr > SPR_MAX)
		return DSV_ERR_CORRUPT;
	return 0;
}

/* The header blob holds, checked, into h (h->sig allocated). */
static int get_header(const void *blob, size_t len, uint64_t file_size, dsv_edf_hdr *h)
{
	dsv_index_cur c = { blob, (const unsigned char *)blob + len, 0 };
	uint64_t rec = 0;
	dsv_errbuf eb;
	int err = get_fixed(&c, h);

	if (err)
		return err;
	if (!(h->sig = calloc(h->ns, sizeof(*h->sig))))
		return DSV_ERR_NOMEM;
	for (size_t i = 0; i < h->ns; i++) {
		if ((err = get_signal(&c, h, i)))
			return err;
		h->sig[i].rec_off = rec;
		rec += h->sig[i].spr * dsv_edf_bps(h); /* each below 2^42, ns <= 4096 */
	}
	h->record_bytes = rec;
	if (!rec || c.p != c.end || dsv_edf_check_size(h, file_size, &eb))
		return DSV_ERR_CORRUPT;
	return 0;
}

int dsv_edf_index_load(const char *file, const char *dataset, const void *blob, size_t len,
		       const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_index_unopened(file, NULL, st);
	dsv_edf_hdr h = { 0 };
	int err;

	(void)dataset;
	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
	err = get_header(blob, len, st->size, &h);
	if (err == DSV_ERR_NOMEM)
		err = dsv_errf_at(eb, err, file, NULL, "out of memory");
	else if (err)
		err = dsv_errf_at(eb, err, file, NULL, "its entry in the index cache is damaged");
	else
		err = dsv_edf_take_header(s, &h, eb);
	if (err) {
		dsv_edf_hdr_free(&h);
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}
