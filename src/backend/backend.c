/* Backend choice: CUDA when built with it and a device answers, else CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/str.h"
#include "backend/backend_i.h"

int dsv_backend_create(const char *gpu, dsv_backend **out, dsv_errbuf *eb)
{
	dsv_backend *b = calloc(1, sizeof(*b));
	char why[256] = "";
	int dev;
	*out = NULL;
	if (!b)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (dsv_parse_gpu(gpu ? gpu : "auto", &dev)) {
		free(b);
		return dsv_errf(eb, DSV_ERR_INVALID, "--gpu '%s' must be auto, off or a device number", gpu);
	}
	if (dev == DSV_GPU_AUTO) {
		b->gpu = dsv_gpu_open(-1, why, sizeof(why));
		if (b->gpu)
			dsv_log_info("backend: cuda (%s)", dsv_gpu_name(b->gpu));
		else
			dsv_log_info("backend: cpu (%s)", why);
		snprintf(b->why, sizeof(b->why), "%s", b->gpu ? "" : why);
	} else if (dev == DSV_GPU_OFF) {
		dsv_log_info("backend: cpu (--gpu off)");
		snprintf(b->why, sizeof(b->why), "--gpu off");
	} else {
		b->gpu = dsv_gpu_open(dev, why, sizeof(why));
		if (!b->gpu) {
			free(b);
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "--gpu %d: %s", dev, why);
		}
		dsv_log_info("backend: cuda device %d (%s)", dev, dsv_gpu_name(b->gpu));
	}
	const char *emu = getenv("DSVIEW_GPU_EMULATE");
	if (dev == DSV_GPU_AUTO && !b->gpu && emu && strcmp(emu, "1") == 0) {
		b->emulate = 1;
		dsv_log_info("backend: readahead through the host build of the device code "
			     "(DSVIEW_GPU_EMULATE=1, for tests)");
	}
	*out = b;
	return 0;
}

void dsv_backend_destroy(dsv_backend *b)
{
	if (!b)
		return;
	dsv_gpu_close(b->gpu);
	free(b);
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
	st->gpu_failed = gs.failed;
	st->gpu_emulated = b->emulate;
	st->made_bytes = atomic_load(&((dsv_backend *)b)->made_bytes);
	st->made_fallbacks = atomic_load(&((dsv_backend *)b)->made_fallbacks);
}

int dsv_backend_decode(dsv_backend *b, const dsv_view *v, uint64_t g, void *out, size_t size)
{
	if (b->gpu) {
		int err = dsv_gpu_decode(b->gpu, v, g, out, size);
		if (err != DSV_ERR_UNSUPPORTED)
			return err;
	}
	return dsv_cpu_decode(v, g, out, size);
}
