/*
 * A Megatron index's documents as rows (a manifest's rows = documents):
 * document i is the sequences document_indices[i] ..
 * document_indices[i + 1] - 1, which lie one after the other in the .bin
 * (megatron.c checks it), so each document is one run of tokens. Rows of
 * different lengths are no array a reader can memmap, so each row is the
 * document's first seq_len tokens, then pad_token where the document is
 * shorter: (documents, seq_len) in the tokens' dtype, or the narrowest
 * signed one that holds the pad too (uint16 tokens and the default pad
 * of -1, no token id: int32). A model's batch of
 * whole documents is then rows of one shape; a document longer than
 * seq_len is cut (the token stream, with windows, serves every token).
 *
 * Each document's first token (8 bytes a document) is found at open from
 * document_indices and sequence_lengths; a row's tokens are read from
 * the .bin, the source's own file through the descriptor cache, when the
 * row is read.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/bytes.h"
#include "common/tlsbuf.h"
#include "formats/tokens/megatron_i.h"
#include "formats/tokens/tokens.h"
#include "source/source_i.h"

/* Source bytes of a chunk: the cache's and verify's unit. */
#define DOCS_CHUNK_BYTES (1u << 20)

typedef struct docs {
	dsv_dtype dtype; /* the tokens' in the .bin */
	dsv_dtype out;   /* the rows' */
	uint64_t *start; /* start[i]: document i's first token; start[n]: all tokens */
	uint64_t n, len;
	int64_t pad;
} docs;

static void docs_free(void *p)
{
	docs *d = p;
	if (d)
		free(d->start);
	free(d);
}

/* n entries of sequence_lengths from sequence lo on into len. */
static int read_lengths(const dsv_meg *g, uint8_t *len, uint64_t lo, dsv_errbuf *eb)
{
	uint64_t n = g->nseq - lo < MEG_BLOCK ? g->nseq - lo : MEG_BLOCK;
	return dsv_meg_read_block(g, len, n, 4, MEG_HEAD + lo * 4, "sequence_lengths", eb);
}

/* d->start from document_indices (checked rising to the sequence count)
 * and sequence_lengths (checked, their sum without overflow): the tokens
 * of the sequences before each document's first. */
static int doc_starts(const dsv_meg *g, docs *d, dsv_errbuf *eb)
{
	uint8_t *di = malloc(MEG_BLOCK * 8), *len = malloc(MEG_BLOCK * 4);
	uint64_t seq = 0, tok = 0, lo = 0, off = MEG_HEAD + g->nseq * 12;
	int err = di && len && (d->start = malloc(g->ndoc * 8))
			  ? 0
			  : dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");

	if (!err && g->nseq)
		err = read_lengths(g, len, 0, eb);
	for (uint64_t i0 = 0; !err && i0 < g->ndoc; i0 += MEG_BLOCK) {
		uint64_t n = g->ndoc - i0 < MEG_BLOCK ? g->ndoc - i0 : MEG_BLOCK;
		if ((err = dsv_meg_read_block(g, di, n, 8, off + i0 * 8, "document_indices", eb)))
			break;
		for (uint64_t k = 0; !err && k < n; k++) {
			uint64_t v = dsv_load_le64(di + k * 8);
			for (; seq < v; seq++) {
				if (seq - lo == MEG_BLOCK &&
				    (err = read_lengths(g, len, lo = seq, eb)))
					break;
				tok += dsv_load_le32(len + 4 * (seq - lo));
			}
			d->start[i0 + k] = tok;
		}
	}
	free(di);
	free(len);
	return err;
}

/* The token at p, of integer dtype t, as int64. */
static int64_t token_at(const uint8_t *p, dsv_dtype t)
{
	switch (t) {
	case DSV_U8: return p[0];
	case DSV_I8: return (int8_t)p[0];
	case DSV_U16: return (uint16_t)(p[0] | p[1] << 8);
	case DSV_I16: return (int16_t)(uint16_t)(p[0] | p[1] << 8);
	case DSV_I32: return (int32_t)dsv_load_le32(p);
	default: return (int64_t)dsv_load_le64(p);
	}
}

/* v at element i of out, of dtype t (an integer dtype v fits). */
static void put(void *out, uint64_t i, dsv_dtype t, int64_t v)
{
	switch (t) {
	case DSV_U8: ((uint8_t *)out)[i] = (uint8_t)v; break;
	case DSV_I8: ((int8_t *)out)[i] = (int8_t)v; break;
	case DSV_U16: ((uint16_t *)out)[i] = (uint16_t)v; break;
	case DSV_I16: ((int16_t *)out)[i] = (int16_t)v; break;
	case DSV_I32: ((int32_t *)out)[i] = (int32_t)v; break;
	default: ((int64_t *)out)[i] = v; break;
	}
}

/* The range of integer dtype t. */
static void range(dsv_dtype t, int64_t *lo, int64_t *hi)
{
	switch (t) {
	case DSV_U8: *lo = 0, *hi = UINT8_MAX; break;
	case DSV_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
	case DSV_U16: *lo = 0, *hi = UINT16_MAX; break;
	case DSV_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
	case DSV_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
	default: *lo = INT64_MIN, *hi = INT64_MAX; break;
	}
}

