/* Backend choice: CUDA when built with it and a device answers, else CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/defaults.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/str.h"
#include "dsview/codec.h"
#include "backend/backend_i.h"
#include "view/view.h"

/* Each slot's pinned input and output (gpu.cu), two slots. */
#define PINNED_BUFFERS 4

#define MIB (1ull << 20)

uint64_t dsv_backend_batch_bytes(uint64_t budget, dsv_view *const *views, size_t n)
{
	uint64_t b = budget / 32 / MIB * MIB, most = 0;
	b = b < MIB ? MIB : b > 128 * MIB ? 128 * MIB : b;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < views[i]->nsources; k++) {
			const dsv_source_info *in = dsv_source_get_info(views[i]->sources[k]);
			uint64_t es = dsv_dtype_size(in->dtype), raw = in->chunk_elems * es;
			if (!in->lz4_block || raw > 1024 * MIB)
				continue;
			uint64_t stored = dsv_lz4_bound((size_t)raw, (size_t)in->lz4_block) + 4;
			uint64_t made = in->chunk_elems * views[i]->out_esize;
			most = raw > most ? raw : most;
			most = stored > most ? stored : most;
			most = made > most ? made : most;
		}
	}
	most = (most + MIB - 1) / MIB * MIB;
	most = most < 1024 * MIB ? most : 1024 * MIB;
	/* the 4 pinned buffers, taken out of the budget, take half of it at
	 * most (a budget of 0 has no cache to take them from) */
	uint64_t cap = budget / 8 / MIB * MIB;
	if (budget && most > cap)
		most = cap;
	return most > b ? most : b;
}

/* The tier of n bytes for the device (or its emulation): its index, and
 * device memory, or host memory when emulated. @return 0, or a dsv_err
 * with eb. */
static int make_tier(dsv_backend *b, uint64_t n, dsv_errbuf *eb)
{
	if (!(b->tier = dsv_gpu_tier_new(n)) || (b->emu.on && !(b->emu.tier = malloc(n))))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	return b->gpu ? dsv_gpu_tier_alloc(b->gpu, n, eb) : 0;
}

int dsv_backend_create(const char *gpu, uint64_t gpu_cache, uint64_t budget, dsv_view *const *views,
		       size_t n, dsv_backend **out, dsv_errbuf *eb)
{
	dsv_backend *b = calloc(1, sizeof(*b));
	dsv_errbuf why; /* why no device, or no tier: the words go into eb's message */
	int dev;
	*out = NULL;
	if (!b)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (dsv_parse_gpu(gpu ? gpu : DSV_DEFAULT_GPU, &dev)) {
		free(b);
		return dsv_errf(eb, DSV_ERR_INVALID,
				"--gpu '%s' must be auto, off or a device number", gpu);
	}
	b->batch = dsv_backend_batch_bytes(budget, views, n);
	if (dev == DSV_GPU_OFF) {
		dsv_log_info("backend: cpu (--gpu off)");
		snprintf(b->why, sizeof(b->why), "--gpu off");
	} else if (!dsv_gpu_open(dev == DSV_GPU_AUTO ? -1 : dev, b->batch, &b->gpu, &why)) {
		dsv_log_info("backend: cuda device %d (%s), buffers of %llu MiB",
			     dev == DSV_GPU_AUTO ? 0 : dev, dsv_gpu_name(b->gpu),
			     (unsigned long long)(b->batch >> 20));
	} else if (dev != DSV_GPU_AUTO) {
		free(b);
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "--gpu %d: %s", dev, why.msg);
	} else {
		dsv_log_info("backend: cpu (%s)", why.msg);
		snprintf(b->why, sizeof(b->why), "%.*s", (int)sizeof(b->why) - 1, why.msg);
	}
	if (dev == DSV_GPU_AUTO && !b->gpu && dsv_knob_int(DSV_KNOB_GPU_EMULATE)) {
		b->emu.on = 1;
		dsv_log_info("backend: readahead through the host build of the device code "
			     "(DSVIEW_GPU_EMULATE=1, for tests; the tier in host memory)");
	}
	if (gpu_cache && (b->gpu || b->emu.on)) {
		/* asked for and not had: the mount fails rather than run without */
		if (make_tier(b, gpu_cache, &why)) {
			dsv_backend_destroy(b);
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "--gpu-cache: %s", why.msg);
		}
		dsv_log_info("backend: --gpu-cache %llu MiB",
			     (unsigned long long)(gpu_cache >> 20));
	} else if (gpu_cache) {
		dsv_log_info("backend: --gpu-cache unused: no device");
	}
	*out = b;
	return 0;
}

