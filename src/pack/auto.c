/*
 * dsview pack --codec auto: picks the codec and level for this input on
 * this machine, by measuring them on a sample of its chunks.
 *
 * The sample: up to AUTO_SAMPLES chunks spread over the input (the last,
 * zero-padded one only when it is the only one), at most AUTO_SAMPLE_BYTES
 * of each, read once. Each candidate below encodes the sample in chunks of
 * the size it would be written with (LZ4 and none: the 1 MiB default or
 * --chunk-size; the others: DSV_PACK_DEFAULT_WHOLE_CHUNK or --chunk-size),
 * timed once, and decodes it with dsview's own decoder (the read path's)
 * AUTO_DECODE_PASSES times, the fastest pass timed, one thread.
 *
 * The rule: of the candidates whose decode makes at least AUTO_OUT_BYTES_S
 * of float32 output per second on one core (raw bytes/s x 4 / element
 * size: what a mount serves by default; the target is 2 GB/s of output)
 * and whose encode takes at least AUTO_IN_BYTES_S of input per second on
 * one core (a 2-core pack made 0.6-0.8x twice the one-core figure on the
 * shared test machine: 40 keeps the 50 MB/s target on 2 cores), the best
 * ratio wins; ratios within AUTO_TIE of the best count as equal and the
 * first of those in the list below wins (the list is in the order of the
 * codec table's decode speeds, so a tie does not depend on timing noise).
 * none always passes, so data no codec shrinks by more than AUTO_TIE, or
 * that none shrinks fast enough (float64 at LZ4's 3 GB/s is 1.5 GB/s of
 * float32), is stored uncompressed. A candidate that encodes its first
 * sample chunk at under half the encode bar is dropped without finishing.
 * An input under AUTO_MIN_BYTES is too small to time: lz4.
 *
 * The regime (--storage): the rule above is for storage that delivers
 * bytes faster than the codecs at the decode bar make raw bytes
 * (AUTO_OUT_BYTES_S x element size / 4: 500 MB/s for uint8, 2 GB/s for
 * float32), where decode speed is what a reader waits on. Storage slower
 * than that (--storage slow, 250 MB/s, or a rate under the bar) is what a
 * reader waits on instead: every byte saved on disk is time saved, so the
 * decode bar is waived and, of the candidates over the encode bar, the one
 * that serves the most raw bytes per second wins: the lesser of what the
 * storage delivers (bytes/s x its ratio) and what one core decodes; served
 * rates within AUTO_TIE of the best count as equal, the first wins. While
 * every decoder outruns the storage that is the best ratio.
 * Without --storage the regime is fast: pack does not time the output's
 * file system (a cold read of it cannot be had without dropping caches).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "pack/pack_i.h"
#include "source/source.h"

#define AUTO_SAMPLES 4
#define AUTO_SAMPLE_BYTES (2u << 20)
#define AUTO_MIN_BYTES (256u << 10) /* inputs smaller get lz4, unmeasured */
#define AUTO_DECODE_PASSES 5
#define AUTO_OUT_BYTES_S 2e9
#define AUTO_IN_BYTES_S 40e6
#define AUTO_TIE 0.01

/* The candidates: every codec and level that won somewhere in the codec
 * table (docs/benchmarks/codecs.md; the Blosc variants without shuffle equal the shuffled
 * ones on bytes and lose on wider types, bitshuffle 32008 decodes slowest
 * everywhere), cheapest to decode (and then to encode) first. */
