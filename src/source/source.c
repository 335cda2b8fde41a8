/*
 * Generic source operations: chunk arithmetic, pread, decode of one chunk.
 * Each format's opening lives in its folder under src/formats/; the
 * registry (src/formats/registry.c) opens a source by its spec.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/arith.h"
#include "common/bytes.h"
#include "codec/codec.h"
#include "common/str.h"
#include "dsview/codec.h"
#include "net/net.h"
#include "source/source_i.h"

/* The more part of every source that has none of its own: zeros, in
 * read-only memory, so that a write to it faults. */
static const struct dsv_source_more no_more = { 0 };

dsv_source *dsv_source_alloc(const char *path, const char *dataset)
{
	dsv_source *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (!(s->more = calloc(1, sizeof(*s->more)))) {
		free(s);
		return NULL;
	}
	s->fd = -1;
	s->refs = 1;
	s->path = strdup(path);
	size_t shown = dsv_url_shown_len(path);
	s->shown = shown == strlen(path) ? s->path : strndup(path, shown);
	s->dataset = dataset ? strdup(dataset) : NULL;
	if (!s->path || !s->shown || (dataset && !s->dataset)) {
		dsv_source_close(s);
		return NULL;
	}
	s->info.path = s->shown;
	s->info.dataset = s->dataset;
	s->info.why = "";
	return s;
}

void dsv_source_why(dsv_source *s, const char *fmt, ...)
{
	va_list ap;
	char *text;
	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	free(s->why);
	s->why = n < 0 ? NULL : text;
	s->info.why = s->why ? s->why : "";
}

void dsv_source_settle(dsv_source *s)
{
	if (s->more == &no_more || memcmp(s->more, &no_more, sizeof(no_more)))
		return;
	free(s->more);
	s->more = (struct dsv_source_more *)&no_more; /* read, never written */
}

int dsv_source_dims(dsv_source *s)
{
	if (!s->more->gshape) {
		uint64_t *d = calloc(3 * DSV_MAX_DIMS, sizeof(*d));
		if (!d)
			return DSV_ERR_NOMEM;
		s->more->gshape = d;
		s->more->gcount = d + DSV_MAX_DIMS;
		s->more->blosc2_shape = d + 2 * DSV_MAX_DIMS;
	}
	return 0;
}

/* An object by its URL: what its HEAD said stands for fstat. */
static int open_object(dsv_source *s, dsv_errbuf *eb)
{
	int err = dsv_net_open(s->path, &s->net, eb);
	if (err)
		return err;
	s->file_size = dsv_net_size(s->net);
	s->info.mtime = dsv_net_mtime(s->net);
	return 0;
}

int dsv_source_open_file(dsv_source *s, dsv_errbuf *eb)
{
	if (dsv_url_scheme_len(s->path))
		return open_object(s, eb);
	return dsv_source_fd_first(s, eb);
}

int dsv_source_set_shape(dsv_source *s, int ndim, const uint64_t *shape)
{
	uint64_t row = 1, bytes;
	if (ndim < 0 || ndim > DSV_MAX_DIMS)
		return DSV_ERR_OVERFLOW;
	s->info.ndim = ndim;
	for (int i = 0; i < ndim; i++) {
		s->info.shape[i] = shape[i];
		if (i > 0 && dsv_mul_u64(row, shape[i], &row))
			return DSV_ERR_OVERFLOW;
	}
	s->info.nrows = ndim ? shape[0] : 1;
	s->info.row_elems = row;
	if (dsv_mul_u64(s->info.nrows, row, &s->info.nelems) ||
	    dsv_mul_u64(s->info.nelems, dsv_dtype_size(s->info.dtype), &bytes) || bytes > INT64_MAX)
		return DSV_ERR_OVERFLOW;
	return 0;
}

