/*
 * Sources chunked in whole rows through a chunk map (an HDF5 dataset on
 * its fast path: source_i.h's chunked layout) kept in the index cache
 * (index.h) and made again from it with no read of the file. What the
 * open learnt of the filter pipeline is kept as the fields the read path
 * uses (codec, filter bits, shuffle, bitshuffle's parameters), with the
 * chunk map beside it; the load checks each value as the open checked
 * what the library said.
 */
#include <stdlib.h>

#include "codec/codec.h"
#include "codec/lz4_table.h"
#include "common/arith.h"
#include "source/index.h"
#include "source/source_i.h"

/* The saved fields, in order, each a u64: kind, dtype, ndim,
 * shape[ndim], chunk_rows, codec, fletcher32, codec_filter_bit,
 * fl32_filter_bit, shuffle, shuffle_filter_bit, bshuf_elem, bshuf_block,
 * bshuf_comp, lz4_block, table_off, table_blocks, nchunks; then per chunk
 * its offset and (its mask << 32 | its stored size). */
#define HEAD_FIELDS 14 /* from chunk_rows to nchunks */
#define CHUNK_BYTES 16
/* A filter's bit in a chunk's 32-bit filter mask. */
#define MASK_BITS 32

int dsv_index_save_chunked(const dsv_source *s, dsv_index_buf *out)
{
	if (!s->chunked || s->grid || s->fallback || s->fmt || s->more->vpread || s->net ||
	    s->more->table_mem || !s->more->chunk_off || !s->more->chunk_size || !s->fd_file)
		return DSV_ERR_UNSUPPORTED;
	for (uint64_t i = 0; i < s->info.nchunks; i++)
		if (s->more->chunk_off[i] == DSV_SRC_UNALLOCATED)
			return DSV_ERR_UNSUPPORTED; /* the library fills it */
	const uint64_t head[] = { s->info.kind, s->info.dtype, (uint64_t)s->info.ndim };
	const uint64_t rest[HEAD_FIELDS] = { s->more->chunk_rows,         s->codec,
					     (uint64_t)s->fletcher32,     s->more->codec_filter_bit,
					     s->more->fl32_filter_bit,    s->shuffle,
					     s->more->shuffle_filter_bit, s->more->bshuf_elem,
					     s->more->bshuf_block,        s->more->bshuf_comp,
					     s->info.lz4_block,           s->more->table_off,
					     s->more->table_blocks,       s->info.nchunks };
	for (size_t k = 0; k < 3; k++)
		dsv_index_put_u64(out, head[k]);
	for (int i = 0; i < s->info.ndim; i++)
		dsv_index_put_u64(out, s->info.shape[i]);
	for (size_t k = 0; k < HEAD_FIELDS; k++)
		dsv_index_put_u64(out, rest[k]);
	for (uint64_t i = 0; i < s->info.nchunks; i++) {
		uint32_t mask = s->more->chunk_mask ? s->more->chunk_mask[i] : 0;
		dsv_index_put_u64(out, s->more->chunk_off[i]);
		dsv_index_put_u64(out, (uint64_t)mask << 32 | s->more->chunk_size[i]);
	}
	return out->bad ? DSV_ERR_NOMEM : 0;
}

/* The kind, dtype and shape at c into s. */
static int get_shape(dsv_source *s, dsv_index_cur *c, dsv_source_kind kind)
{
	uint64_t shape[DSV_MAX_DIMS], k = dsv_index_get_u64(c), dt = dsv_index_get_u64(c);
	uint64_t nd = dsv_index_get_u64(c);

	if (c->bad || k != (uint64_t)kind || dt >= DSV_DTYPE__COUNT ||
	    dt == (uint64_t)DSV_DTYPE_INVALID || dt == (uint64_t)DSV_BF16 || nd < 1 ||
	    nd > DSV_MAX_DIMS)
		return DSV_ERR_CORRUPT;
	s->info.dtype = (dsv_dtype)dt;
	for (uint64_t i = 0; i < nd; i++)
		shape[i] = dsv_index_get_u64(c);
	if (c->bad || dsv_source_set_shape(s, (int)nd, shape))
		return DSV_ERR_CORRUPT;
	s->info.kind = kind;
	return 0;
}