static const struct cand {
	dsv_pack_codec codec;
	int level;
} cands[] = {
	{ DSV_PACK_NONE, 0 },
	{ DSV_PACK_LZ4, 1 },
	{ DSV_PACK_LZ4HC, 9 },
	{ DSV_PACK_BLOSC_LZ4_SHUFFLE, 5 },
	{ DSV_PACK_BLOSC_LZ4_BITSHUFFLE, 5 },
	{ DSV_PACK_ZSTD, 1 },
	{ DSV_PACK_ZSTD, 3 },
	{ DSV_PACK_ZSTD, 6 },
	{ DSV_PACK_ZSTD, 9 },
	{ DSV_PACK_ZSTD, 12 },
	{ DSV_PACK_ZSTD, 19 },
	{ DSV_PACK_BLOSC_ZSTD_SHUFFLE, 3 }, /* Blosc's clevel: zstd's 2 x clevel - 1 */
	{ DSV_PACK_BLOSC_ZSTD_SHUFFLE, 4 },
	{ DSV_PACK_BLOSC_ZSTD_SHUFFLE, 5 },
	{ DSV_PACK_BLOSC_ZSTD_BITSHUFFLE, 5 },
};
#define NCANDS (sizeof(cands) / sizeof(cands[0]))

typedef struct sample {
	char *raw, *enc, *back;
	size_t len;   /* raw bytes per sampled chunk */
	size_t n;     /* sampled chunks, at raw + k * len */
	size_t cap;   /* enc room per piece */
	size_t *encn; /* encoded size per piece */
	size_t elem;
} sample;

/* Encodes and decodes the sample in pieces of piece bytes. */
static int measure(sample *sm, const struct cand *c, size_t piece, size_t block,
		   dsv_pack_auto_fig *m)
{
	size_t per = (sm->len + piece - 1) / piece, stored = 0;
	double t, enc_s = 0, dec_s = 1e30;

	m->done = 0;
	for (size_t k = 0; k < sm->n; k++) {
		t = dsv_now_s();
		for (size_t j = 0; j < per; j++) {
			size_t off = j * piece, len = sm->len - off < piece ? sm->len - off : piece;
			int64_t got = dsv_pack_codec_encode(
				c->codec, c->level, sm->enc + (k * per + j) * sm->cap, sm->cap,
				sm->raw + k * sm->len + off, len, block, sm->elem);
			if (got < 0)
				return (int)got;
			sm->encn[k * per + j] = (size_t)got;
			stored += (size_t)got + 4; /* + Fletcher32 */
		}
		enc_s += dsv_now_s() - t;
		if (k == 0 && sm->n > 1 && (double)sm->len / enc_s < AUTO_IN_BYTES_S / 2)
			return 0; /* far too slow: not worth the rest */
	}
	for (int pass = 0; pass < AUTO_DECODE_PASSES; pass++) {
		t = dsv_now_s();
		for (size_t k = 0; k < sm->n; k++)
			for (size_t j = 0; j < per; j++) {
				size_t off = j * piece,
				       len = sm->len - off < piece ? sm->len - off : piece;
				if (dsv_pack_codec_decode(c->codec, sm->back, len,
							  sm->enc + (k * per + j) * sm->cap,
							  sm->encn[k * per + j],
							  sm->elem) != (int64_t)len ||
				    (pass == 0 &&
				     memcmp(sm->back, sm->raw + k * sm->len + off, len)))
					return DSV_ERR_INTERNAL; /* our own round trip failed */
			}
		t = dsv_now_s() - t;
		dec_s = t < dec_s ? t : dec_s;
	}
	double raw = (double)sm->len * (double)sm->n;
	m->ratio = raw / (double)stored;
	/* none "decodes" by copying; a mount reads it in place */
	m->out_s = c->codec == DSV_PACK_NONE
			   ? 1e30
			   : raw / (dec_s > 0 ? dec_s : 1e-9) * 4.0 / (double)sm->elem;
	m->in_s = c->codec == DSV_PACK_NONE ? 1e30 : raw / (enc_s > 0 ? enc_s : 1e-9);
	m->done = 1;
	return 0;
}

static const char *label(const struct cand *c, char *buf, size_t cap)
{
	const dsv_pack_codec_info *i = dsv_pack_codec_get(c->codec);
	if (i->max_level)
		snprintf(buf, cap, "%s-%d", i->name, c->level);
	else
		snprintf(buf, cap, "%s", i->name);
	return buf;
}

