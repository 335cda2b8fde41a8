/*
 * The device check's program (tests/device/run.sh; docs/gpu.md): one
 * line a row, "ok", "FAIL" or "no device", so that the script's summary
 * is these lines.
 *
 *   gpu_check probe             the device, or why none opens
 *   gpu_check compare [--full | --quick]  LZ4 chunks of every source dtype x output
 *       dtype x chunk size (256 KiB, 1 MiB, 4 MiB), plain casts and
 *       scale/offset, decoded and transformed by the device in batches
 *       (dsv_gpu_decode_xform) against the CPU (dsv_lz4_decode then
 *       dsv_xform_run), byte for byte; then damaged blocks and truncated
 *       frames, which must fail exactly where the CPU's decoder fails
 *       (and give its bytes where it does not); and one batch of 70,000
 *       small chunks, more than a launch's grid has rows. Without a
 *       device the same rows run through the emulation (gpu_emu.c): 256
 *       KiB chunks only, unless --full; --quick: 256 KiB chunks only
 *       (under compute-sanitizer).
 *   gpu_check backend MANIFEST GPU [TIER]  the backend without a mount:
 *       every chunk of every view decoded by a backend of --gpu GPU (with
 *       TIER bytes of --gpu-cache) from 16 threads at once, twice (the
 *       second pass from the tier), and every view the readahead's device
 *       path makes made in ranges, against the CPU's decode
 *       (dsv_cpu_decode) and transform.
 *   gpu_check reader MANIFEST GPU  the in-process reader (dsview/reader.h)
 *       with gpu=GPU against one with gpu=off: every view read whole in
 *       shuffled gathers of rows from 4 gather threads, byte for byte.
 *
 * Exit status: 0 when every row is ok or "no device", 1 when one failed.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "dsview/reader.h"
#include "dsview/codec.h"
#include "dsview/xform.h"
#include "gpu/gpu.h"
#include "gpu/gpu_emu.h"
#include "source/source.h"
#include "view/view.h"
#include "xform/xform_elem.h"

#define BLOCK (64u << 10)
#define PER_BATCH 3 /* chunks in one batch */

static int failures;