/* The chunk geometry: chunk_rows whole rows a chunk, as many chunks as
 * the rows need, each at most 4 GiB decoded. */
static int check_geometry(dsv_source *s, uint64_t nchunks)
{
	uint64_t esize = dsv_dtype_size(s->info.dtype), raw;

	if (!s->more->chunk_rows ||
	    dsv_mul_u64(s->more->chunk_rows, s->info.row_elems, &s->info.chunk_elems) ||
	    dsv_mul_u64(s->info.chunk_elems, esize, &raw) || raw > UINT32_MAX)
		return DSV_ERR_CORRUPT;
	s->more->chunk_raw_size = raw;
	s->info.nchunks = s->info.nelems ? s->info.nrows / s->more->chunk_rows +
						   (s->info.nrows % s->more->chunk_rows != 0)
					 : 0;
	return nchunks == s->info.nchunks ? 0 : DSV_ERR_CORRUPT;
}

/* The pipeline's fields: a codec the read path has, filter bits inside a
 * mask, a shuffle of the element's own size, bitshuffle's parameters as
 * its open takes them (none without it), Blosc2 only where its library
 * loads. */
static int check_pipeline(const dsv_source *s)
{
	unsigned esize = (unsigned)dsv_dtype_size(s->info.dtype), elem, block;
	int comp;

	if (s->codec > DSV_CODEC_DEFLATE || s->more->codec_filter_bit >= MASK_BITS ||
	    s->more->fl32_filter_bit >= MASK_BITS || s->more->shuffle_filter_bit >= MASK_BITS ||
	    (s->shuffle && (s->shuffle != esize || esize < 2)))
		return DSV_ERR_CORRUPT;
	if (s->codec == DSV_CODEC_BSHUF) {
		const unsigned cd[5] = { 0, 0, s->more->bshuf_elem, s->more->bshuf_block,
					 s->more->bshuf_comp };
		if (dsv_bshuf_params(cd, 5, &elem, &block, &comp, NULL) || elem != esize)
			return DSV_ERR_CORRUPT;
	} else if (s->more->bshuf_elem || s->more->bshuf_block || s->more->bshuf_comp) {
		return DSV_ERR_CORRUPT;
	}
	if (s->codec == DSV_CODEC_BLOSC2 && dsv_blosc2_load(NULL))
		return DSV_ERR_UNSUPPORTED;
	return 0;
}

/* The LZ4 block (a hint, at most a chunk) and the block table: of the
 * blocks a chunk of that block size has, one row a chunk, inside the
 * file. */
static int check_table(dsv_source *s)
{
	uint64_t bytes, end;

	if (s->info.lz4_block &&
	    (s->codec != DSV_CODEC_LZ4 || s->info.lz4_block > s->more->chunk_raw_size))
		return DSV_ERR_CORRUPT;
	if (!s->more->table_blocks)
		return s->more->table_off ? DSV_ERR_CORRUPT : 0;
	if (!s->info.lz4_block || s->info.lz4_block >= s->more->chunk_raw_size ||
	    s->more->table_blocks !=
		    dsv_lz4_table_blocks(s->more->chunk_raw_size, s->info.lz4_block) ||
	    dsv_mul_u64(s->info.nchunks, dsv_lz4_table_row_bytes(s->more->table_blocks), &bytes) ||
	    dsv_add_u64(s->more->table_off, bytes, &end) || end > s->file_size)
		return DSV_ERR_CORRUPT;
	s->info.lz4_table = 1;
	return 0;
}

/* The chunk map at c into s, each chunk's stored size one its encoding
 * can have (a chunk whose codec was skipped is exactly a chunk), its
 * bytes' end a 64-bit offset. */