/* The raw bytes per chunk candidate c would be written with (whole rows,
 * at most len) and its LZ4 block size (0: not LZ4). */
static size_t piece_of(const packer *p, const struct cand *c, size_t len, size_t *block)
{
	uint64_t want = p->o->chunk_bytes ? p->o->chunk_bytes : dsv_pack_default_chunk(c->codec);
	uint64_t rows = (want + p->row_bytes / 2) / p->row_bytes;
	uint64_t b = (rows ? rows : 1) * p->row_bytes;
	size_t piece = b < len ? (size_t)b : len;

	*block = dsv_pack_codec_get(c->codec)->lz4_blocks
			 ? (size_t)dsv_pack_block_bytes(p->row_bytes, piece,
							p->o->block_bytes ? p->o->block_bytes
									  : DSV_PACK_DEFAULT_BLOCK)
			 : 0;
	return piece;
}

int dsv_pack_parse_storage(const char *s, double *bytes_s)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = { { "", 1 },    { "B", 1 },    { "k", 1e3 }, { "kB", 1e3 },
		      { "M", 1e6 }, { "MB", 1e6 }, { "G", 1e9 }, { "GB", 1e9 } };
	char *end;
	double v;

	if (!strcmp(s, "fast") || !strcmp(s, "slow")) {
		*bytes_s = s[0] == 'f' ? 0 : DSV_PACK_SLOW_STORAGE;
		return 0;
	}
	v = strtod(s, &end);
	if (end == s || !(v >= 1 && v < 1e15) || !isdigit((unsigned char)s[0]))
		return DSV_ERR_INVALID;
	size_t len = strlen(end);
	if (len >= 2 && !strcmp(end + len - 2, "/s"))
		len -= 2;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].unit) == len && !strncmp(end, units[i].unit, len)) {
			*bytes_s = v * units[i].scale;
			return 0;
		}
	return DSV_ERR_INVALID;
}

int dsv_pack_auto_slow(size_t elem, double storage_bytes_s)
{
	return storage_bytes_s > 0 && storage_bytes_s < AUTO_OUT_BYTES_S * (double)elem / 4.0;
}

/* What candidate f serves per second on one core, in raw bytes: its
 * decode speed (fast storage), or in the slow regime the lesser of that
 * and what the storage delivers (bytes/s x its ratio); 0 where it misses
 * the encode bar, or the decode bar in the fast regime. */
static double serves(const dsv_pack_auto_fig *f, size_t elem, double storage_bytes_s)
{
	double dec = f->out_s * (double)elem / 4.0;

	if (!f->done || f->in_s < AUTO_IN_BYTES_S)
		return 0;
	if (!dsv_pack_auto_slow(elem, storage_bytes_s))
		return f->out_s >= AUTO_OUT_BYTES_S ? dec : 0;
	return dec < storage_bytes_s * f->ratio ? dec : storage_bytes_s * f->ratio;
}

int dsv_pack_auto_rule(const dsv_pack_auto_fig *m, size_t n, size_t elem, double storage_bytes_s,
		       int *best)
{
	int slow = dsv_pack_auto_slow(elem, storage_bytes_s);
	double top = 0;

	*best = 0;
	for (size_t k = 0; k < n; k++)
		if (m[k].done && m[k].ratio > m[*best].ratio)
			*best = (int)k;
	/* fast: the best ratio over both bars; slow: the most served */
	for (size_t k = 0; k < n; k++) {
		double v = serves(&m[k], elem, storage_bytes_s);
		if (v > 0 && (slow ? v : m[k].ratio) > top)
			top = slow ? v : m[k].ratio;
	}
	for (size_t k = 0; k < n; k++) {
		double v = serves(&m[k], elem, storage_bytes_s);
		if (v > 0 && (slow ? v : m[k].ratio) >= top * (1 - AUTO_TIE))
			return (int)k;
	}
	return 0; /* none: unreachable while m[0] is none, which always passes */
}

