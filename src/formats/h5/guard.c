/*
 * Guards on the chunks the HDF5 library decodes for dsview's fallback
 * reads (src/formats/h5/h5_source.c: datasets dsview cannot read with pread).
 *
 * The stored sizes of those chunks: HDF5 1.10 trusts them. A chunk no
 * decoder runs on (no filter, shuffle alone, every filter skipped by its
 * mask, an edge chunk stored unfiltered) is copied
 * out of a buffer of its stored size as if it held a whole chunk (`make
 * fuzz`: an 8-byte chunk of a 24-byte one, heap bytes served and verify
 * OK), and nbit and scaleoffset read as many input bits as their
 * parameters say, without bounds. So each chunk is checked the first time
 * a read needs it, then marked in `ok`: walking its filters from the
 * outside in, Fletcher32 strips 4 bytes, shuffle keeps the size, nbit and
 * scaleoffset need enough input and make a whole chunk; at the end, a
 * whole chunk. Outputs of gzip, LZ4 and szip are checked by their size
 * checks (decode.c), armed here for each read; what lies inside them is
 * not checked here. Called under the global lock; a check is owned by one
 * source and used only under that lock.
 */
#include <hdf5.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/arith.h"
#include "common/bytes.h"
#include "dsview/codec.h"
#include "dsview/h5info.h"
#include "formats/h5/h5.h"
#include "source/source_i.h"

/* One pipeline cap for the whole program: HDF5's own. */
_Static_assert(DSV_H5_MAX_FILTERS == H5Z_MAX_NFILTERS, "DSV_H5_MAX_FILTERS is HDF5's limit");

struct dsv_h5_chunk_check {
	int ndim, nf;
	hsize_t dims[DSV_MAX_DIMS], cdims[DSV_MAX_DIMS], grid[DSV_MAX_DIMS];
	uint64_t nchunks, raw; /* chunks in the grid; bytes of one, file type */
	uint64_t elems;        /* elements in a chunk */
	struct {
		H5Z_filter_t id;
		size_t ncd;
		unsigned cd[DSV_H5_MAX_CD];
	} f[DSV_H5_MAX_FILTERS]; /* the pipeline, in encoding order */
	int edge_unfiltered;     /* H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS */
	/* what each checked decoder must make (see above); 0: unchecked */
	size_t expect[DSV_H5_NDEC];
	uint8_t *ok; /* a bit per chunk, or NULL: check every time */
	void *probe; /* H5Dread_chunk's buffer; never written */
	size_t probe_cap;
};

void dsv_h5_chunk_check_free(dsv_h5_chunk_check *c)
{
	if (!c)
		return;
	free(c->ok);
	free(c->probe);
	free(c);
}

/* What each checked decoder (inflate, LZ4, szip, zstd, LZF, Blosc) must make for
 * this dataset: a filter's output on read is its input on write, which is
 * the chunk plus 4 bytes per Fletcher32 applied before it (shuffle keeps
 * the size). After any other filter, or for a filter used twice, the size
 * is not known: unchecked. */
static void filter_sizes(dsv_h5_chunk_check *c)
{
	uint64_t before = 0;
	int known = 1, uses[DSV_H5_NDEC] = { 0 };

	if (c->raw > SIZE_MAX / 2)
		return;
	for (int i = 0; i < c->nf; i++) {
		H5Z_filter_t id = c->f[i].id;
		int dec = dsv_h5_decoder_of(id);
		if (dec >= 0 && uses[dec]++ == 0)
			c->expect[dec] = known ? (size_t)(c->raw + before) : 0;
		if (id == H5Z_FILTER_FLETCHER32)
			before += 4;
		else if (id != H5Z_FILTER_SHUFFLE)
			known = 0;
	}
	for (int d = 0; d < DSV_H5_NDEC; d++)
		if (uses[d] > 1)
			c->expect[d] = 0;
}