void dsv_source_flat_chunks(dsv_source *s, uint64_t target_bytes)
{
	uint64_t row = s->info.row_elems ? s->info.row_elems : 1;
	uint64_t target = target_bytes / dsv_dtype_size(s->info.dtype), ce;

	if (row <= target) {
		ce = (target / row) * row; /* whole rows */
	} else {
		/* A row larger than a chunk: split it into equal pieces of at most
		 * target elements when the row divides nicely, else plain target. */
		uint64_t least = (row + target - 1) / target;
		ce = target;
		/* a bounded search: a hostile header may declare a row of 2^60
		 * elements (with no rows, so the file is small) */
		for (uint64_t parts = least; parts <= least + 4096 && parts / 4 <= least; parts++) {
			if (row % parts == 0) {
				ce = row / parts;
				break;
			}
		}
	}
	if (ce == 0)
		ce = 1;
	s->info.chunk_elems = ce;
	s->info.nchunks = s->info.nelems ? (s->info.nelems + ce - 1) / ce : 0;
}

dsv_source *dsv_source_ref(dsv_source *s)
{
	s->refs++;
	return s;
}

uint64_t dsv_source_max_stored(uint64_t raw, int codec, int fl32)
{
	return (codec ? 2 * raw + (64u << 10) : raw) + (fl32 ? 4 : 0);
}

int dsv_source_chunk_map(dsv_source *s, uint64_t n)
{
	/* calloc checks n * size for overflow */
	s->more->chunk_off = calloc(n, sizeof(*s->more->chunk_off));
	s->more->chunk_size = calloc(n, sizeof(*s->more->chunk_size));
	s->more->chunk_mask = calloc(n, sizeof(*s->more->chunk_mask));
	return s->more->chunk_off && s->more->chunk_size && s->more->chunk_mask ? 0 : DSV_ERR_NOMEM;
}

void dsv_source_close(dsv_source *s)
{
	if (!s || --s->refs > 0)
		return;
	if (s->fmt_close)
		s->fmt_close(s->fmt);
	dsv_source_fd_close(s);
	dsv_net_close(s->net);
	free(s->more->table_mem);
	free(s->more->chunk_off);
	free(s->more->chunk_size);
	free(s->more->chunk_mask);
	if (s->shown != s->path)
		free(s->shown);
	free(s->path);
	free(s->more->gshape);
	if (s->more != &no_more)
		free(s->more);
	free(s->dataset);
	free(s->attrs_json);
	free(s->dims_json);
	free(s->why);
	free(s);
}

const dsv_source_info *dsv_source_get_info(const dsv_source *s)
{
	return &s->info;
}

uint64_t dsv_source_stored_bytes(const dsv_source *s)
{
	return s->more->stored_count ? s->more->stored_count(s) : s->info.stored_bytes;
}

int dsv_source_same_file(const dsv_source_info *a, const dsv_source_info *b)
{
	return !strcmp(a->path, b->path) &&
	       (a->dataset && b->dataset ? !strcmp(a->dataset, b->dataset)
					 : a->dataset == b->dataset);
}

const char *dsv_source_kind_name(dsv_source_kind k)
{
	switch (k) {
	case DSV_SRC_NPY: return "npy";
	case DSV_SRC_RAW: return "raw";
	case DSV_SRC_NIFTI: return "nifti";
	case DSV_SRC_FILL: return "fill";
	case DSV_SRC_H5_CONTIGUOUS: return "hdf5-contiguous";
	case DSV_SRC_H5_CHUNKED: return "hdf5-chunked";
	case DSV_SRC_H5_FALLBACK: return "hdf5-library";
	case DSV_SRC_ZARR: return "zarr";
	case DSV_SRC_RUN: return "run";
	case DSV_SRC_RUNS: return "runs";
	case DSV_SRC_DOCUMENTS: return "documents";
	case DSV_SRC_EDF: return "edf";
	case DSV_SRC_EEGLAB: return "eeglab";
	case DSV_SRC_BV: return "brainvision";
	}
	return "unknown";
}

int dsv_source_kind_flat(dsv_source_kind k)
{
	return k == DSV_SRC_NPY || k == DSV_SRC_RAW || k == DSV_SRC_NIFTI || k == DSV_SRC_FILL ||
	       k == DSV_SRC_H5_CONTIGUOUS || k == DSV_SRC_RUN;
}