/* The regime in words, after the rest of the line at why + n. */
static void say_regime(char *why, size_t cap, int n, size_t elem, double storage_bytes_s)
{
	double bar_raw = AUTO_OUT_BYTES_S * (double)elem / 4.0;

	if (n < 0 || (size_t)n >= cap)
		return;
	if (storage_bytes_s <= 0)
		snprintf(why + n, cap - (size_t)n, "; storage fast");
	else
		snprintf(why + n, cap - (size_t)n,
			 "; storage %.0f MB/s: %s (the decode bar is %.0f MB/s of raw bytes)",
			 storage_bytes_s / 1e6,
			 dsv_pack_auto_slow(elem, storage_bytes_s) ? "slow" : "fast",
			 bar_raw / 1e6);
}

/* The one line: what auto chose and why, with the figures. */
static void explain(const dsv_pack_auto_fig *m, int pick, int best, const sample *sm,
		    double storage_bytes_s, char *why, size_t cap)
{
	int slow = dsv_pack_auto_slow(sm->elem, storage_bytes_s), n;
	int lz4 = 1; /* cands[1] */
	char a[48], b[48];

	if (cands[pick].codec == DSV_PACK_NONE && m[best].ratio > m[pick].ratio * (1 + AUTO_TIE))
		n = snprintf(why, cap,
			     "auto: none (no codec that compresses %s and encodes %.0f MB/s per "
			     "core here; best ratio %s %.2f on %zu sample chunks)",
			     slow ? "serves more than the storage alone"
				  : "decodes 2 GB/s of float32",
			     AUTO_IN_BYTES_S / 1e6, label(&cands[best], a, sizeof(a)),
			     m[best].ratio, sm->n);
	else if (cands[pick].codec == DSV_PACK_NONE)
		n = snprintf(why, cap,
			     "auto: none (best ratio %s %.2f on %zu sample chunks: not worth "
			     "decoding)",
			     label(&cands[best], a, sizeof(a)), m[best].ratio, sm->n);
	else if (slow)
		n = snprintf(
			why, cap,
			"auto: %s, ratio %.2f on %zu sample chunks (lz4 %.2f), serves %.2f GB/s "
			"of raw bytes per core (storage x ratio %.2f, decode %.2f), encodes %.0f "
			"MB/s per core (bar %.0f)",
			label(&cands[pick], a, sizeof(a)), m[pick].ratio, sm->n, m[lz4].ratio,
			serves(&m[pick], sm->elem, storage_bytes_s) / 1e9,
			storage_bytes_s * m[pick].ratio / 1e9,
			m[pick].out_s * (double)sm->elem / 4e9, m[pick].in_s / 1e6,
			AUTO_IN_BYTES_S / 1e6);
	else
		n = snprintf(why, cap,
			     "auto: %s, ratio %.2f on %zu sample chunks (lz4 %.2f), decodes %.1f "
			     "GB/s of float32 per core (bar %.0f), encodes %.0f MB/s per core "
			     "(bar %.0f)",
			     label(&cands[pick], a, sizeof(a)), m[pick].ratio, sm->n, m[lz4].ratio,
			     m[pick].out_s / 1e9, AUTO_OUT_BYTES_S / 1e9, m[pick].in_s / 1e6,
			     AUTO_IN_BYTES_S / 1e6);
	if (cands[pick].codec != DSV_PACK_NONE && best != pick &&
	    m[best].ratio > m[pick].ratio * (1 + AUTO_TIE) && n > 0 && (size_t)n < cap)
		n += snprintf(why + n, cap - (size_t)n, "; best ratio %s %.2f %s",
			      label(&cands[best], b, sizeof(b)), m[best].ratio,
			      serves(&m[best], sm->elem, storage_bytes_s) > 0 ? "serves less"
									      : "misses a bar");
	say_regime(why, cap, n, sm->elem, storage_bytes_s);
}