dsv_h5_chunk_check *dsv_h5_chunk_check_new(int ndim, const hsize_t *dims, const hsize_t *cdims,
					   size_t type_size, uint64_t elems, int nf,
					   const H5Z_filter_t *ids,
					   const unsigned (*cds)[DSV_H5_MAX_CD], const size_t *ncds,
					   unsigned opts)
{
	dsv_h5_chunk_check *c = calloc(1, sizeof(*c));
	uint64_t n = 1;
	if (!c)
		return NULL;
	c->ndim = ndim;
	c->nf = nf;
	c->raw = type_size;
	c->elems = elems;
	for (int k = 0; k < c->ndim; k++) {
		c->dims[k] = dims[k];
		c->cdims[k] = cdims[k];
		c->grid[k] = dims[k] / cdims[k] + (dims[k] % cdims[k] != 0);
		/* overflow: the chunks are then checked, just never marked */
		if (dsv_mul_u64(n, c->grid[k], &n))
			n = UINT64_MAX;
	}
	if (dsv_mul_u64(c->raw, c->elems, &c->raw))
		c->raw = UINT64_MAX;
	for (int i = 0; i < nf; i++) {
		c->f[i].id = ids[i];
		c->f[i].ncd = ncds[i];
		memcpy(c->f[i].cd, cds[i], sizeof(c->f[i].cd));
	}
	c->edge_unfiltered = nf > 0 && (opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS);
	c->nchunks = n;
	if (n != UINT64_MAX && n <= (1ull << 34))
		c->ok = calloc((size_t)(n / 8 + 1), 1);
	filter_sizes(c);
	return c;
}

/* Bytes of input nbit (atomic types) or scaleoffset reads for one chunk;
 * minbits is scaleoffset's, from the chunk. */
static uint64_t bits_in(uint64_t elems, uint64_t bits)
{
	return bits && elems > UINT64_MAX / bits ? UINT64_MAX : (elems * bits + 7) / 8;
}

/* Reads 4 bytes at off of s's file. @return 0, or -1 (error or end of
 * file). */
static int read4(const dsv_source *s, unsigned char *b, uint64_t off)
{
	return dsv_source_pread(s, b, 4, off) ? -1 : 0;
}

/* The stored size of the chunk at element offsets coord against what the
 * library will do with it (see dsv_h5_chunk_check). Under h5_lock.
 * @return 0, or DSV_ERR_CORRUPT */
static int check_stored_chunk(dsv_h5_chunk_check *c, hid_t dset, const dsv_source *s,
			      const hsize_t *coord)
{
	hsize_t size = 0;
	haddr_t addr = HADDR_UNDEF;
	unsigned mask = 0;
	uint64_t cur;
	int edge = 0, outermost = 1;

	/* HDF5 1.10 fails this for a chunk never written: fill values */
	if (H5Dget_chunk_storage_size(dset, coord, &size) < 0 || size == 0)
		return 0;
	if (c->raw == UINT64_MAX)
		return DSV_ERR_CORRUPT;
	for (int k = 0; k < c->ndim; k++)
		if (coord[k] + c->cdims[k] > c->dims[k])
			edge = 1;
	if (c->nf > 0 && edge && c->edge_unfiltered) {
		mask = ~0u;
	} else {
		/* no filter makes more than a codec's worst case */
		if (c->raw > SIZE_MAX / 4 || size > dsv_source_max_stored(c->raw, 1, 0))
			return DSV_ERR_CORRUPT;
		if (size > c->probe_cap) {
			void *p = realloc(c->probe, (size_t)size);
			if (!p)
				return DSV_ERR_NOMEM;
			c->probe = p;
			c->probe_cap = (size_t)size;
		}
		/* also: the library reads the size it reports */
		if (dsv_h5_locate_chunk(dset, coord, size, c->probe, &addr, &mask) < 0)
			return DSV_ERR_CORRUPT;
	}
	cur = size;
	for (int i = c->nf - 1; i >= 0; i--) {
		const unsigned *cd = c->f[i].cd;
		size_t ncd = c->f[i].ncd;
		if (mask >> i & 1)
			continue; /* skipped for this chunk */
		switch (c->f[i].id) {
		case H5Z_FILTER_FLETCHER32:
			if (cur < 4)
				return DSV_ERR_CORRUPT;
			cur -= 4;
			break;
		case H5Z_FILTER_SHUFFLE: break;
		case H5Z_FILTER_NBIT:
			if (ncd > 1 && cd[1])
				break; /* stored as is */
			/* atomic types: precision bits per element */
			if (ncd >= 7 && cd[3] == 1 && cur < bits_in(c->elems, cd[6]))
				return DSV_ERR_CORRUPT;
			cur = c->raw; /* its parameters were checked at open */
			break;
		case H5Z_FILTER_SCALEOFFSET: {
			/* minbits leads the chunk's own bytes, which are these
			 * only while no filter outside has changed them */
			unsigned char b[4];
			if (outermost && addr != HADDR_UNDEF && ncd >= 5) {
				if (cur < 21 || read4(s, b, addr) != 0)
					return DSV_ERR_CORRUPT;
				uint64_t minbits = dsv_load_le32(b);
				uint64_t need = minbits == 8ull * cd[4]
							? c->raw
							: bits_in(c->elems, minbits);
				if (need > cur - 21)
					return DSV_ERR_CORRUPT;
			}
			cur = c->raw;
			break;
		}
		default: return 0; /* a decoder runs: its size check, inflate's etc. */
		}
		if (c->f[i].id != H5Z_FILTER_FLETCHER32)
			outermost = 0;
	}
	return cur == c->raw ? 0 : DSV_ERR_CORRUPT;
}