int dsv_source_chunk(const dsv_source *s, uint64_t index, dsv_chunk_ref *r)
{
	uint64_t esize = dsv_dtype_size(s->info.dtype);
	if (index >= s->info.nchunks)
		return DSV_ERR_INVALID;
	memset(r, 0, sizeof(*r));
	r->index = index;
	r->elem_start = index * s->info.chunk_elems;
	r->nelems = s->info.nelems - r->elem_start;
	if (r->nelems > s->info.chunk_elems)
		r->nelems = s->info.chunk_elems;
	r->fallback = s->fallback;
	if (!s->chunked) {
		r->offset = s->data_offset + r->elem_start * esize;
		r->stored_size = r->raw_size = r->nelems * esize;
		r->codec = DSV_CODEC_NONE;
		return 0;
	}
	r->raw_size = s->more->chunk_raw_size;
	r->grid = s->grid;
	if (s->grid) { /* a band: grid.c makes it from its chunks */
		r->raw_size = r->nelems * esize;
		return 0;
	}
	if (s->more->chunk_off) {
		uint32_t mask = s->more->chunk_mask ? s->more->chunk_mask[index] : 0;
		r->offset = s->more->chunk_off[index];
		r->stored_size = s->more->chunk_size[index];
		/* A chunk the codec could not shrink is stored raw, its
		 * filter's bit set (optional filters: LZF, zstd). */
		r->codec = !(mask & (1u << s->more->codec_filter_bit)) ? s->codec : DSV_CODEC_NONE;
		r->fletcher32 = s->fletcher32 && !(mask & (1u << s->more->fl32_filter_bit));
		r->shuffle = !(mask & (1u << s->more->shuffle_filter_bit)) ? s->shuffle : 0;
		if (r->offset == DSV_SRC_UNALLOCATED)
			r->fallback = 1;
	}
	return 0;
}

int dsv_pread_fd(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;
	while (n) {
		ssize_t got = pread(fd, p, n, (off_t)off);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return DSV_ERR_IO;
		}
		if (got == 0)
			return DSV_ERR_TRUNCATED;
		p += got;
		n -= (size_t)got;
		off += (uint64_t)got;
	}
	return 0;
}

int dsv_source_pread(const dsv_source *s, void *buf, size_t n, uint64_t off)
{
	if (s->more->vpread)
		return s->more->vpread(s, buf, n, off);
	if (s->net)
		return dsv_net_pread(s->net, buf, n, off);
	int fd = dsv_source_fd_get(s), err;
	if (fd < 0)
		return DSV_ERR_IO;
	err = dsv_pread_fd(fd, buf, n, off);
	dsv_source_fd_put(s);
	return err;
}

int dsv_source_read_fallback(const dsv_source *s, const dsv_chunk_ref *ref, void *dst,
			     size_t dst_cap)
{
	if (!s->fmt || !s->more->lib_read)
		return DSV_ERR_INTERNAL;
	return s->more->lib_read(s, ref, dst, dst_cap);
}

uint64_t dsv_source_fallback_band(const dsv_source *s)
{
	if (s->grid)
		return s->more->g_band > 1 ? s->more->gshape[0] * s->info.row_elems : 0;
	return s->fallback ? s->more->band_elems : 0;
}

size_t dsv_source_scratch_size(const dsv_source *s)
{
	if (!s->chunked || (s->codec == DSV_CODEC_NONE && !s->fletcher32 && !s->shuffle))
		return 0;
	uint64_t max = 0;
	for (uint64_t i = 0; s->more->chunk_size && i < s->info.nchunks; i++)
		if (s->more->chunk_off[i] != DSV_SRC_UNALLOCATED && s->more->chunk_size[i] > max)
			max = s->more->chunk_size[i];
	return (size_t)max;
}

/* [off, off + n) lies inside the file as it was at open (a file that
 * shrank since fails at pread instead), or inside the flat layout of a
 * source read through vpread. */
static int within_file(const dsv_source *s, uint64_t off, uint64_t n)
{
	uint64_t size = s->more->vpread ? s->more->vsize : s->file_size;
	return n <= size && off <= size - n;
}

void dsv_source_note_lz4_block(dsv_source *s)
{
	uint8_t head[DSV_LZ4_HEADER];
	dsv_chunk_ref ref;
	dsv_lz4_frame f;

	s->info.lz4_block = 0;
	for (uint64_t i = 0; i < s->info.nchunks; i++) {
		if (dsv_source_chunk(s, i, &ref) || ref.fallback)
			continue;
		if (ref.codec != DSV_CODEC_LZ4)
			continue; /* stored raw: its filter was skipped */
		if (ref.stored_size < sizeof(head) || !within_file(s, ref.offset, sizeof(head)) ||
		    dsv_source_pread(s, head, sizeof(head), ref.offset) ||
		    dsv_lz4_frame_head(head, sizeof(head), &f) || f.raw != ref.raw_size)
			return;
		s->info.lz4_block = f.block;
		return;
	}
}