int dsv_pack_choose(packer *p, dsv_pack_opts *o, char *why, size_t cap, dsv_errbuf *eb)
{
	sample sm = { .elem = dsv_dtype_size(p->in->dtype) };
	dsv_pack_auto_fig m[NCANDS];
	dsv_range r;
	size_t room = 0, maxpieces = 0;
	int err = dsv_range_init(&r, p->src), best = -1, pick = -1;
	char a[48];

	if (p->in->nrows * p->row_bytes < AUTO_MIN_BYTES) {
		/* too little to time: the default, which costs least to read */
		snprintf(why, cap, "auto: lz4 (%llu bytes: too few to measure the codecs on)",
			 (unsigned long long)(p->in->nrows * p->row_bytes));
		o->codec = DSV_PACK_LZ4;
		o->level = dsv_pack_codec_get(DSV_PACK_LZ4)->default_level;
		goto done;
	}
	/* whole elements of at most AUTO_SAMPLE_BYTES of each chunk */
	sm.len = p->chunk_bytes < AUTO_SAMPLE_BYTES
			 ? (size_t)p->chunk_bytes
			 : AUTO_SAMPLE_BYTES - AUTO_SAMPLE_BYTES % sm.elem;
	sm.n = p->nchunks <= 1 ? 1 : p->nchunks - 1 < AUTO_SAMPLES ? p->nchunks - 1 : AUTO_SAMPLES;
	for (size_t k = 0; k < NCANDS; k++) {
		size_t block, piece = piece_of(p, &cands[k], sm.len, &block);
		size_t bound = dsv_pack_codec_bound(cands[k].codec, piece, block, sm.elem);
		size_t pieces = (sm.len + piece - 1) / piece * sm.n;
		if (bound != SIZE_MAX && bound * pieces > room)
			room = bound * pieces;
		maxpieces = pieces > maxpieces ? pieces : maxpieces;
	}
	sm.raw = malloc(sm.len * sm.n);
	sm.back = malloc(sm.len);
	sm.enc = malloc(room);
	sm.encn = calloc(maxpieces, sizeof(*sm.encn));
	if (!err && (!sm.raw || !sm.back || !sm.enc || !sm.encn))
		err = DSV_ERR_NOMEM;
	char *chunk = err ? NULL : malloc((size_t)p->chunk_bytes);
	if (!err && !chunk)
		err = DSV_ERR_NOMEM;
	for (size_t k = 0; !err && k < sm.n; k++) {
		/* spread over the full chunks: 0 .. nchunks - 2 */
		uint64_t i = sm.n > 1 ? k * (p->nchunks - 2) / (sm.n - 1) : 0, bad = 0;
		err = dsv_pack_read_chunk(p, &r, i, chunk, &bad);
		if (err)
			dsv_errf_at(eb, err, o->input, NULL,
				    "sampling chunk %llu for --codec auto: %s",
				    (unsigned long long)i, dsv_strerror(err));
		else
			memcpy(sm.raw + k * sm.len, chunk, sm.len);
	}
	free(chunk);
	for (size_t k = 0; !err && k < NCANDS; k++) {
		size_t block, piece = piece_of(p, &cands[k], sm.len, &block);
		sm.cap = dsv_pack_codec_bound(cands[k].codec, piece, block, sm.elem);
		if (stopped(o))
			err = dsv_errf(eb, DSV_ERR_INTERRUPTED, "interrupted");
		else if ((err = measure(&sm, &cands[k], piece, block, &m[k])))
			dsv_errf(eb, err, "--codec auto: %s: %s", label(&cands[k], a, sizeof(a)),
				 dsv_strerror(err));
	}
	if (!err) {
		pick = dsv_pack_auto_rule(m, NCANDS, sm.elem, o->storage_bytes_s, &best);
		explain(m, pick, best, &sm, o->storage_bytes_s, why, cap);
		o->codec = cands[pick].codec;
		o->level = cands[pick].level;
	}
done:
	dsv_range_free(&r);
	free(sm.raw);
	free(sm.back);
	free(sm.enc);
	free(sm.encn);
	return err;
}
