/*
 * The readahead's device path (backend.h, dsv_backend_make; docs/gpu.md). The readahead thread reads the stored chunks under a
 * range of a view's output (pread, Fletcher32 checked) into one staging
 * buffer, and the device decodes and transforms them in one batch
 * (dsv_gpu_decode_xform), straight to the view's dtype: the CPU does the
 * I/O and the copies, the device the LZ4 and the arithmetic, and the chunk
 * cache is not involved. A range whose chunks need more than the device's
 * buffers hold goes in several batches. Chunks the tier holds are not
 * read: the device transforms them from there. A chunk the range covers
 * whole is made in place in the caller's buffer; one it covers in part (a
 * range of whole pages starts inside the chunk before its own) is made
 * whole into scratch and its part copied.
 */
#include <string.h>

#include "backend/backend_i.h"
#include "common/tlsbuf.h"
#include "gpu/gpu_emu.h"
#include "source/source.h"
#include "view/view.h"
#include "xform/xform_elem.h"

#define MAX_ITEMS 64 /* chunks in one range; a longer range stays on the CPU */

/* Is the chunk at r one the device decodes, of elements of es bytes?
 * (LZ4 alone: the device does not undo HDF5's shuffle) */
static int device_chunk(const dsv_chunk_ref *r, size_t es)
{
	return r->codec == DSV_CODEC_LZ4 && !r->shuffle && !r->fallback && !r->grid &&
	       r->nelems > 0 && r->raw_size % es == 0 && r->raw_size / es >= r->nelems &&
	       r->stored_size >= (r->fletcher32 ? 4u : 0u);
}

/* What one batch of a run needs of a device buffer, in bytes. */
typedef struct need {
	uint64_t in, raw, out;
} need;

/* Chunks refs[0..k) of source s, made by the device in one batch (their
 * items' out already set): stored bytes read and staged unless the tier
 * holds the chunk (tier_at), decoded chunks admitted to the tier while it
 * has room. */
static int make_batch(dsv_backend *b, const dsv_view *v, size_t si, const dsv_chunk_ref *refs,
		      dsv_gpu_item *items, size_t k, uint64_t stored)
{
	const dsv_source *s = v->sources[si];
	char *staged = dsv_tls_buf(DSV_TLS_DEV_IN, (size_t)(stored ? stored : 1));
	dsv_xform_desc d;
	int err = 0;

	if (!staged)
		return DSV_ERR_NOMEM;
	for (size_t i = 0, so = 0; i < k; i++) {
		const dsv_chunk_ref *r = &refs[i];
		uint64_t at;
		size_t payload;
		items[i].raw = r->raw_size;
		items[i].e0 = v->elem_base[si] + r->elem_start; /* picks the channel */
		if (items[i].tier_at >= 0)
			continue;
		if ((err = dsv_source_read_stored(s, r, staged + so, &payload)))
			break;
		items[i].src = staged + so;
		items[i].n = payload;
		so += (size_t)r->stored_size;
		if (b->tier && dsv_gpu_tier_reserve(b->tier, s, r->index, r->raw_size, &at) == 0)
			items[i].admit_at = (int64_t)at;
	}
	if (!err) {
		dsv_xform_describe(v->xf[si], &d);
		err = b->gpu ? dsv_gpu_decode_xform(b->gpu, &d, items, k, NULL)
			     : dsv_gpu_emu_decode_xform(&d, items, k, b->emu.tier);
	}
	for (size_t i = 0; i < k; i++)
		if (items[i].admit_at >= 0)
			dsv_gpu_tier_commit(b->tier, s, refs[i].index, !err);
	return err;
}

/* Source si's elements [a, a + m) into out, from the chunks under them, in
 * as many batches as the device's buffers need. */
