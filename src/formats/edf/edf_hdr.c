/*
 * The EDF/BDF header (edfplus.info's and BioSemi's layout): 256 ASCII
 * bytes, then 256 bytes a signal, each field an array over the signals
 * (ns labels of 16 bytes, then ns transducers of 80, ...). Numbers are
 * ASCII, left-justified and padded with spaces. Every field is checked
 * here, and a bad one is named in the error's where ("number of data
 * records", "signal 3 (E4): digital maximum").
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/edf/edf.h"

/* The field of n bytes at p, spaces trimmed at both ends, as a string in
 * out (at least n + 1 bytes). */
static void field_text(const uint8_t *p, size_t n, char *out)
{
	size_t a = 0, b = n;
	while (a < b && p[a] == ' ')
		a++;
	while (b > a && (p[b - 1] == ' ' || p[b - 1] == '\0'))
		b--;
	memcpy(out, p + a, b - a);
	out[b - a] = '\0';
}

/* The field as shown in a message: printable ASCII, others as '?'. */
static const char *shown(const char *s, char *out, size_t cap)
{
	size_t i = 0;
	for (; s[i] && i + 1 < cap; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
	return out;
}

/* An integer field: an optional sign and digits, nothing else. */
static int field_int(const uint8_t *p, size_t n, int64_t *v)
{
	char t[96];
	field_text(p, n, t);
	const char *d = t + (t[0] == '-' || t[0] == '+');
	if (!*d || strlen(d) > 18)
		return -1;
	for (const char *c = d; *c; c++)
		if (*c < '0' || *c > '9')
			return -1;
	*v = strtoll(t, NULL, 10);
	return 0;
}

/* A real field: a finite decimal number, the whole field. */
static int field_real(const uint8_t *p, size_t n, double *v)
{
	char t[96], *end;
	field_text(p, n, t);
	for (const char *c = t; *c; c++) /* no "inf", "nan", hex or spaces */
		if (!strchr("0123456789+-.eE", *c))
			return -1;
	*v = strtod(t, &end);
	return *t && !*end && isfinite(*v) ? 0 : -1;
}

static int bad_field(dsv_errbuf *eb, const char *field, const uint8_t *p, size_t n,
		     const char *want)
{
	char t[96], s[96];
	field_text(p, n, t);
	return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, field, "'%s' is not %s",
			   shown(t, s, sizeof(s)), want);
}

static int parse_version(const uint8_t *buf, dsv_edf_hdr *h, dsv_errbuf *eb)
{
	static const uint8_t bdf[8] = { 0xff, 'B', 'I', 'O', 'S', 'E', 'M', 'I' };
	if (!memcmp(buf, bdf, sizeof(bdf))) {
		h->bdf = 1;
		return 0;
	}
	if (!memcmp(buf, "0       ", 8))
		return 0;
	return bad_field(eb, "version", buf, 8,
			 "an EDF or BDF version (\"0\", or 0xFF \"BIOSEMI\")");
}

/* EDF+/BDF+ say so in the first bytes of the reserved field. */
static int parse_reserved(const uint8_t *p, dsv_edf_hdr *h, dsv_errbuf *eb)
{
	const char *plus = h->bdf ? "BDF+" : "EDF+";
	const char *other = h->bdf ? "EDF+" : "BDF+";
	if (!memcmp(p, other, 4))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "reserved", "says %.5s in a%s header",
				   (const char *)p, h->bdf ? " BDF" : "n EDF");
	if (memcmp(p, plus, 4))
		return 0;
	if (p[4] == 'C')
		h->plus = DSV_EDF_PLUS_C;
	else if (p[4] == 'D')
		h->plus = DSV_EDF_PLUS_D;
	else
		return bad_field(eb, "reserved", p, 5, "EDF+C, EDF+D, BDF+C or BDF+D");
	return 0;
}

