/*
 * BrainVision recordings (.vhdr header, .eeg data, .vmrk markers) as
 * sources of shape (1, channels, time), in physical units.
 *
 * The .vhdr is an INI file (read with inih, as manifests are) after one
 * line naming the format: [Common Infos] names the DataFile (beside the
 * header), the DataFormat (BINARY), the DataOrientation (MULTIPLEXED:
 * time-major, channel fastest; VECTORIZED: channel after channel), the
 * NumberOfChannels and the SamplingInterval in microseconds; [Binary
 * Infos] the BinaryFormat (INT_16, UINT_16, INT_32, IEEE_FLOAT_32,
 * little-endian); [Channel Infos] each channel as Ch<n>=name,reference,
 * resolution,unit. A value is the stored number times its channel's
 * resolution (1 where none is given), computed in float64: the source's
 * elements are float64, which the view rounds once. The number of samples
 * is the .eeg's size over a sample of every channel.
 *
 * Refused with the reason: ASCII data, big-endian order, other binary
 * formats, a missing channel, and a .eeg that is not a whole number of
 * samples.
 */
#include <fcntl.h>
#include <ini.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/str.h"
#include "common/tlsbuf.h"
#include "dsview/source.h"
#include "formats/bv/bv.h"
#include "source/source_i.h"

#define BV_MAX_HEADER (1u << 20)
#define BV_MAX_CHANNELS 4096
#define BV_BATCH_BYTES (1u << 20)
/* multiplexed data is gathered from time rows: large chunks read it few times */
#define BV_MUX_CHUNK (32u << 20)

typedef struct bv_state {
	uint64_t C, T;
	dsv_dtype raw; /* the stored type */
	size_t es;
	int vectorized;
	dsv_source *data; /* the .eeg, its descriptor the cache's (fds.c) */
	double interval_us;
	char data_file[256];
	char bad[160]; /* the first malformed entry the header has, or "" */
	char **names, **units;
	double *res;
} bv_state;

static void bv_state_free(void *p)
{
	bv_state *st = p;
	if (!st)
		return;
	dsv_source_close(st->data);
	for (uint64_t i = 0; st->names && i < st->C; i++) {
		free(st->names[i]);
		free(st->units[i]);
	}
	free(st->names);
	free(st->units);
	free(st->res);
	free(st);
}

/* n stored values at p (type t) times res, into out. */
static void convert(dsv_dtype t, const uint8_t *p, size_t stride, uint64_t n, double res,
		    double *out)
{
	for (uint64_t i = 0; i < n; i++, p += stride) {
		int16_t a;
		uint16_t b;
		int32_t c;
		float f;
		double v;
		switch (t) {
		case DSV_I16: memcpy(&a, p, 2), v = a; break;
		case DSV_U16: memcpy(&b, p, 2), v = b; break;
		case DSV_I32: memcpy(&c, p, 4), v = c; break;
		default: memcpy(&f, p, 4), v = f; break;
		}
		out[i] = v * res;
	}
}

/* Channel c's samples [a, b) into out, from channel-major data. */
static int read_vectorized(const bv_state *st, uint64_t c, uint64_t a, uint64_t b, double *out)
{
	uint64_t per = BV_BATCH_BYTES / st->es;
	uint8_t *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)(per * st->es));
	if (!buf)
		return DSV_ERR_NOMEM;
	for (uint64_t t = a; t < b; t += per) {
		uint64_t n = b - t < per ? b - t : per;
		int err = dsv_source_pread(st->data, buf, (size_t)(n * st->es),
					   (c * st->T + t) * st->es);
		if (err)
			return err;
		convert(st->raw, buf, st->es, n, st->res[c], out + (t - a));
	}
	return 0;
}

/* Elements [e, e + n) of (1, C, T), whose channels are c0 .. c1, from
 * time-major rows. */
static int read_multiplexed(const bv_state *st, uint64_t e, uint64_t n, double *out)
{
	uint64_t T = st->T, rb = st->C * st->es, c0 = e / T, c1 = (e + n - 1) / T;
	uint64_t t_lo = c0 == c1 ? e % T : 0, t_hi = c0 == c1 ? (e + n - 1) % T + 1 : T;
	uint64_t batch = BV_BATCH_BYTES / rb ? BV_BATCH_BYTES / rb : 1;
	uint8_t *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)(batch * rb));
	if (!buf)
		return DSV_ERR_NOMEM;
	for (uint64_t t = t_lo; t < t_hi; t += batch) {
		uint64_t nb = t_hi - t < batch ? t_hi - t : batch;
		int err = dsv_source_pread(st->data, buf, (size_t)(nb * rb), t * rb);
		if (err)
			return err;
		for (uint64_t c = c0; c <= c1; c++) {
			uint64_t a = c == c0 ? e % T : 0, b = c == c1 ? (e + n - 1) % T + 1 : T;
			a = a < t ? t : a;
			b = b > t + nb ? t + nb : b;
			if (a < b)
				convert(st->raw, buf + ((a - t) * st->C + c) * st->es, (size_t)rb,
					b - a, st->res[c], out + (c * T + a - e));
		}
	}
	return 0;
}