static int make_run(dsv_backend *b, const dsv_view *v, size_t si, uint64_t a, uint64_t m, char *out)
{
	const dsv_source *s = v->sources[si];
	const dsv_source_info *in = dsv_source_get_info(s);
	size_t es = dsv_dtype_size(in->dtype), oes = v->out_esize, k = 0;
	dsv_chunk_ref refs[MAX_ITEMS];
	dsv_gpu_item items[MAX_ITEMS];
	need needs[MAX_ITEMS];
	uint64_t edge = 0, eoff[MAX_ITEMS], at;
	int whole[MAX_ITEMS];
	int err;

	if (!v->xf[si] || in->chunk_elems == 0)
		return DSV_ERR_UNSUPPORTED;
	for (uint64_t e = a; e < a + m; k++) {
		dsv_chunk_ref *r = &refs[k];
		if (k == MAX_ITEMS || dsv_source_chunk(s, e / in->chunk_elems, r) ||
		    r->elem_start > e || !device_chunk(r, es))
			return DSV_ERR_UNSUPPORTED;
		whole[k] = r->elem_start >= a && r->elem_start + r->nelems <= a + m &&
			   r->raw_size == r->nelems * es;
		int held = b->tier && dsv_gpu_tier_find(b->tier, s, r->index, &at);
		needs[k] = (need){ held ? 0 : r->stored_size, held ? 0 : r->raw_size,
				   r->raw_size / es * oes };
		if (needs[k].in > b->batch || needs[k].raw > b->batch || needs[k].out > b->batch)
			return DSV_ERR_UNSUPPORTED; /* a chunk larger than the buffers */
		items[k] = (dsv_gpu_item){ .tier_at = held ? (int64_t)at : -1, .admit_at = -1 };
		eoff[k] = edge;
		edge += whole[k] ? 0 : needs[k].out;
		e = r->elem_start + r->nelems;
	}
	char *scratch = edge ? dsv_tls_buf(DSV_TLS_DEV_EDGE, (size_t)edge) : NULL;
	if (edge && !scratch)
		return DSV_ERR_NOMEM;
	/* a chunk the range covers whole is made in place, another whole into
	 * scratch and its part copied after */
	for (size_t i = 0; i < k; i++)
		items[i].out = whole[i] ? out + (refs[i].elem_start - a) * oes : scratch + eoff[i];
	for (size_t i = 0, j; i < k; i = j) {
		need sum = { 0, 0, 0 };
		for (j = i;
		     j < k && sum.in + needs[j].in <= b->batch &&
		     sum.raw + needs[j].raw <= b->batch && sum.out + needs[j].out <= b->batch;
		     j++) {
			sum.in += needs[j].in;
			sum.raw += needs[j].raw;
			sum.out += needs[j].out;
		}
		if ((err = make_batch(b, v, si, refs + i, items + i, j - i, sum.in)))
			return err;
	}
	for (size_t i = 0; i < k; i++) {
		const dsv_chunk_ref *r = &refs[i];
		if (whole[i])
			continue;
		uint64_t lo = a > r->elem_start ? a : r->elem_start;
		uint64_t hi = a + m < r->elem_start + r->nelems ? a + m : r->elem_start + r->nelems;
		memcpy(out + (lo - a) * oes, (char *)items[i].out + (lo - r->elem_start) * oes,
		       (size_t)((hi - lo) * oes));
	}
	return 0;
}

int dsv_backend_makes(const dsv_backend *b, const dsv_view *v)
{
	/* a view whose element e is element e of its sources, all LZ4, and a
	 * device not turned off by a CUDA error: else the readahead would
	 * read every range for the device and then again on the CPU */
	dsv_gpu_stats gs = { 0 };
	if (b->gpu)
		dsv_gpu_get_stats(b->gpu, &gs);
	if ((!b->gpu && !b->emu.on) || gs.failed || v->mapped || v->tile_wins)
		return 0;
	for (size_t i = 0; i < v->nsources; i++)
		if (!dsv_source_get_info(v->sources[i])->lz4_block)
			return 0;
	return 1;
}

int dsv_backend_make(dsv_backend *b, const dsv_view *v, uint64_t e0, uint64_t n, void *out)
{
	char *o = out;
	uint64_t bytes = n * v->out_esize;
	int err = 0;

	if (!dsv_backend_makes(b, v) || e0 > v->nelems || n > v->nelems - e0)
		return DSV_ERR_UNSUPPORTED;
	while (n && !err) {
		size_t si = dsv_view_source_of(v, v->elem_base, e0);
		uint64_t m = v->elem_base[si + 1] - e0;
		if (m > n)
			m = n;
		err = make_run(b, v, si, e0 - v->elem_base[si], m, o);
		o += m * v->out_esize;
		e0 += m;
		n -= m;
	}
	if (err)
		atomic_fetch_add(&b->made_fallbacks, 1);
	else
		atomic_fetch_add(&b->made_bytes, bytes);
	return err;
}