/* All the chunks in the bands of rows the read covers. */
static int check_bands(dsv_h5_chunk_check *c, hid_t dset, const dsv_source *s, uint64_t row_elems,
		       uint64_t start, uint64_t n)
{
	uint64_t row = row_elems ? row_elems : 1;
	uint64_t b0 = start / row / c->cdims[0], b1 = (start + n - 1) / row / c->cdims[0];
	uint64_t inner = 1;
	hsize_t coord[DSV_MAX_DIMS];

	for (int k = 1; k < c->ndim; k++) {
		if (c->grid[k] == 0)
			return 0;    /* no elements */
		inner *= c->grid[k]; /* c->ok is NULL when this overflows */
	}
	for (uint64_t b = b0; b <= b1 && b < c->grid[0]; b++) {
		uint64_t idx[DSV_MAX_DIMS] = { 0 }, id = b * inner; /* chunk (b, 0, ...) */
		for (;; id++) {
			if (!c->ok || !(c->ok[id / 8] >> (id % 8) & 1)) {
				coord[0] = b * c->cdims[0];
				for (int k = 1; k < c->ndim; k++)
					coord[k] = idx[k] * c->cdims[k];
				int err = check_stored_chunk(c, dset, s, coord);
				if (err)
					return err;
				if (c->ok)
					c->ok[id / 8] |= (uint8_t)(1u << (id % 8));
			}
			/* the band's next chunk, last axis fastest */
			int k = c->ndim - 1;
			while (k >= 1 && ++idx[k] == c->grid[k])
				idx[k--] = 0;
			if (k < 1)
				break;
		}
	}
	return 0;
}

/* nbit and scaleoffset size their output from parameters stored in the file
 * (elements per chunk, element size), and the library then copies a whole
 * chunk out of it: those must describe this dataset's chunk of elems
 * elements. @return 1 if so, or for any other filter. */
int dsv_h5_filter_params_ok(H5Z_filter_t id, const unsigned *cd, size_t ncd, uint64_t elems,
			    size_t type_size)
{
	if (id != H5Z_FILTER_NBIT && id != H5Z_FILTER_SCALEOFFSET)
		return 1;
	if (id == H5Z_FILTER_NBIT && ncd > 1 && cd[1])
		return 1; /* stored as is */
	return ncd >= 5 && cd[2] == elems && cd[4] == type_size;
}

int dsv_h5_check_read_chunks(dsv_h5_chunk_check *c, hid_t dset, const dsv_source *s,
			     uint64_t row_elems, uint64_t start, uint64_t n)
{
	int err = check_bands(c, dset, s, row_elems, start, n);
	if (!err)
		dsv_h5_decode_arm(c->expect);
	return err;
}