void dsv_backend_destroy(dsv_backend *b)
{
	if (!b)
		return;
	dsv_gpu_close(b->gpu);
	dsv_gpu_tier_free(b->tier);
	free(b->emu.tier);
	free(b);
}

uint64_t dsv_backend_pinned(const dsv_backend *b)
{
	return b->gpu ? PINNED_BUFFERS * b->batch : 0;
}

const char *dsv_backend_name(const dsv_backend *b)
{
	return b->gpu ? "cuda" : "cpu";
}

void dsv_backend_get_stats(const dsv_backend *b, dsv_backend_stats *st)
{
	dsv_gpu_stats gs = { 0 };
	if (b->gpu)
		dsv_gpu_get_stats(b->gpu, &gs);
	st->device = b->gpu ? dsv_gpu_name(b->gpu) : "";
	st->why_cpu = b->why;
	st->gpu_chunks = gs.chunks;
	st->gpu_bytes = gs.bytes;
	st->gpu_batches = gs.batches;
	st->gpu_fallbacks = gs.fallbacks;
	st->gpu_busy = gs.busy;
	st->gpu_failed = gs.failed;
	st->gpu_emulated = b->emu.on;
	st->made_bytes = atomic_load(&((dsv_backend *)b)->made_bytes);
	st->made_fallbacks = atomic_load(&((dsv_backend *)b)->made_fallbacks);
	st->batch_bytes = b->gpu || b->emu.on ? b->batch : 0;
	st->pinned_bytes = dsv_backend_pinned(b);
	dsv_gpu_tier_stats ts = { 0 };
	if (b->tier)
		dsv_gpu_tier_get_stats(b->tier, &ts);
	st->tier_bytes = ts.cap;
	st->tier_used = ts.used;
	st->tier_chunks = ts.chunks;
	st->tier_hits = ts.hits;
	st->tier_misses = ts.misses;
}

/* Held chunk ref's first size bytes from the tier (at) into out.
 * @return 0, or DSV_ERR_UNSUPPORTED on a CUDA error. */
static int from_tier(dsv_backend *b, uint64_t at, void *out, size_t size)
{
	if (b->emu.tier) {
		memcpy(out, b->emu.tier + at, size);
		return 0;
	}
	return dsv_gpu_tier_read(b->gpu, at, out, size);
}

int dsv_backend_decode(dsv_backend *b, const dsv_view *v, uint64_t g, void *out, size_t size,
		       unsigned flags)
{
	const dsv_source *s = NULL;
	dsv_chunk_ref ref;
	size_t si;
	uint64_t at;
	int err = DSV_ERR_UNSUPPORTED, admit = 0;

	/* the tier holds whole decoded LZ4 chunks, of any view of the source */
	if (b->tier && dsv_view_chunk_ref(v, g, &si, &ref) == 0 && ref.codec == DSV_CODEC_LZ4 &&
	    !ref.shuffle && !ref.fallback && !ref.grid && size <= ref.raw_size) {
		s = v->sources[si];
		if (dsv_gpu_tier_find(b->tier, s, ref.index, &at) &&
		    from_tier(b, at, out, size) == 0)
			return 0;
		admit = dsv_gpu_tier_reserve(b->tier, s, ref.index, ref.raw_size, &at) == 0;
	}
	if (b->gpu)
		err = dsv_gpu_decode(b->gpu, v, g, out, size, admit ? (int64_t)at : -1);
	int on_device = err == 0;
	if (err == DSV_ERR_UNSUPPORTED)
		err = dsv_cpu_decode(v, g, out, size, flags);
	if (admit) {
		/* in: copied on the device, or (emulated) the CPU's whole chunk */
		int in = !err && (on_device || (b->emu.tier && size == ref.raw_size));
		if (in && !on_device)
			memcpy(b->emu.tier + at, out, size);
		dsv_gpu_tier_commit(b->tier, s, ref.index, in);
	}
	return err;
}