static int bv_read(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap)
{
	const bv_state *st = s->fmt;
	uint64_t e = ref->elem_start, n = ref->nelems;
	double *out = dst;
	if (!st || e > s->info.nelems || n > s->info.nelems - e || dst_cap / 8 < n)
		return DSV_ERR_INVALID;
	if (!n)
		return 0;
	if (!st->vectorized)
		return read_multiplexed(st, e, n, out);
	while (n) {
		uint64_t c = e / st->T, t = e % st->T, m = st->T - t < n ? st->T - t : n;
		int err = read_vectorized(st, c, t, t + m, out);
		if (err)
			return err;
		out += m;
		e += m;
		n -= m;
	}
	return 0;
}

/* The source's gather: multiplexed runs that are channels' samples [t0,
 * t0 + len) (a window's, or a tile of windows') converted from one read
 * of those time rows; vectorized runs, and runs that are not such, read
 * run by run (each a stretch of one channel: one read). */
static int bv_gather(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
		     uint64_t len, void *dst)
{
	const bv_state *st = s->fmt;
	uint64_t T = st->T, t0 = start % T, rb = st->C * st->es;
	double *out = dst;
	if (st->vectorized || t0 + len > T || stride % T) {
		for (uint64_t p = 0; p < nruns; p++) {
			dsv_chunk_ref ref = { .elem_start = start + p * stride, .nelems = len };
			int err = bv_read(s, &ref, out + p * len, (size_t)(len * 8));
			if (err)
				return err;
		}
		return 0;
	}
	uint64_t c0 = start / T, step = stride / T;
	uint64_t batch = BV_BATCH_BYTES / rb ? BV_BATCH_BYTES / rb : 1;
	uint8_t *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)((len < batch ? len : batch) * rb));
	if (!buf)
		return DSV_ERR_NOMEM;
	for (uint64_t t = t0; t < t0 + len; t += batch) {
		uint64_t nb = t0 + len - t < batch ? t0 + len - t : batch;
		int err = dsv_source_pread(st->data, buf, (size_t)(nb * rb), t * rb);
		if (err)
			return err;
		for (uint64_t p = 0; p < nruns; p++) {
			uint64_t c = c0 + p * step;
			convert(st->raw, buf + c * st->es, (size_t)rb, nb, st->res[c],
				out + p * len + (t - t0));
		}
	}
	return 0;
}

static void note_bad(bv_state *st, const char *section, const char *name, const char *why)
{
	if (!st->bad[0])
		snprintf(st->bad, sizeof(st->bad), "[%s] %s: %s", section, name, why);
}

/* Ch<n>=name,reference,resolution,unit ("\1" in a name is a comma). */
static void channel(bv_state *st, const char *name, const char *value)
{
	char *end, *f[4] = { 0 }, *copy = strdup(value);
	long k = strtol(name + 2, &end, 10);
	if (!copy || *end || k < 1 || (uint64_t)k > st->C) {
		free(copy);
		note_bad(st, "Channel Infos", name, "not a channel of NumberOfChannels");
		return;
	}
	char *p = copy;
	for (int i = 0; i < 4 && p; i++) {
		f[i] = p;
		p = strchr(p, ',');
		if (p)
			*p++ = '\0';
	}
	for (char *q = f[0]; *q; q++)
		if (*q == '\\' && q[1] == '1')
			*q = ',', memmove(q + 1, q + 2, strlen(q + 2) + 1);
	double res = f[2] && *f[2] ? strtod(f[2], &end) : 1.0;
	if (f[2] && *f[2] && (*end || !(res == res) || res == 0))
		note_bad(st, "Channel Infos", name, "a resolution that is not a number");
	free(st->names[k - 1]);
	free(st->units[k - 1]);
	st->names[k - 1] = strdup(f[0]);
	st->units[k - 1] = strdup(f[3] && *f[3] ? f[3] : "\xc2\xb5V");
	st->res[k - 1] = res;
	free(copy);
}