int dsv_source_read_elems(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t first, uint64_t n,
			  void *dst)
{
	uint64_t esize = dsv_dtype_size(s->info.dtype);
	if (!dsv_chunk_is_plain(ref) || first > ref->nelems || n > ref->nelems - first)
		return DSV_ERR_INVALID;
	uint64_t off = ref->offset + first * esize;
	if (!within_file(s, off, n * esize))
		return DSV_ERR_TRUNCATED;
	return dsv_source_pread(s, dst, (size_t)(n * esize), off);
}

int dsv_source_gathers(const dsv_source *s)
{
	return s->more->gather != NULL;
}

int dsv_source_read_runs(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
			 uint64_t len, void *dst)
{
	if (!s->more->gather)
		return DSV_ERR_UNSUPPORTED;
	if (nruns == 0 || len == 0)
		return 0;
	uint64_t n = s->info.nelems, last;
	if (start > n || len > n - start || dsv_mul_u64(nruns - 1, stride, &last) ||
	    last > n - len - start)
		return DSV_ERR_INVALID;
	return s->more->gather(s, start, stride, nruns, len, dst);
}

int dsv_source_read_runs_to(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
			    uint64_t len, const dsv_gather_out *o, void *dst)
{
	if (!s->more->gather_to || s->info.dtype != DSV_F64)
		return DSV_ERR_UNSUPPORTED;
	uint64_t n = s->info.nelems, last, all;
	if (nruns == 0 || len == 0 || start > n || len > n - start ||
	    dsv_mul_u64(nruns - 1, stride, &last) || last > n - len - start ||
	    dsv_mul_u64(nruns, len, &all) || o->skip > all || o->n > all - o->skip)
		return DSV_ERR_INVALID;
	return s->more->gather_to(s, start, stride, nruns, len, o, dst);
}

/* Decodes a stored chunk into exactly raw bytes at dst. @return 0 or
 * DSV_ERR_CORRUPT. */
static int decode(const dsv_source *s, dsv_codec codec, void *dst, size_t raw, const void *src,
		  size_t src_size)
{
	int64_t got = DSV_ERR_CORRUPT;

	switch (codec) {
	case DSV_CODEC_LZ4: got = dsv_lz4_decode(dst, raw, src, src_size); break;
	case DSV_CODEC_ZSTD: got = dsv_zstd_decode(dst, raw, src, src_size); break;
	case DSV_CODEC_LZF: got = dsv_lzf_decode(dst, raw, src, src_size); break;
	case DSV_CODEC_BLOSC: got = dsv_blosc_decode(dst, raw, src, src_size); break;
	case DSV_CODEC_BSHUF:
		got = dsv_bshuf_decode(dst, raw, src, src_size, s->more->bshuf_elem,
				       s->more->bshuf_block, (int)s->more->bshuf_comp);
		break;
	case DSV_CODEC_BLOSC2:
		got = dsv_blosc2_decode(dst, raw, src, src_size, s->info.ndim,
					s->more->blosc2_shape);
		break;
	case DSV_CODEC_DEFLATE: got = dsv_deflate_decode(dst, raw, src, src_size); break;
	case DSV_CODEC_NONE: break;
	}
	return got == (int64_t)raw ? 0 : DSV_ERR_CORRUPT;
}

/* need bytes at dst of a chunk of raw bytes at src that HDF5 shuffled.
 * @return 0 or DSV_ERR_CORRUPT (src shorter than the chunk). */
static int unshuffle(const dsv_chunk_ref *ref, void *dst, size_t need, const void *src,
		     size_t src_size)
{
	if (src_size < ref->raw_size ||
	    dsv_unshuffle(dst, need, src, (size_t)ref->raw_size, ref->shuffle))
		return DSV_ERR_CORRUPT;
	return 0;
}