/* The rows' dtype: the tokens' t if pad fits it, else the narrowest
 * signed dtype that holds t's values and pad. */
static dsv_dtype row_dtype(dsv_dtype t, int64_t pad)
{
	static const dsv_dtype wider[] = { DSV_I16, DSV_I32, DSV_I64 };
	int64_t lo, hi, tlo, thi;
	range(t, &lo, &hi);
	if (pad >= lo && pad <= hi)
		return t;
	range(t, &tlo, &thi);
	for (size_t i = 0; i < sizeof(wider) / sizeof(wider[0]); i++) {
		range(wider[i], &lo, &hi);
		if (lo <= tlo && thi <= hi && pad >= lo && pad <= hi)
			return wider[i];
	}
	return DSV_I64;
}

/* Columns [col, end) of row r into out: its tokens, then the pad. */
static int read_row(const dsv_source *s, const docs *d, uint64_t r, uint64_t col, uint64_t end,
		    void *out)
{
	size_t es = dsv_dtype_size(d->dtype);
	uint64_t have = d->start[r + 1] - d->start[r], t = have < end ? have : end;
	if (t > col) {
		uint8_t *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)((t - col) * es));
		if (!buf)
			return DSV_ERR_NOMEM;
		int err = dsv_source_pread(s, buf, (size_t)((t - col) * es),
					   (d->start[r] + col) * es);
		if (err)
			return err;
		for (uint64_t c = col; c < t; c++)
			put(out, c - col, d->out, token_at(buf + (c - col) * es, d->dtype));
	}
	for (uint64_t c = t > col ? t : col; c < end; c++)
		put(out, c - col, d->out, d->pad);
	return 0;
}

/* Elements [ref->elem_start, + ref->nelems) of (documents, seq_len). */
static int docs_read(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap)
{
	const docs *d = s->fmt;
	uint64_t e = ref->elem_start, n = ref->nelems;
	size_t os = d ? dsv_dtype_size(d->out) : 1;
	unsigned char *out = dst;
	if (!d || e > s->info.nelems || n > s->info.nelems - e || dst_cap / os < n)
		return DSV_ERR_INVALID;
	for (uint64_t k = e; k < e + n;) {
		uint64_t r = k / d->len, col = k % d->len;
		uint64_t end = e + n - k < d->len - col ? col + (e + n - k) : d->len;
		int err = read_row(s, d, r, col, end, out + (k - e) * os);
		if (err)
			return err;
		k += end - col;
	}
	return 0;
}

/* s, the .bin opened, as the documents of g by d's rows. */
static int docs_layout(dsv_source *s, const dsv_meg *g, docs *d, dsv_errbuf *eb)
{
	uint64_t shape[2] = { d->n, d->len };
	s->info.dtype = d->out;
	if (dsv_source_set_shape(s, 2, shape))
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, g->idx, NULL,
				   "%llu documents of seq_len %llu overflow",
				   (unsigned long long)d->n, (unsigned long long)d->len);
	s->info.kind = DSV_SRC_DOCUMENTS;
	s->info.stored_bytes = g->total * dsv_dtype_size(g->dtype);
	dsv_source_why(s, "Megatron, %llu documents cut or padded to %llu tokens",
		       (unsigned long long)d->n, (unsigned long long)d->len);
	s->info.tokens = 1;
	s->fallback = 1;
	s->more->lib_read = docs_read;
	dsv_source_flat_chunks(s, DOCS_CHUNK_BYTES);
	return 0;
}

int dsv_megatron_open_documents(const char *idx, const dsv_doc_rows *r, dsv_source **out,
				dsv_errbuf *eb)
{
	dsv_meg g;
	dsv_source *s = NULL;
	docs *d = NULL;
	char how[96];
	int err;

	*out = NULL;
	if ((err = dsv_meg_open(&g, idx, eb)))
		return err;
	snprintf(how, sizeof(how), "documents (seq_len %llu, pad_token %lld)",
		 (unsigned long long)r->seq_len, (long long)r->pad);
	if (!dsv_dtype_is_int(g.dtype))
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, idx, NULL,
				  "rows = documents serves token ids; its dtype code %d is %s",
				  g.code, dsv_dtype_name(g.dtype));
	else if (!(d = calloc(1, sizeof(*d))) || !(s = dsv_source_alloc(g.bin, how)))
		err = dsv_errf_at(eb, DSV_ERR_NOMEM, idx, NULL, "out of memory");
	if (!err) {
		*d = (docs){ .dtype = g.dtype,
			     .out = row_dtype(g.dtype, r->pad),
			     .n = g.ndoc - 1,
			     .len = r->seq_len,
			     .pad = r->pad };
		s->fmt = d;
		s->fmt_close = docs_free;
		d = NULL;
		if (!(err = doc_starts(&g, s->fmt, eb)) && !(err = dsv_source_open_file(s, eb)))
			err = docs_layout(s, &g, s->fmt, eb);
	}
	free(d);
	dsv_meg_close(&g);
	if (err) {
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}