static int get_chunks(dsv_source *s, dsv_index_cur *c)
{
	uint64_t n = s->info.nchunks, raw = s->more->chunk_raw_size, bytes;
	uint64_t max_stored = dsv_source_max_stored(raw, s->codec, s->fletcher32);

	if (dsv_mul_u64(n, CHUNK_BYTES, &bytes) || bytes != (uint64_t)(c->end - c->p))
		return DSV_ERR_CORRUPT; /* before allocating for n */
	if (!n)
		return 0;
	if (dsv_source_chunk_map(s, n))
		return DSV_ERR_NOMEM;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = dsv_index_get_u64(c), sm = dsv_index_get_u64(c), end;
		uint32_t size = (uint32_t)sm, mask = (uint32_t)(sm >> 32);
		int c_codec = s->codec && !(mask & (1u << s->more->codec_filter_bit));
		int c_fl32 = s->fletcher32 && !(mask & (1u << s->more->fl32_filter_bit));
		if (!size || size > max_stored || (!c_codec && size != raw + (c_fl32 ? 4 : 0)) ||
		    off == DSV_SRC_UNALLOCATED || dsv_add_u64(off, size, &end))
			return DSV_ERR_CORRUPT;
		s->more->chunk_off[i] = off;
		s->more->chunk_size[i] = size;
		s->more->chunk_mask[i] = mask;
		s->info.stored_bytes += size;
	}
	return 0;
}

/* The fields of blob into s, each checked. */
static int fill(dsv_source *s, const void *blob, size_t len, dsv_source_kind kind)
{
	dsv_index_cur c = { blob, (const unsigned char *)blob + len, 0 };
	uint64_t v[HEAD_FIELDS];
	int err = get_shape(s, &c, kind);

	if (err)
		return err;
	for (size_t k = 0; k < HEAD_FIELDS; k++)
		v[k] = dsv_index_get_u64(&c);
	for (size_t k = 1; k <= 9; k++) /* codec to bshuf_comp: 32-bit fields */
		if (v[k] > UINT32_MAX)
			return DSV_ERR_CORRUPT;
	/* the codec and fletcher32 checked before they become an enum, an int */
	if (c.bad || v[1] > DSV_CODEC_DEFLATE || v[2] > 1)
		return DSV_ERR_CORRUPT;
	s->chunked = 1;
	s->more->chunk_rows = v[0];
	s->codec = (dsv_codec)v[1];
	s->fletcher32 = (int)v[2];
	s->more->codec_filter_bit = (unsigned)v[3];
	s->more->fl32_filter_bit = (unsigned)v[4];
	s->shuffle = (unsigned)v[5];
	s->more->shuffle_filter_bit = (unsigned)v[6];
	s->more->bshuf_elem = (unsigned)v[7];
	s->more->bshuf_block = (unsigned)v[8];
	s->more->bshuf_comp = (unsigned)v[9];
	s->info.lz4_block = v[10];
	s->more->table_off = v[11];
	s->more->table_blocks = v[12];
	if ((err = check_geometry(s, v[13])) || (err = check_pipeline(s)) ||
	    (err = check_table(s)) || (err = get_chunks(s, &c)))
		return err;
	if (dsv_source_dims(s))
		return DSV_ERR_NOMEM;
	s->more->blosc2_shape[0] = s->more->chunk_rows; /* a chunk's shape: its rows, whole */
	for (int k = 1; k < s->info.ndim; k++)
		s->more->blosc2_shape[k] = s->info.shape[k];
	return 0;
}

int dsv_index_load_chunked(const char *file, const char *dataset, const void *blob, size_t len,
			   const dsv_index_stamp *st, dsv_source_kind kind, dsv_source **out,
			   dsv_errbuf *eb)
{
	return dsv_index_revive(file, dataset, blob, len, st, kind, fill, out, eb);
}