/* The codec's part of a chunk's stored bytes, after its Fletcher32 (when
 * it has one) is checked and taken off. */
static int payload_of(const dsv_chunk_ref *ref, const void *stored, size_t *payload)
{
	*payload = (size_t)ref->stored_size;
	if (!ref->fletcher32)
		return 0;
	int err = dsv_fletcher32_check(stored, *payload);
	*payload -= 4;
	return err;
}

int dsv_source_read_stored(const dsv_source *s, const dsv_chunk_ref *ref, void *buf,
			   size_t *payload)
{
	int err = dsv_source_pread(s, buf, (size_t)ref->stored_size, ref->offset);
	return err ? err : payload_of(ref, buf, payload);
}

int dsv_source_decode_stored(const dsv_source *s, const dsv_chunk_ref *ref, const void *stored,
			     void *dst, size_t need)
{
	size_t payload;
	int err = payload_of(ref, stored, &payload);
	if (err)
		return err;
	if (ref->codec == DSV_CODEC_NONE && !ref->shuffle) {
		if (payload < need)
			return DSV_ERR_CORRUPT;
		memcpy(dst, stored, need);
		return 0;
	}
	if (ref->codec == DSV_CODEC_NONE) /* shuffled, stored without a codec */
		return unshuffle(ref, dst, need, stored, payload);
	uint64_t raw = ref->raw_size;
	/* The frames that carry a raw size must carry this one: checked
	 * before anything is allocated from it (a zstd frame may declare
	 * none: it decodes into the chunk's size, and must fill it). */
	if ((ref->codec == DSV_CODEC_LZ4 &&
	     (dsv_lz4_raw_size(stored, payload, &raw) || raw != ref->raw_size)) ||
	    (ref->codec == DSV_CODEC_ZSTD &&
	     (dsv_zstd_raw_size(stored, payload, &raw) ||
	      (raw != DSV_ZSTD_SIZE_UNKNOWN && raw != ref->raw_size))))
		return DSV_ERR_CORRUPT;
	raw = ref->raw_size;
	if (raw == need && !ref->shuffle)
		return decode(s, ref->codec, dst, (size_t)raw, stored, payload);
	/* An edge chunk (decodes to more than we keep) or a shuffled one. */
	void *tmp = malloc((size_t)raw);
	if (!tmp)
		return DSV_ERR_NOMEM;
	err = decode(s, ref->codec, tmp, (size_t)raw, stored, payload);
	if (!err && ref->shuffle)
		err = unshuffle(ref, dst, need, tmp, (size_t)raw);
	else if (!err)
		memcpy(dst, tmp, need);
	free(tmp);
	return err;
}

int dsv_source_read_chunk(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap,
			  void *scratch, size_t scratch_cap, dsv_errbuf *eb)
{
	return dsv_source_read_chunk_as(s, ref, 0, dst, dst_cap, scratch, scratch_cap, eb);
}

int dsv_source_read_chunk_as(const dsv_source *s, const dsv_chunk_ref *ref, unsigned flags,
			     void *dst, size_t dst_cap, void *scratch, size_t scratch_cap,
			     dsv_errbuf *eb)
{
	uint64_t need = ref->nelems * dsv_dtype_size(s->info.dtype);
	int err;

	if (dst_cap < need)
		return DSV_ERR_INVALID;
	if (ref->grid)
		return dsv_grid_read_band(s, ref, flags, dst, dst_cap, eb);
	if (ref->fallback)
		return dsv_source_read_fallback(s, ref, dst, dst_cap);
	if (!within_file(s, ref->offset, ref->stored_size))
		return DSV_ERR_TRUNCATED;

	if (ref->codec == DSV_CODEC_NONE && !ref->fletcher32 && !ref->shuffle) {
		/* Raw: read straight into dst; an HDF5 edge chunk stores a full
		 * chunk but only the first nelems elements are ours. */
		return dsv_source_pread(s, dst, (size_t)need, ref->offset);
	}
	if (scratch_cap < ref->stored_size)
		return DSV_ERR_INVALID;
	if ((err = dsv_source_pread(s, scratch, (size_t)ref->stored_size, ref->offset)))
		return err;
	return dsv_source_decode_stored(s, ref, scratch, dst, (size_t)need);
}