static int binary_format(bv_state *st, const char *v)
{
	static const struct {
		const char *name;
		dsv_dtype t;
	} f[] = { { "INT_16", DSV_I16 },
		  { "UINT_16", DSV_U16 },
		  { "INT_32", DSV_I32 },
		  { "IEEE_FLOAT_32", DSV_F32 } };
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!strcasecmp(v, f[i].name)) {
			st->raw = f[i].t;
			st->es = dsv_dtype_size(f[i].t);
			return 0;
		}
	note_bad(st, "Binary Infos", "BinaryFormat",
		 "not INT_16, UINT_16, INT_32 or IEEE_FLOAT_32");
	return 0;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	bv_state *st = user;
	char *end;
	if (!strcasecmp(section, "Common Infos")) {
		if (!strcasecmp(name, "DataFile"))
			snprintf(st->data_file, sizeof(st->data_file), "%s", value);
		else if (!strcasecmp(name, "DataFormat") && strcasecmp(value, "BINARY"))
			note_bad(st, section, name, "not BINARY (ASCII data is not served)");
		else if (!strcasecmp(name, "DataType") && strcasecmp(value, "TIMEDOMAIN"))
			note_bad(st, section, name, "not TIMEDOMAIN");
		else if (!strcasecmp(name, "DataOrientation"))
			st->vectorized = !strcasecmp(value, "VECTORIZED")    ? 1
					 : !strcasecmp(value, "MULTIPLEXED") ? 0
									     : -1;
		else if (!strcasecmp(name, "SamplingInterval") &&
			 (!((st->interval_us = strtod(value, &end)) > 0) || *end))
			note_bad(st, section, name, "not a positive number of microseconds");
		else if (!strcasecmp(name, "NumberOfChannels") && !st->names) {
			long c = strtol(value, &end, 10);
			if (*end || c < 1 || c > BV_MAX_CHANNELS)
				note_bad(st, section, name,
					 "not a number of channels from 1 to 4096");
			else if (!(st->names = calloc((size_t)c, sizeof(char *))) ||
				 !(st->units = calloc((size_t)c, sizeof(char *))) ||
				 !(st->res = calloc((size_t)c, sizeof(double))))
				return 0;
			else
				st->C = (uint64_t)c;
		}
	} else if (!strcasecmp(section, "Binary Infos")) {
		if (!strcasecmp(name, "BinaryFormat"))
			return binary_format(st, value), 1;
		if (!strcasecmp(name, "UseBigEndianOrder") && strcasecmp(value, "NO"))
			note_bad(st, section, name, "big-endian data is not served");
	} else if (!strcasecmp(section, "Channel Infos") && !strncasecmp(name, "Ch", 2)) {
		if (!st->names)
			note_bad(st, section, name, "before NumberOfChannels");
		else
			channel(st, name, value);
	}
	return 1;
}

/* The header, read and parsed; what it lacks named. */
static int parse_header(dsv_source *s, bv_state *st, dsv_errbuf *eb)
{
	static const char magic1[] = "Brain Vision Data Exchange Header File";
	static const char magic2[] = "BrainVision Data Exchange Header File";
	if (s->file_size > BV_MAX_HEADER)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, NULL, "a header of over 1 MiB");
	char *text = malloc((size_t)s->file_size + 1);
	if (!text)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, s->path, NULL, "out of memory");
	int err = dsv_source_pread(s, text, (size_t)s->file_size, 0);
	text[s->file_size] = '\0';
	const char *t = text + (!strncmp(text, "\xef\xbb\xbf", 3) ? 3 : 0); /* a UTF-8 BOM */
	if (!err && strncmp(t, magic1, sizeof(magic1) - 1) &&
	    strncmp(t, magic2, sizeof(magic2) - 1))
		err = dsv_errf_at(
			eb, DSV_ERR_FORMAT, s->path, "header",
			"its first line is not \"Brain Vision Data Exchange Header File\"");
	else if (err)
		err = dsv_errf_at(eb, err, s->path, NULL, "cannot read the header");
	else if (ini_parse_string(t, handler, st) < 0 || (!st->names && st->C == 0 && !st->bad[0]))
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, "[Common Infos] NumberOfChannels",
				  "missing");
	free(text);
	if (err)
		return err;
	if (st->bad[0])
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, NULL, "%s", st->bad);
	if (!st->data_file[0] || strchr(st->data_file, '/'))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, "[Common Infos] DataFile",
				   "missing, or not a file beside the header");
	if (st->vectorized < 0)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path,
				   "[Common Infos] DataOrientation",
				   "neither MULTIPLEXED nor VECTORIZED");
	if (!st->es)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, "[Binary Infos] BinaryFormat",
				   "missing");
	for (uint64_t c = 0; c < st->C; c++)
		if (!st->names[c])
			return dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, "[Channel Infos]",
					   "no Ch%llu of %llu channels", (unsigned long long)c + 1,
					   (unsigned long long)st->C);
	if (!(st->interval_us > 0))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, "[Common Infos] SamplingInterval",
				   "missing");
	return 0;
}