int dsv_edf_parse_fixed(const uint8_t *buf, size_t len, dsv_edf_hdr *h, dsv_errbuf *eb)
{
	int64_t bytes, ns;
	int err;

	memset(h, 0, sizeof(*h));
	if (len < DSV_EDF_FIXED)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "header",
				   "%zu bytes, shorter than the 256-byte fixed header", len);
	if ((err = parse_version(buf, h, eb)) || (err = parse_reserved(buf + 192, h, eb)))
		return err;
	char date[9], time[9];
	field_text(buf + 168, 8, date);
	field_text(buf + 176, 8, time);
	snprintf(h->start, sizeof(h->start), "%.8s %.8s", date, time);
	if (field_int(buf + 252, 4, &ns) || ns < 1 || ns > DSV_EDF_MAX_SIGNALS)
		return bad_field(eb, "number of signals", buf + 252, 4,
				 "a number of signals from 1 to 4096");
	h->ns = (size_t)ns;
	if (field_int(buf + 184, 8, &bytes) || bytes != (int64_t)(DSV_EDF_FIXED * (ns + 1)))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "number of bytes in header",
				   "'%.8s' is not 256 * (1 + %lld signals) = %lld",
				   (const char *)buf + 184, (long long)ns,
				   (long long)(DSV_EDF_FIXED * (ns + 1)));
	h->bytes = (uint64_t)bytes;
	if (field_int(buf + 236, 8, &h->records_field) || h->records_field < -1)
		return bad_field(eb, "number of data records", buf + 236, 8,
				 "a count of records (or -1: unknown)");
	if (field_real(buf + 244, 8, &h->duration) || h->duration < 0)
		return bad_field(eb, "duration of a data record", buf + 244, 8,
				 "a duration in seconds");
	return 0;
}

/* Field k (offset and width in a signal's 256 bytes, as arrays) of
 * signal i. */
static const uint8_t *sig_field(const uint8_t *buf, size_t ns, size_t off, size_t width, size_t i)
{
	return buf + off * ns + width * i;
}

static int sig_bad(dsv_errbuf *eb, size_t i, const dsv_edf_signal *s, const char *field,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int sig_bad(dsv_errbuf *eb, size_t i, const dsv_edf_signal *s, const char *field,
		   const char *fmt, ...)
{
	char where[160], reason[256], v[24];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	snprintf(where, sizeof(where), "signal %zu (%s): %s", i, shown(s->label, v, sizeof(v)),
		 field);
	return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, where, "%s", reason);
}

/* The digital range a sample's bytes can hold. */
static int parse_digital(const uint8_t *buf, const dsv_edf_hdr *h, size_t i, dsv_edf_signal *s,
			 dsv_errbuf *eb)
{
	int64_t lo = h->bdf ? -8388608 : -32768, hi = -lo - 1;
	char t[96], v[96];
	field_text(sig_field(buf, h->ns, 120, 8, i), 8, t);
	if (field_int(sig_field(buf, h->ns, 120, 8, i), 8, &s->dmin) || s->dmin < lo ||
	    s->dmin > hi)
		return sig_bad(eb, i, s, "digital minimum", "'%s' is not a %d-bit integer",
			       shown(t, v, sizeof(v)), h->bdf ? 24 : 16);
	field_text(sig_field(buf, h->ns, 128, 8, i), 8, t);
	if (field_int(sig_field(buf, h->ns, 128, 8, i), 8, &s->dmax) || s->dmax < lo ||
	    s->dmax > hi)
		return sig_bad(eb, i, s, "digital maximum", "'%s' is not a %d-bit integer",
			       shown(t, v, sizeof(v)), h->bdf ? 24 : 16);
	if (s->dmax <= s->dmin)
		return sig_bad(eb, i, s, "digital maximum", "'%s' is not above the digital minimum",
			       shown(t, v, sizeof(v)));
	return 0;
}

static int parse_physical(const uint8_t *buf, const dsv_edf_hdr *h, size_t i, dsv_edf_signal *s,
			  dsv_errbuf *eb)
{
	char t[96], v[96];
	field_text(sig_field(buf, h->ns, 104, 8, i), 8, t);
	if (field_real(sig_field(buf, h->ns, 104, 8, i), 8, &s->pmin))
		return sig_bad(eb, i, s, "physical minimum", "'%s' is not a number",
			       shown(t, v, sizeof(v)));
	field_text(sig_field(buf, h->ns, 112, 8, i), 8, t);
	if (field_real(sig_field(buf, h->ns, 112, 8, i), 8, &s->pmax))
		return sig_bad(eb, i, s, "physical maximum", "'%s' is not a number",
			       shown(t, v, sizeof(v)));
	if (s->pmax == s->pmin && !s->annotation)
		return sig_bad(eb, i, s, "physical maximum",
			       "'%s' equals the physical minimum (no scale)",
			       shown(t, v, sizeof(v)));
	return 0;
}