static void row(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void row(int ok, const char *fmt, ...)
{
	va_list ap;
	printf("%-9s ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures += !ok;
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* n bytes LZ4 compresses some: runs, repeats of earlier stretches, noise. */
static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t len = 1 + rnd() % 200, kind = rnd() % 3;
		for (size_t k = 0; k < len && i < n; k++, i++)
			p[i] = kind == 0               ? (uint8_t)len
			       : kind == 1 && i >= 977 ? p[i - 977]
						       : (uint8_t)rnd();
	}
}

/* One configuration's batch: chunks of raw bytes, encoded. */
typedef struct cfg {
	size_t raw, os, nchunks;
	uint8_t *src[PER_BATCH], *enc[PER_BATCH], *want[PER_BATCH], *got[PER_BATCH];
	size_t n[PER_BATCH];
	dsv_gpu_item items[PER_BATCH];
} cfg;

static int cfg_make(cfg *c, size_t raw, size_t es, size_t os)
{
	memset(c, 0, sizeof(*c));
	c->raw = raw / es * es;
	c->os = os;
	c->nchunks = PER_BATCH;
	for (size_t i = 0; i < c->nchunks; i++) {
		size_t cap = dsv_lz4_bound(c->raw, BLOCK);
		c->src[i] = malloc(c->raw);
		c->enc[i] = malloc(cap);
		c->want[i] = malloc(c->raw / es * os);
		c->got[i] = malloc(c->raw / es * os);
		if (!c->src[i] || !c->enc[i] || !c->want[i] || !c->got[i])
			return -1;
		fill(c->src[i], c->raw);
		int64_t n = dsv_lz4_encode(c->enc[i], cap, c->src[i], c->raw, BLOCK, 0);
		if (n < 0)
			return -1;
		c->n[i] = (size_t)n;
	}
	return 0;
}

static void cfg_free(cfg *c)
{
	for (size_t i = 0; i < c->nchunks; i++) {
		free(c->src[i]);
		free(c->enc[i]);
		free(c->want[i]);
		free(c->got[i]);
	}
}

/* The batch on the device (g) or its emulation (g NULL). */
static int run_batch(dsv_gpu *g, const dsv_xform_desc *d, cfg *c, size_t es)
{
	for (size_t i = 0; i < c->nchunks; i++) {
		memset(c->got[i], 0xA5, c->raw / es * c->os);
		c->items[i] = (dsv_gpu_item){ c->enc[i], c->n[i], c->raw, i * (c->raw / es),
					      c->got[i], -1,      -1 };
	}
	return g ? dsv_gpu_decode_xform(g, d, c->items, c->nchunks, NULL)
		 : dsv_gpu_emu_decode_xform(d, c->items, c->nchunks, NULL);
}

/* The CPU's bytes of chunk i into want. @return 0, or -1 where its
 * decoder refuses the frame. */
static int cpu_chunk(const dsv_xform *x, cfg *c, size_t i, size_t es, uint8_t *scratch)
{
	if (dsv_lz4_decode(scratch, c->raw, c->enc[i], c->n[i]) != (int64_t)c->raw)
		return -1;
	dsv_xform_run(x, c->want[i], scratch, c->raw / es, i * (c->raw / es));
	return 0;
}

/* Same bytes as the CPU, and a batch that fails exactly where the CPU
 * refuses one of its frames. */
static int same(dsv_gpu *g, const dsv_xform *x, const dsv_xform_desc *d, cfg *c, size_t es,
		uint8_t *scratch, int *refused)
{
	int cpu_refused = 0;
	for (size_t i = 0; i < c->nchunks; i++)
		cpu_refused |= cpu_chunk(x, c, i, es, scratch) != 0;
	int rc = run_batch(g, d, c, es);
	*refused = cpu_refused;
	if (cpu_refused)
		return rc == DSV_ERR_CORRUPT;
	if (rc)
		return 0;
	for (size_t i = 0; i < c->nchunks; i++)
		if (memcmp(c->got[i], c->want[i], c->raw / es * c->os))
			return 0;
	return 1;
}

static const char *dev_name(dsv_gpu *g)
{
	return g ? "device" : "emulated";
}

/* Every pair of dtypes that makes a plan, at chunk size raw. */
static void compare_size(dsv_gpu *g, size_t raw, uint8_t *scratch)
{
	size_t pairs = 0, bad = 0;
	char first_bad[128] = "";
	for (int s = 0; s < DSV_DTYPE__COUNT; s++) {
		for (int t = 0; t < DSV_DTYPE__COUNT; t++) {
			for (int scaled = 0; scaled < 2; scaled++) {
				dsv_xform_params p;
				dsv_xform *x;
				dsv_errbuf eb;
				dsv_xform_desc d;
				dsv_xform_params_init(&p);
				if (scaled) {
					p.scale = 0.5;
					p.offset = -3;
				}
				if (dsv_xform_create(&x, (dsv_dtype)s, (dsv_dtype)t, &p, &eb))
					continue;
				dsv_xform_describe(x, &d);
				size_t es = dsv_dtype_size((dsv_dtype)s),
				       os = dsv_dtype_size((dsv_dtype)t);
				cfg c;
				int refused, ok = cfg_make(&c, raw, es, os) == 0 &&
						  same(g, x, &d, &c, es, scratch, &refused) &&
						  !refused;
				pairs++;
				if (!ok && !bad++)
					snprintf(first_bad, sizeof(first_bad),
						 " (first: %s to %s%s)",
						 dsv_dtype_name((dsv_dtype)s),
						 dsv_dtype_name((dsv_dtype)t),
						 scaled ? ", scaled" : "");
				cfg_free(&c);
				dsv_xform_destroy(x);
			}
		}
	}
	row(bad == 0 && pairs > 0,
	    "compare %-8s %4zu KiB chunks: %zu plans (dtype pair, cast or scaled) x %d chunks a "
	    "batch, "
	    "%zu differ%s",
	    dev_name(g), raw >> 10, pairs, PER_BATCH, bad, first_bad);
}

/* Damaged blocks and truncated frames at chunk size raw, uint8 to float32. */
static void compare_damaged(dsv_gpu *g, size_t raw, uint8_t *scratch)
{
	dsv_xform_params p;
	dsv_xform *x;
	dsv_errbuf eb;
	dsv_xform_desc d;
	cfg c;
	size_t tries = 0, refused_n = 0, bad = 0;
	dsv_xform_params_init(&p);
	p.scale = 1.0 / 255;
	if (dsv_xform_create(&x, DSV_U8, DSV_F32, &p, &eb) || cfg_make(&c, raw, 1, 4)) {
		row(0, "damaged %s: no plan or no memory", dev_name(g));
		return;
	}
	dsv_xform_describe(x, &d);
	size_t n1 = c.n[1];
	for (int k = 0; k < 48; k++, tries++) {
		/* a byte of chunk 1 changed; every 4th try, the frame cut short */
		size_t at = 7 + rnd() % (n1 - 7);
		uint8_t keep = c.enc[1][at];
		int refused;
		if (k % 4 == 3)
			c.n[1] = at;
		else
			c.enc[1][at] ^= (uint8_t)(1 + rnd() % 255);
		bad += !same(g, x, &d, &c, 1, scratch, &refused);
		refused_n += refused;
		c.enc[1][at] = keep;
		c.n[1] = n1;
	}
	row(bad == 0 && refused_n > 0,
	    "damaged %-8s %4zu KiB chunks: %zu tries, %zu refused by "
	    "the CPU, %zu answered otherwise by the %s",
	    dev_name(g), raw >> 10, tries, refused_n, bad, dev_name(g));
	cfg_free(&c);
	dsv_xform_destroy(x);
}

/* One batch of more items than a launch's grid has rows (65,535): 70,000
 * chunks of 64 bytes, uint8 to float32. */
static void compare_many(dsv_gpu *g)
{
	enum { N = 70000, RAW = 64, CAP = 128 };
	dsv_xform_params p;
	dsv_xform *x;
	dsv_errbuf eb;
	dsv_xform_desc d;
	uint8_t *src = malloc((size_t)N * RAW), *enc = malloc((size_t)N * CAP);
	float *got = malloc((size_t)N * RAW * 4), *want = malloc((size_t)N * RAW * 4);
	dsv_gpu_item *items = calloc(N, sizeof(*items));
	int ok = 0;
	dsv_xform_params_init(&p);
	p.scale = 1.0 / 255;
	if (src && enc && got && want && items && !dsv_xform_create(&x, DSV_U8, DSV_F32, &p, &eb)) {
		dsv_xform_describe(x, &d);
		fill(src, (size_t)N * RAW);
		ok = 1;
		for (size_t i = 0; i < N && ok; i++) {
			int64_t n = dsv_lz4_encode(enc + i * CAP, CAP, src + i * RAW, RAW, RAW, 0);
			ok = n > 0;
			items[i] = (dsv_gpu_item){ enc + i * CAP, (size_t)n, RAW, i * RAW,
						   got + i * RAW, -1,        -1 };
		}
		dsv_xform_run(x, want, src, (uint64_t)N * RAW, 0);
		memset(got, 0xA5, (size_t)N * RAW * 4);
		ok = ok &&
		     (g ? dsv_gpu_decode_xform(g, &d, items, N, NULL)
			: dsv_gpu_emu_decode_xform(&d, items, N, NULL)) == 0 &&
		     !memcmp(got, want, (size_t)N * RAW * 4);
		dsv_xform_destroy(x);
	}
	row(ok,
	    "many    %-8s %d chunks of %d bytes in one batch (more than a grid's 65,535 rows): "
	    "%s",
	    dev_name(g), N, RAW, ok ? "same bytes" : "failed or differ");
	free(src);
	free(enc);
	free(got);
	free(want);
	free(items);
}

static int cmd_compare(int sizes_n)
{
	dsv_errbuf why;
	dsv_gpu *g = NULL;
	size_t sizes[] = { 256u << 10, 1u << 20, 4u << 20 };
	uint8_t *scratch = malloc(4u << 20);
	/* each buffer holds a batch of 4 MiB chunks made float64 */
	if (dsv_gpu_open(-1, (uint64_t)PER_BATCH * (4u << 20) * 8, &g, &why))
		printf("%-9s compare device: %s (the rows below are the emulation's)\n",
		       "no device", why.msg);
	if (sizes_n == 0)
		sizes_n = g ? 3 : 1;
	for (int i = 0; i < sizes_n && scratch; i++) {
		compare_size(g, sizes[i], scratch);
		compare_damaged(g, sizes[i], scratch);
	}
	compare_many(g);
	dsv_gpu_close(g);
	free(scratch);
	return failures ? 1 : 0;
}

static int cmd_probe(void)
{
	dsv_errbuf why;
	dsv_gpu *g;
	if (dsv_gpu_open(-1, 1u << 20, &g, &why)) {
		printf("%-9s probe: %s\n", "no device", why.msg);
		return 0;
	}
	row(1, "probe: CUDA device 0: %s", dsv_gpu_name(g));
	dsv_gpu_close(g);
	return 0;
}

/* The backend without a mount: chunks decoded, ranges made. */

#define THREADS 16

typedef struct bjob {
	dsv_backend *b;
	const dsv_view *v;
	uint64_t first, step;
	uint64_t chunks, bad;
} bjob;

/* Bytes of global chunk g of v in its source dtype. */
static size_t chunk_size(const dsv_view *v, uint64_t g)
{
	dsv_chunk_ref ref;
	size_t si;
	if (dsv_view_chunk_ref(v, g, &si, &ref))
		return 0;
	return (size_t)(ref.nelems * dsv_dtype_size(dsv_source_get_info(v->sources[si])->dtype));
}

static void *decode_worker(void *arg)
{
	bjob *j = arg;
	for (uint64_t g = j->first; g < j->v->nchunks; g += j->step) {
		size_t size = chunk_size(j->v, g);
		uint8_t *got = malloc(size ? size : 1), *want = malloc(size ? size : 1);
		int ok = got && want && size &&
			 dsv_backend_decode(j->b, j->v, g, got, size, DSV_READ_STREAM) == 0 &&
			 dsv_cpu_decode(j->v, g, want, size, DSV_READ_STREAM) == 0 &&
			 !memcmp(got, want, size);
		j->chunks++;
		j->bad += !ok;
		free(got);
		free(want);
	}
	return NULL;
}

/* Every chunk of v decoded from THREADS threads at once. @return the
 * chunks that differ from the CPU's or failed. */
static uint64_t decode_all(dsv_backend *b, const dsv_view *v)
{
	pthread_t th[THREADS];
	bjob jobs[THREADS];
	uint64_t bad = 0;
	for (int t = 0; t < THREADS; t++) {
		jobs[t] = (bjob){ b, v, (uint64_t)t, THREADS, 0, 0 };
		pthread_create(&th[t], NULL, decode_worker, &jobs[t]);
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		bad += jobs[t].bad;
	}
	return bad;
}

/* Output elements [e0, e0 + n) of v made on the CPU: each source chunk
 * under them decoded and transformed. @return 0 or -1. */
static int cpu_range(const dsv_view *v, uint64_t e0, uint64_t n, uint8_t *out)
{
	while (n) {
		size_t si = dsv_view_source_of(v, v->elem_base, e0);
		const dsv_source_info *in = dsv_source_get_info(v->sources[si]);
		uint64_t e = e0 - v->elem_base[si], c = e / in->chunk_elems;
		uint64_t g = v->chunk_base[si] + c, start = c * in->chunk_elems;
		size_t size = chunk_size(v, g), es = dsv_dtype_size(in->dtype);
		uint64_t m = size / es - (e - start);
		m = m < n ? m : n;
		uint8_t *raw = malloc(size ? size : 1);
		int err = !raw || dsv_cpu_decode(v, g, raw, size, DSV_READ_STREAM);
		if (!err)
			dsv_xform_run(v->xf[si], out, raw + (e - start) * es, m, e);
		free(raw);
		if (err)
			return -1;
		out += m * v->out_esize;
		e0 += m;
		n -= m;
	}
	return 0;
}

/* v's readahead ranges (8 chunks' elements, starting inside a chunk) made
 * by the backend against the CPU. *made: ranges the device path made. */
static uint64_t make_all(dsv_backend *b, const dsv_view *v, uint64_t *made)
{
	uint64_t per = dsv_source_get_info(v->sources[0])->chunk_elems, bad = 0;
	uint64_t step = 8 * per, n;
	uint8_t *got = malloc(step * v->out_esize), *want = malloc(step * v->out_esize);
	*made = 0;
	for (uint64_t e0 = per / 3; got && want && e0 < v->nelems; e0 += n) {
		n = v->nelems - e0 < step ? v->nelems - e0 : step;
		int rc = dsv_backend_make(b, v, e0, n, got);
		if (rc == 0) {
			(*made)++;
			bad += cpu_range(v, e0, n, want) || memcmp(got, want, n * v->out_esize);
		}
	}
	free(got);
	free(want);
	return bad;
}

static int cmd_backend(const char *manifest, const char *gpu, uint64_t tier)
{
	dsv_manifest *m;
	dsv_backend *b;
	dsv_errbuf eb;
	if (dsv_manifest_load(manifest, &m, &eb)) {
		row(0, "backend: %s", eb.msg);
		return 1;
	}
	if (dsv_backend_create(gpu, tier, 1ull << 30, m->views, m->nviews, &b, &eb)) {
		printf("%-9s backend --gpu %s: %s\n", "no device", gpu, eb.msg);
		dsv_manifest_free(m);
		return 0;
	}
	dsv_backend_stats st;
	dsv_backend_get_stats(b, &st);
	const char *as = st.gpu_emulated ? "emulated" : dsv_backend_name(b);
	for (size_t i = 0; i < m->nviews; i++) {
		const dsv_view *v = m->views[i];
		for (int pass = 1; pass <= 2; pass++) {
			uint64_t bad = decode_all(b, v);
			row(bad == 0,
			    "backend %s --gpu %s: view %s, pass %d: %llu chunks decoded from "
			    "%d threads, %llu differ",
			    as, gpu, v->name, pass, (unsigned long long)v->nchunks, THREADS,
			    (unsigned long long)bad);
		}
		if (dsv_backend_makes(b, v)) {
			uint64_t made, bad = make_all(b, v, &made);
			row(bad == 0 && made > 0,
			    "backend %s --gpu %s: view %s: %llu readahead ranges "
			    "made on the device path, %llu differ",
			    as, gpu, v->name, (unsigned long long)made, (unsigned long long)bad);
		}
	}
	dsv_backend_get_stats(b, &st);
	row(!st.gpu_failed,
	    "backend %s --gpu %s: device '%s', %llu chunks on it, %llu left to the "
	    "CPU (busy slots), %llu fallbacks, failed %d, %llu bytes made, tier: %llu hits, %llu "
	    "chunks held",
	    as, gpu, st.device, (unsigned long long)st.gpu_chunks, (unsigned long long)st.gpu_busy,
	    (unsigned long long)st.gpu_fallbacks, st.gpu_failed, (unsigned long long)st.made_bytes,
	    (unsigned long long)st.tier_hits, (unsigned long long)st.tier_chunks);
	dsv_backend_destroy(b);
	dsv_manifest_free(m);
	return failures ? 1 : 0;
}

/* Every row of view i of a and b, in shuffled gathers of 64: rows that
 * differ, or UINT64_MAX when a read failed (printed). */
static uint64_t reader_diff(dsv_reader *a, dsv_reader *b, size_t i)
{
	dsv_reader_view v;
	dsv_errbuf eb;
	uint64_t bad = 0;
	dsv_reader_view_get(a, i, &v);
	int64_t *rows = malloc(v.rows * sizeof(*rows));
	uint8_t *x = malloc(64 * v.row_bytes), *y = malloc(64 * v.row_bytes);
	for (uint64_t r = 0; r < v.rows; r++)
		rows[r] = (int64_t)r;
	for (uint64_t r = v.rows; r > 1; r--) {
		uint64_t k = rnd() % r, t = (uint64_t)rows[r - 1];
		rows[r - 1] = rows[k];
		rows[k] = (int64_t)t;
	}
	for (uint64_t r = 0; r < v.rows && bad != UINT64_MAX; r += 64) {
		size_t n = v.rows - r < 64 ? (size_t)(v.rows - r) : 64;
		if (dsv_reader_read_rows(a, i, rows + r, n, x, &eb) ||
		    dsv_reader_read_rows(b, i, rows + r, n, y, &eb)) {
			printf("  %s\n", eb.msg);
			bad = UINT64_MAX;
			break;
		}
		for (size_t k = 0; k < n; k++)
			bad += memcmp(x + k * v.row_bytes, y + k * v.row_bytes, v.row_bytes) != 0;
	}
	free(rows);
	free(x);
	free(y);
	return bad;
}

static int cmd_reader(const char *manifest, const char *gpu)
{
	char opts[64], stats[16384];
	dsv_reader *dev, *cpu;
	dsv_errbuf eb;
	snprintf(opts, sizeof(opts), "gpu=%s,threads=4", gpu);
	if (dsv_reader_open(manifest, opts, &dev, &eb) ||
	    dsv_reader_open(manifest, "gpu=off,threads=4", &cpu, &eb)) {
		row(0, "reader: %s", eb.msg);
		return 1;
	}
	dsv_reader_stats(dev, stats, sizeof(stats));
	const char *backend = strstr(stats, "\"gpu_emulated\":true")  ? "emulated"
			      : strstr(stats, "\"backend\":\"cuda\"") ? "cuda"
								      : "cpu";
	for (size_t i = 0; i < dsv_reader_nviews(dev); i++) {
		dsv_reader_view v;
		dsv_reader_view_get(dev, i, &v);
		uint64_t bad = reader_diff(dev, cpu, i);
		row(bad == 0, "reader gpu=%s (%s): view %s, %llu rows in shuffled gathers, %s", gpu,
		    backend, v.name, (unsigned long long)v.rows,
		    bad == UINT64_MAX ? "a read failed"
		    : bad             ? "rows differ from gpu=off"
				      : "same bytes");
	}
	dsv_reader_stats(dev, stats, sizeof(stats));
	const char *chunks = strstr(stats, "\"gpu_chunks\":");
	printf("%-9s reader gpu=%s: backend %s, %.*s\n", "ok", gpu, backend,
	       chunks ? (int)strcspn(chunks, ",}") : 0, chunks ? chunks : "");
	dsv_reader_close(dev);
	dsv_reader_close(cpu);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "probe"))
		return cmd_probe();
	if (argc >= 2 && !strcmp(argv[1], "compare"))
		return cmd_compare(argc < 3 ? 0 : !strcmp(argv[2], "--full") ? 3 : 1);
	if (argc >= 4 && !strcmp(argv[1], "backend"))
		return cmd_backend(argv[2], argv[3], argc >= 5 ? strtoull(argv[4], NULL, 0) : 0);
	if (argc >= 4 && !strcmp(argv[1], "reader"))
		return cmd_reader(argv[2], argv[3]);
	fprintf(stderr, "usage: gpu_check probe | compare [--full | --quick] | backend MANIFEST "
			"GPU [TIER] | reader MANIFEST GPU\n");
	return 2;
}