/* The .eeg beside the header: opened, its size a whole number of samples. */
static int open_data(dsv_source *s, bv_state *st, dsv_errbuf *eb)
{
	dsv_errbuf sub;
	int err;
	if ((err = dsv_source_open_beside(s, st->data_file, &st->data, &sub)))
		return dsv_errf_at(eb, err == DSV_ERR_NOMEM ? err : DSV_ERR_NOTFOUND, s->path,
				   "[Common Infos] DataFile", "'%s' cannot be opened: %s",
				   st->data_file, sub.reason);
	uint64_t row = st->C * st->es, size = st->data->file_size;
	if (size % row)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, s->path, "[Common Infos] DataFile",
				   "'%s' is %llu bytes, not a whole number of samples of %llu "
				   "channels (%llu bytes each)",
				   st->data_file, (unsigned long long)size,
				   (unsigned long long)st->C, (unsigned long long)row);
	st->T = size / row;
	return 0;
}

/* A header's text as JSON: as it is where it is UTF-8 (Codepage=UTF-8),
 * else each byte that is not ASCII as '?' (an ANSI code page). */
static json_t *text_json(const char *s)
{
	json_t *j = json_string(s);
	char t[256];
	size_t i = 0;
	if (j)
		return j;
	for (; s[i] && i + 1 < sizeof(t); i++)
		t[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	t[i] = '\0';
	return json_string(t);
}

static char *bv_attrs(const bv_state *st)
{
	json_t *o = json_object(), *n = json_array(), *u = json_array(), *r = json_array();
	for (uint64_t c = 0; c < st->C; c++) {
		json_array_append_new(n, text_json(st->names[c]));
		json_array_append_new(u, text_json(st->units[c]));
		json_array_append_new(r, json_real(st->res[c]));
	}
	json_object_set_new(o, "format", json_string("BrainVision"));
	json_object_set_new(o, "sample_rate", json_real(1e6 / st->interval_us));
	json_object_set_new(o, "orientation",
			    json_string(st->vectorized ? "VECTORIZED" : "MULTIPLEXED"));
	json_object_set_new(o, "channels", n);
	json_object_set_new(o, "units", u);
	json_object_set_new(o, "resolutions", r);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

int dsv_source_open_bv(const char *path, dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(path, NULL);
	bv_state *st = calloc(1, sizeof(*st));
	int err;

	*out = NULL;
	if (!s || !st) {
		free(st);
		dsv_source_close(s);
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	}
	s->fmt = st;
	s->fmt_close = bv_state_free;
	if ((err = dsv_source_open_file(s, eb)) || (err = parse_header(s, st, eb)) ||
	    (err = open_data(s, st, eb)))
		goto fail;
	uint64_t shape[3] = { 1, st->C, st->T };
	s->info.dtype = DSV_F64;
	if (dsv_source_set_shape(s, 3, shape) || !(s->attrs_json = bv_attrs(st))) {
		err = dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
		goto fail;
	}
	s->info.attrs = s->attrs_json;
	s->info.kind = DSV_SRC_BV;
	s->info.stored_bytes = st->C * st->T * st->es;
	dsv_source_why(s, "BrainVision %s %s, times each resolution",
		       st->vectorized ? "vectorized" : "multiplexed", dsv_dtype_name(st->raw));
	s->fallback = 1;
	s->more->lib_read = bv_read;
	s->more->gather = bv_gather;
	dsv_source_flat_chunks(s, st->vectorized ? DSV_FALLBACK_CHUNK_BYTES : BV_MUX_CHUNK);
	*out = s;
	return 0;
fail:
	dsv_source_close(s);
	return err;
}

static size_t bv_by_name(const char *name)
{
	return dsv_has_ext(name, ".vhdr") ? 5 : 0;
}

static int bv_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	return dsv_source_open_bv(file, out, eb);
}

const dsv_format dsv_format_bv = {
	.name = "brainvision",
	.noun = "a BrainVision header (.vhdr)",
	.traits = DSV_FMT_TREE,
	.by_name = bv_by_name,
	.open = bv_open,
};
