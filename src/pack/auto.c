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
 */
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

typedef struct measured {
	double ratio, out_s, in_s; /* ratio; float32 output and input bytes/s, one core */
	int done;                  /* measured in full (not dropped) */
} measured;

typedef struct sample {
	char *raw, *enc, *back;
	size_t len;   /* raw bytes per sampled chunk */
	size_t n;     /* sampled chunks, at raw + k * len */
	size_t cap;   /* enc room per piece */
	size_t *encn; /* encoded size per piece */
	size_t elem;
} sample;

/* Encodes and decodes the sample in pieces of piece bytes. */
static int measure(sample *sm, const struct cand *c, size_t piece, size_t block, measured *m)
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

int dsv_pack_choose(packer *p, dsv_pack_opts *o, char *why, size_t cap, dsv_errbuf *eb)
{
	sample sm = { .elem = dsv_dtype_size(p->in->dtype) };
	measured m[NCANDS];
	dsv_range r;
	size_t room = 0, maxpieces = 0;
	int err = dsv_range_init(&r, p->src), best = -1, pick = -1;
	char a[48], b[48];

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
		for (size_t k = 0; k < NCANDS; k++)
			if (m[k].done && (best < 0 || m[k].ratio > m[best].ratio))
				best = (int)k;
		double top = 0;
		for (size_t k = 0; k < NCANDS; k++)
			if (m[k].done && m[k].out_s >= AUTO_OUT_BYTES_S &&
			    m[k].in_s >= AUTO_IN_BYTES_S && m[k].ratio > top)
				top = m[k].ratio;
		for (size_t k = 0; k < NCANDS && pick < 0; k++)
			if (m[k].done && m[k].out_s >= AUTO_OUT_BYTES_S &&
			    m[k].in_s >= AUTO_IN_BYTES_S && m[k].ratio >= top * (1 - AUTO_TIE))
				pick = (int)k;
		int lz4 = 1; /* cands[1]; none (cands[0]) always passes: pick >= 0 */
		if (cands[pick].codec == DSV_PACK_NONE &&
		    m[best].ratio > m[pick].ratio * (1 + AUTO_TIE))
			snprintf(why, cap,
				 "auto: none (no codec that compresses decodes %.0f GB/s of "
				 "float32 and encodes %.0f MB/s per core here; best ratio %s %.2f "
				 "on %zu "
				 "sample chunks)",
				 AUTO_OUT_BYTES_S / 1e9, AUTO_IN_BYTES_S / 1e6,
				 label(&cands[best], a, sizeof(a)), m[best].ratio, sm.n);
		else if (cands[pick].codec == DSV_PACK_NONE)
			snprintf(why, cap,
				 "auto: none (best ratio %s %.2f on %zu sample chunks: "
				 "not worth decoding)",
				 label(&cands[best], a, sizeof(a)), m[best].ratio, sm.n);
		else {
			int n = snprintf(
				why, cap,
				"auto: %s, ratio %.2f on %zu sample chunks (lz4 %.2f), "
				"decodes %.1f GB/s of float32 per core (bar %.0f), encodes "
				"%.0f MB/s per core (bar %.0f)",
				label(&cands[pick], a, sizeof(a)), m[pick].ratio, sm.n,
				m[lz4].ratio, m[pick].out_s / 1e9, AUTO_OUT_BYTES_S / 1e9,
				m[pick].in_s / 1e6, AUTO_IN_BYTES_S / 1e6);
			if (best != pick && m[best].ratio > m[pick].ratio * (1 + AUTO_TIE) &&
			    n > 0 && (size_t)n < cap)
				snprintf(why + n, cap - (size_t)n,
					 "; best ratio %s %.2f misses a bar",
					 label(&cands[best], b, sizeof(b)), m[best].ratio);
		}
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