static int parse_signal(const uint8_t *buf, dsv_edf_hdr *h, size_t i, dsv_errbuf *eb)
{
	dsv_edf_signal *s = &h->sig[i];
	int64_t spr;
	char t[96], v[96];
	int err;

	field_text(sig_field(buf, h->ns, 0, 16, i), 16, s->label);
	field_text(sig_field(buf, h->ns, 96, 8, i), 8, s->unit);
	field_text(sig_field(buf, h->ns, 136, 80, i), 80, s->prefilter);
	s->annotation = !strcmp(s->label, h->bdf ? "BDF Annotations" : "EDF Annotations");
	if ((err = parse_digital(buf, h, i, s, eb)) || (err = parse_physical(buf, h, i, s, eb)))
		return err;
	field_text(sig_field(buf, h->ns, 216, 8, i), 8, t);
	if (field_int(sig_field(buf, h->ns, 216, 8, i), 8, &spr) || spr < 0 ||
	    spr > (int64_t)1 << 40)
		return sig_bad(eb, i, s, "number of samples in each data record",
			       "'%s' is not a count of samples", shown(t, v, sizeof(v)));
	s->spr = (uint64_t)spr;
	return 0;
}

int dsv_edf_parse_signals(const uint8_t *buf, size_t len, dsv_edf_hdr *h, dsv_errbuf *eb)
{
	uint64_t rec = 0;
	int err;

	if (len < h->ns * DSV_EDF_SIGNAL)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "header",
				   "%zu bytes of signal fields, %zu signals need %zu", len, h->ns,
				   h->ns * DSV_EDF_SIGNAL);
	free(h->sig);
	if (!(h->sig = calloc(h->ns, sizeof(*h->sig))))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < h->ns; i++) {
		if ((err = parse_signal(buf, h, i, eb)))
			return err;
		h->sig[i].rec_off = rec;
		rec += h->sig[i].spr * dsv_edf_bps(h); /* each below 2^42, ns <= 4096 */
	}
	if (rec == 0)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL,
				   "number of samples in each data record",
				   "0 for every signal: the data records hold nothing");
	h->record_bytes = rec;
	return 0;
}

int dsv_edf_check_size(dsv_edf_hdr *h, uint64_t file_size, dsv_errbuf *eb)
{
	if (file_size < h->bytes)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, NULL, "number of bytes in header",
				   "%llu, but the file is %llu bytes", (unsigned long long)h->bytes,
				   (unsigned long long)file_size);
	uint64_t data = file_size - h->bytes, whole = data / h->record_bytes;
	uint64_t rest = data % h->record_bytes;
	if (h->records_field == -1 && rest)
		return dsv_errf_at(
			eb, DSV_ERR_TRUNCATED, NULL, "number of data records",
			"-1 (unknown), and the file's %llu bytes of data are %llu "
			"records of %llu bytes and %llu bytes more (a short last record)",
			(unsigned long long)data, (unsigned long long)whole,
			(unsigned long long)h->record_bytes, (unsigned long long)rest);
	if (h->records_field >= 0 && (rest || whole != (uint64_t)h->records_field))
		return dsv_errf_at(
			eb, whole < (uint64_t)h->records_field ? DSV_ERR_TRUNCATED : DSV_ERR_FORMAT,
			NULL, "number of data records",
			"%lld records of %llu bytes, but the file holds %llu bytes of "
			"data (%llu records%s)",
			(long long)h->records_field, (unsigned long long)h->record_bytes,
			(unsigned long long)data, (unsigned long long)whole,
			rest ? " and a short last record" : "");
	h->records = whole;
	return 0;
}

int dsv_edf_parse(const uint8_t *buf, size_t len, uint64_t file_size, dsv_edf_hdr *h,
		  dsv_errbuf *eb)
{
	int err = dsv_edf_parse_fixed(buf, len, h, eb);
	if (!err && len < h->bytes)
		err = dsv_errf_at(eb, DSV_ERR_TRUNCATED, NULL, "number of bytes in header",
				  "%llu, but the file is %zu bytes", (unsigned long long)h->bytes,
				  len);
	if (!err)
		err = dsv_edf_parse_signals(buf + DSV_EDF_FIXED, len - DSV_EDF_FIXED, h, eb);
	if (!err)
		err = dsv_edf_check_size(h, file_size, eb);
	return err;
}

void dsv_edf_hdr_free(dsv_edf_hdr *h)
{
	free(h->sig);
	h->sig = NULL;
}

uint64_t dsv_edf_pick(const dsv_edf_hdr *h, size_t *pick, size_t *n)
{
	uint64_t best = 0;
	size_t best_n = 0;
	*n = 0;
	for (size_t i = 0; i < h->ns; i++) {
		const dsv_edf_signal *s = &h->sig[i];
		size_t k = 0;
		if (s->annotation || !s->spr)
			continue;
		for (size_t j = 0; j < h->ns; j++)
			k += !h->sig[j].annotation && h->sig[j].spr == s->spr;
		if (k > best_n) {
			best_n = k;
			best = s->spr;
		}
	}
	for (size_t i = 0; best && i < h->ns; i++)
		if (!h->sig[i].annotation && h->sig[i].spr == best)
			pick[(*n)++] = i;
	return best;
}
