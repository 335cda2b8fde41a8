/* Reading views: any byte range of a view (plain sources pread on demand,
 * LZ4 stores through the cache) equals a reference computed here element by
 * element in float64 and rounded once; cut elements at both ends; ranges
 * across chunk and source boundaries; errors for ranges past the end and
 * sources truncated after opening; the counters a read and a hint leave
 * (hinted bytes apart from the readahead's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_i.h" /* white-box: the engine's cache and counters */
#include "dsview/pack.h"
#include "dsview/view.h"
#include "view/view_i.h" /* white-box: the view's layout */

#define ROWS_A 301
#define ROWS_B 77
#define H 5
#define W 7
#define ROW (H * W * 3)
#define CHW_ROW (3 * 150 * 150)

static char dir[] = "/tmp/dsv-test-read-XXXXXX";
static const double mean[3] = { 0.485, 0.456, 0.406 }, stdv[3] = { 0.229, 0.224, 0.225 };

typedef struct fixture {
	dsv_manifest *m; /* the engine's */
	dsv_engine *e;
	uint8_t *x; /* every source row, concatenated as the views see them */
	/* chunks the engine's cache had filled, and of them for reads that
	 * stream (DSV_READ_STREAM), when a test last looked (mark) */
	uint64_t fills0, stream_fills0;
} fixture;

static char *tpath(const char *name)
{
	static char p[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

static void write_npy_shape(const char *name, const uint8_t *data, uint64_t rows, uint64_t row,
			    const char *shape)
{
	char head[128];
	int n = snprintf(head, sizeof(head),
			 "{'descr': '|u1', 'fortran_order': False, 'shape': (%llu, %s), }",
			 (unsigned long long)rows, shape);
	size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
	FILE *f = fopen(tpath(name), "wb");
	assert_non_null(f);
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	uint16_t hl = (uint16_t)(n + pad + 1);
	fputc(hl & 0xff, f);
	fputc(hl >> 8, f);
	fwrite(head, 1, (size_t)n, f);
	for (size_t i = 0; i < pad; i++)
		fputc(' ', f);
	fputc('\n', f);
	assert_int_equal(fwrite(data, 1, rows * row, f), rows * row);
	fclose(f);
}

static void write_npy(const char *name, const uint8_t *data, uint64_t rows)
{
	char shape[64];
	snprintf(shape, sizeof(shape), "%d, %d, 3", H, W);
	write_npy_shape(name, data, rows, ROW, shape);
}

/* The engine's own read of view v's bytes, asked as flags (DSV_READ_*),
 * with what the read did. */
static int rd(fixture *fx, const dsv_view *v, uint64_t off, size_t len, void *dst, unsigned flags,
	      dsv_read_info *info)
{
	dsv_read_req req = { .off = off, .len = len, .flags = flags };
	size_t vi = 0;
	while (fx->m->views[vi] != v)
		vi++;
	return dsv_engine_make(fx->e, DSV_ENGINE_FILE(vi, 0), &req, dst, info);
}

/* Chunks the engine decoded (cache fills of the backend's, not the read
 * path's own tiles) since mark(). */
static uint64_t fills_now(fixture *fx)
{
	dsv_cache_stats cs;
	dsv_cache_get_stats(fx->e->cache, &cs);
	return cs.fills - fx->e->tiles_made;
}

static void mark(fixture *fx)
{
	fx->fills0 = fills_now(fx);
	fx->stream_fills0 = fx->e->stream_fills;
}

static uint64_t fills(fixture *fx)
{
	return fills_now(fx) - fx->fills0;
}

static uint64_t stream_fills(fixture *fx)
{
	return fx->e->stream_fills - fx->stream_fills0;
}

static int setup(void **state)
{
	fixture *fx = calloc(1, sizeof(*fx));
	dsv_errbuf eb;
	if (!fx || !mkdtemp(dir))
		return -1;
	fx->x = malloc(4 * CHW_ROW); /* more than the ROWS_A + ROWS_B rows */
	for (size_t i = 0; i < 4 * CHW_ROW; i++)
		fx->x[i] = (uint8_t)((i * 7 + i / 97) % 256);
	write_npy("a.npy", fx->x, ROWS_A);
	write_npy("b.npy", fx->x + ROWS_A * ROW, ROWS_B);

	/* the same rows as a store of small LZ4 chunks (8 rows each) */
	write_npy("ab.npy", fx->x, ROWS_A + ROWS_B);
	/* CHW rows of 67,500 elements: dsview splits them into chunks that end
	 * inside a channel plane, so a piece's channel depends on where its
	 * chunk starts */
	write_npy_shape("chw.npy", fx->x, 4, CHW_ROW, "3, 150, 150");
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_pack_opts_init(&o);
	o.input = tpath("ab.npy");
	o.output = tpath("ab.h5");
	o.dataset = "x";
	o.chunk_bytes = 8 * ROW;
	o.threads = 1;
	if (dsv_pack(&o, &res, &eb) != 0 || res.chunks < 40) {
		fprintf(stderr, "pack: %s\n", eb.msg);
		return -1;
	}
	/* and as a store with a block table: chunks of 96 rows, blocks of 39;
	 * twice, one to damage */
	o.chunk_bytes = 96 * ROW;
	o.block_bytes = DSV_PACK_MIN_BLOCK;
	for (int k = 0; k < 2; k++) {
		o.output = tpath(k ? "abtbad.h5" : "abt.h5");
		if (dsv_pack(&o, &res, &eb) != 0 || res.block_bytes != 39 * ROW) {
			fprintf(stderr, "pack: %s\n", eb.msg);
			return -1;
		}
	}

	FILE *f = fopen(tpath("m.ini"), "w");
	fprintf(f,
		"[f32]\nsource = a.npy\nsource = b.npy\nscale = %.17g\n"
		"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n"
		"[f16]\nsource = a.npy\nsource = b.npy\ndtype = float16\nscale = %.17g\n"
		"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n"
		"[lz4]\nsource = ab.h5:/x\ndtype = bfloat16\nscale = %.17g\n"
		"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n"
		"[chw]\nsource = chw.npy\nscale = %.17g\nchannel_axis = 1\n"
		"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n"
		"[blk]\nsource = abt.h5:/x\nscale = %.17g\n"
		"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n\n"
		"[bad]\nsource = abtbad.h5:/x\nscale = %.17g\n"
		"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n",
		1 / 255.0, 1 / 255.0, 1 / 255.0, 1 / 255.0, 1 / 255.0, 1 / 255.0);
	fclose(f);
	if (dsv_manifest_load(tpath("m.ini"), &fx->m, &eb) != 0) {
		fprintf(stderr, "manifest: %s\n", eb.msg);
		return -1;
	}
	dsv_engine_opts eo = { .cache_size = 1 << 20, .gpu = "off" };
	if (dsv_engine_new(fx->m, &eo, &fx->e, &eb) != 0 || dsv_engine_start(fx->e, NULL, &eb) != 0)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;
	char cmd[300];
	if (!fx)
		return -1;
	dsv_engine_free(fx->e); /* and its manifest */
	free(fx->x);
	free(fx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* The whole output of view vi, element by element from the source bytes. */
static uint8_t *reference(const fixture *fx, uint32_t vi)
{
	const dsv_view *v = fx->m->views[vi];
	uint8_t *out = malloc(v->nbytes);
	for (uint64_t e = 0; e < v->nelems; e++) {
		int c = (int)(v->decl->channel_axis == 1 ? e / (150 * 150) % 3 : e % 3);
		float y = (float)((fx->x[e] * (1 / 255.0) - mean[c]) / stdv[c]);
		if (v->dtype == DSV_F32) {
			memcpy(out + e * 4, &y, 4);
		} else {
			uint16_t h = v->dtype == DSV_F16 ? dsv_f32_to_f16(y) : dsv_f32_to_bf16(y);
			memcpy(out + e * 2, &h, 2);
		}
	}
	return out;
}

static void check_range(fixture *fx, uint32_t vi, const uint8_t *ref, uint64_t off, size_t len)
{
	const dsv_view *v = fx->m->views[vi];
	dsv_read_info info;
	if (off > v->nbytes)
		return;
	if (len > v->nbytes - off)
		len = (size_t)(v->nbytes - off);
	uint8_t *got = malloc(len + 1);
	got[len] = 0xa5; /* guard */
	assert_int_equal(rd(fx, v, off, len, got, 0, &info), 0);
	if (memcmp(got, ref + off, len) != 0) {
		size_t i = 0;
		while (got[i] == ref[off + i])
			i++;
		fail_msg("view %s: read(%llu, %zu) differs at byte %zu", v->name,
			 (unsigned long long)off, len, i);
	}
	assert_int_equal(got[len], 0xa5);
	free(got);
}

static void test_every_range_matches(void **state)
{
	fixture *fx = *state;
	for (uint32_t vi = 0; vi < fx->m->nviews; vi++) {
		const dsv_view *v = fx->m->views[vi];
		if (!strcmp(v->name, "bad"))
			continue; /* blk's copy, damaged (test_bad_block_fails_its_chunk) */
		uint8_t *ref = reference(fx, vi);
		uint64_t chunk = dsv_source_get_info(v->sources[0])->chunk_elems * v->out_esize;
		uint64_t marks[] = { 0,
				     chunk,
				     2 * chunk,
				     5 * chunk,
				     (uint64_t)ROWS_A * ROW * v->out_esize,
				     v->nbytes };
		for (size_t k = 0; k < sizeof(marks) / sizeof(*marks); k++)
			for (int d = -9; d <= 9; d++) {
				if ((int64_t)marks[k] + d < 0)
					continue;
				static const size_t lens[] = { 1, 2, 3, 5, 4096, 12345 };
				for (size_t l = 0; l < sizeof(lens) / sizeof(*lens); l++)
					check_range(fx, vi, ref, marks[k] + (uint64_t)d, lens[l]);
				check_range(fx, vi, ref, marks[k] + (uint64_t)d, (size_t)chunk + 3);
			}
		srand(11);
		for (int i = 0; i < 300; i++)
			check_range(fx, vi, ref, (uint64_t)rand() % v->nbytes,
				    (size_t)rand() % (3 * ROW * v->out_esize) + 1);
		check_range(fx, vi, ref, 0, (size_t)v->nbytes); /* the whole view at once */
		free(ref);
	}
}

static void test_plain_pieces_bypass_cache(void **state)
{
	fixture *fx = *state;
	const dsv_view *v = fx->m->views[0];
	dsv_cache_stats s0, s1;
	dsv_read_info info;
	size_t len = 3 * ROW * 4 + 2;
	uint8_t *buf = malloc(len);
	dsv_cache_get_stats(fx->e->cache, &s0);
	/* from 2 bytes into row 299 across the a.npy/b.npy boundary */
	assert_int_equal(rd(fx, v, 299 * ROW * 4 + 2, len, buf, 0, &info), 0);
	dsv_cache_get_stats(fx->e->cache, &s1);
	assert_int_equal(s1.misses + s1.hits, s0.misses + s0.hits);
	assert_int_equal(info.first, 0);
	assert_int_equal(info.last, v->nchunks - 1); /* a.npy's only chunk, then b.npy's */
	/* the cut elements at both ends are read whole */
	assert_int_equal(info.plain_bytes, len + 2);
	free(buf);
}

static void test_cached_pieces_report_chunks(void **state)
{
	fixture *fx = *state;
	const dsv_view *v = fx->m->views[2];
	dsv_read_info info;
	uint64_t rows_per_chunk = dsv_source_get_info(v->sources[0])->chunk_elems / ROW;
	uint64_t row_bytes = ROW * v->out_esize;
	size_t len = (size_t)(2 * rows_per_chunk * row_bytes);
	uint8_t *buf = malloc(len);
	/* from the middle of chunk 3 to the middle of chunk 5 */
	uint64_t off = (3 * rows_per_chunk + rows_per_chunk / 2) * row_bytes;
	assert_int_equal(rd(fx, v, off, len, buf, 0, &info), 0);
	assert_int_equal(info.first, 3);
	assert_int_equal(info.last, 5);
	assert_int_equal(info.plain_bytes, 0);
	free(buf);
}

/* A row of a chunk of a store with a block table: from its own blocks
 * (no cache fill), or, for a reader that reads on (DSV_READ_STREAM), from
 * the whole chunk, filled once into the cache and told to the backend.
 * Runs first, while no chunk of the store is cached. */
static void test_stream_reads_whole_chunks(void **state)
{
	fixture *fx = *state;
	const dsv_view *v = fx->m->views[4];
	uint64_t row_bytes = ROW * v->out_esize;
	uint8_t *ref = reference(fx, 4), *buf = malloc(row_bytes);
	dsv_read_info info;

	assert_string_equal(v->name, "blk");
	assert_true(dsv_source_get_info(v->sources[0])->lz4_table);
	mark(fx);
	assert_int_equal(rd(fx, v, 100 * row_bytes, row_bytes, buf, 0, &info), 0);
	assert_memory_equal(buf, ref + 100 * row_bytes, row_bytes);
	assert_int_equal(info.lz4_bytes, 39 * row_bytes); /* the one block that holds it */
	assert_int_equal(fills(fx), 0);

	assert_int_equal(rd(fx, v, 200 * row_bytes, row_bytes, buf, DSV_READ_STREAM, &info), 0);
	assert_memory_equal(buf, ref + 200 * row_bytes, row_bytes);
	assert_int_equal(info.lz4_bytes, 0);
	assert_int_equal(fills(fx), 1);
	assert_int_equal(stream_fills(fx), 1);
	free(buf);
	free(ref);
}

/* A piece of a chunk from its blocks, each transformed as it is decoded:
 * from inside a row of the first block (39 rows) across the second to
 * inside a row of the last, short one (18 rows of chunk 0's 96), cut
 * elements at both ends; nothing is filled into the cache. */
static void test_blocks_piecewise(void **state)
{
	fixture *fx = *state;
	const dsv_view *v = fx->m->views[4];
	uint64_t oes = v->out_esize, off = (20 * ROW + 7) * oes + 1,
		 end = (90 * ROW + 11) * oes + 3;
	uint8_t *ref = reference(fx, 4), *buf = malloc(end - off);
	dsv_read_info info;

	mark(fx);
	memset(buf, 0, end - off);
	assert_int_equal(rd(fx, v, off, end - off, buf, 0, &info), 0);
	assert_memory_equal(buf, ref + off, end - off);
	/* the three blocks, then the first and the last again for the cut
	 * elements at the ends */
	assert_int_equal(info.lz4_bytes, (96 + 39 + 18) * ROW * oes);
	assert_int_equal(fills(fx), 0);
	free(buf);
	free(ref);
}

/* A block whose stored bytes were damaged after the view opened: a piece
 * that needs it fails (its checksum in the table, then the chunk's own
 * Fletcher32), and so does any piece the readahead reads, which takes
 * the chunk whole; the chunk's other blocks and the other
 * chunks read as before. */
static void test_bad_block_fails_its_chunk(void **state)
{
	fixture *fx = *state;
	const dsv_view *v = fx->m->views[5];
	uint64_t row_bytes = ROW * v->out_esize;
	uint8_t *ref = reference(fx, 5), *buf = malloc(96 * row_bytes), b[4];
	dsv_read_info info;
	dsv_chunk_ref r;

	assert_string_equal(v->name, "bad");
	/* chunk 1: the frame's 12-byte header, block 0, then block 1's */
	assert_int_equal(dsv_source_chunk(v->sources[0], 1, &r), 0);
	FILE *f = fopen(tpath("abtbad.h5"), "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, (long)r.offset + 12, SEEK_SET), 0);
	assert_int_equal(fread(b, 1, 4, f), 4);
	uint32_t s0 = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	assert_int_equal(fseek(f, (long)(r.offset + 12 + 4 + s0 + 4 + 20), SEEK_SET), 0);
	int c = fgetc(f);
	assert_int_equal(fseek(f, -1, SEEK_CUR), 0);
	fputc(c ^ 0x5a, f);
	fclose(f);

	/* rows 135-173 are chunk 1's block 1 */
	assert_int_equal(rd(fx, v, 140 * row_bytes, row_bytes, buf, 0, &info), DSV_ERR_CHECKSUM);
	assert_int_equal(rd(fx, v, 96 * row_bytes, 96 * row_bytes, buf, 0, &info),
			 DSV_ERR_CHECKSUM);
	/* the readahead (a stream) decodes the chunk whole: all of it fails */
	assert_int_equal(rd(fx, v, 100 * row_bytes, row_bytes, buf, DSV_READ_STREAM, &info),
			 DSV_ERR_CHECKSUM);
	/* its blocks 0 and 2, and chunks 0 and 2 whole */
	static const uint64_t rows[][2] = { { 96, 39 }, { 174, 18 }, { 0, 96 }, { 192, 96 } };
	for (size_t k = 0; k < 4; k++) {
		uint64_t o = rows[k][0] * row_bytes, n = rows[k][1] * row_bytes;
		assert_int_equal(rd(fx, v, o, n, buf, 0, &info), 0);
		assert_memory_equal(buf, ref + o, n);
	}
	free(buf);
	free(ref);
}

static void test_chunk_range(void **state)
{
	fixture *fx = *state;
	for (uint32_t vi = 0; vi < fx->m->nviews; vi++) {
		const dsv_view *v = fx->m->views[vi];
		uint64_t next = 0, off, len;
		for (uint64_t g = 0; g < v->nsegs; g++) {
			assert_int_equal(dsv_view_seg_range(v, g, &off, &len), 0);
			assert_int_equal(off, next); /* the chunks tile the view */
			assert_true(len > 0);
			next = off + len;
		}
		assert_int_equal(next, v->nbytes);
		assert_int_equal(dsv_view_seg_range(v, v->nsegs, &off, &len), DSV_ERR_INVALID);
	}
}

static void test_range_past_end(void **state)
{
	fixture *fx = *state;
	const dsv_view *v = fx->m->views[0];
	dsv_read_info info;
	uint8_t buf[8];
	assert_int_equal(rd(fx, v, v->nbytes - 4, 8, buf, 0, &info), DSV_ERR_INVALID);
	assert_int_equal(rd(fx, v, UINT64_MAX - 2, 8, buf, 0, &info), DSV_ERR_INVALID);
	assert_int_equal(rd(fx, v, v->nbytes, 0, buf, 0, &info), 0);
}

/* Runs last: b.npy loses its last rows after the views were opened. */
static void test_truncated_source(void **state)
{
	fixture *fx = *state;
	const dsv_view *v = fx->m->views[0];
	dsv_read_info info;
	uint8_t *ref = reference(fx, 0), buf[4096];
	off_t size;
	FILE *f = fopen(tpath("b.npy"), "rb");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	assert_int_equal(truncate(tpath("b.npy"), size - 10 * ROW), 0);
	assert_int_equal(rd(fx, v, v->nbytes - sizeof(buf), sizeof(buf), buf, 0, &info),
			 DSV_ERR_TRUNCATED);
	/* the rows still there read as before */
	check_range(fx, 0, ref, (uint64_t)ROWS_A * ROW * 4 - 100, 4096);
	free(ref);
}

/* The counters: members in the table's order, the engine's own counted
 * as the reads happened. */
static void test_stats_members(void **state)
{
	fixture *fx = *state;
	uint8_t buf[1000];
	json_t *before = json_object(), *after = json_object();
	assert_int_equal(dsv_engine_stats_add(fx->e, before), 0);
	assert_int_equal(dsv_engine_read(fx->e, DSV_ENGINE_FILE(0, 0), 0, sizeof(buf), buf), 0);
	assert_int_equal(dsv_engine_stats_add(fx->e, after), 0);
	assert_string_equal(json_object_iter_key(json_object_iter(after)), "backend");
	assert_int_equal(json_object_size(after), json_object_size(before));
	assert_int_equal(json_integer_value(json_object_get(after, "bytes_served")) -
				 json_integer_value(json_object_get(before, "bytes_served")),
			 sizeof(buf));
	assert_true(json_is_false(json_object_get(after, "gpu_failed")));
	assert_string_equal(json_string_value(json_object_get(after, "backend")), "cpu");
	assert_int_equal(json_array_size(json_object_get(after, "read_make_us")), DSV_LAT_BUCKETS);
	assert_int_equal(json_integer_value(json_object_get(after, "bytes_hinted")), 0);
	json_decref(before);
	json_decref(after);
}

/* A sink that counts what it is given. */
static int count_store(void *ctx, uint32_t file, uint64_t off, const void *buf, size_t len)
{
	(void)file, (void)off, (void)buf;
	atomic_fetch_add((_Atomic uint64_t *)ctx, len);
	return 0;
}

static int no_drop(void *ctx, uint32_t file, uint64_t off, uint64_t len)
{
	(void)ctx, (void)file, (void)off, (void)len;
	return 0;
}

static json_int_t stat_of(dsv_engine *e, const char *name)
{
	json_t *o = json_object();
	assert_int_equal(dsv_engine_stats_add(e, o), 0);
	json_int_t v = json_integer_value(json_object_get(o, name));
	json_decref(o);
	return v;
}

/* Hinted rows go to the sink counted as hinted bytes, not as the
 * readahead's. */
static void test_hinted_bytes_counted_apart(void **state)
{
	(void)state;
	static _Atomic uint64_t stored;
	dsv_engine_sink sink = { count_store, no_drop, (void *)&stored, 1 << 20, 0 };
	dsv_engine_opts eo = { .cache_size = 1 << 20, .gpu = "off" };
	const uint64_t rows[] = { 3, 50, 200 };
	dsv_manifest *m;
	dsv_engine *e;
	dsv_errbuf eb;
	assert_int_equal(dsv_manifest_load(tpath("m.ini"), &m, &eb), 0);
	assert_int_equal(dsv_engine_new(m, &eo, &e, &eb), 0);
	assert_int_equal(dsv_engine_start(e, &sink, &eb), 0);
	assert_int_equal(dsv_engine_hint(e, DSV_ENGINE_FILE(0, 0), rows, 3), 0);
	for (int i = 0; i < 1000 && stat_of(e, "hints_stored") < 3; i++)
		usleep(10000);
	assert_int_equal(stat_of(e, "hints_stored"), 3);
	assert_int_equal(stat_of(e, "bytes_hinted"), (json_int_t)atomic_load(&stored));
	assert_true(atomic_load(&stored) >= 3 * ROW * 4);
	assert_int_equal(stat_of(e, "bytes_readahead"), 0);
	dsv_engine_free(e);
}

/* An engine opened as a mount opens its SOURCE: a .npy as a zero-config
 * view of the dtype asked for, its bytes those of the view. */
static void test_engine_open(void **state)
{
	fixture *fx = *state;
	dsv_engine_opts eo = { .cache_size = 1 << 20, .gpu = "off" };
	float got[ROW];
	dsv_engine *e;
	dsv_errbuf eb;
	assert_int_equal(dsv_engine_open(tpath("a.npy"), DSV_F32, 0, &eo, &e, &eb), 0);
	assert_int_equal(dsv_engine_start(e, NULL, &eb), 0);
	assert_int_equal(dsv_engine_nviews(e), 1);
	assert_string_equal(dsv_engine_view_name(e, 0), "a");
	assert_int_equal(dsv_engine_file_size(e, DSV_ENGINE_FILE(0, 0)),
			 (uint64_t)ROWS_A * ROW * 4);
	assert_int_equal(dsv_engine_read(e, DSV_ENGINE_FILE(0, 0), 7 * ROW * 4, sizeof(got), got),
			 0);
	for (size_t i = 0; i < ROW; i++)
		assert_true(got[i] == (float)fx->x[7 * ROW + i]);
	dsv_engine_free(e);
	/* what cannot be opened says why, and leaves nothing */
	e = (dsv_engine *)1;
	assert_int_equal(dsv_engine_open(tpath("none.npy"), DSV_F32, 0, &eo, &e, &eb),
			 DSV_ERR_NOTFOUND);
	assert_null(e);
	assert_non_null(strstr(eb.msg, "none.npy"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_reads_whole_chunks),
		cmocka_unit_test(test_blocks_piecewise),
		cmocka_unit_test(test_bad_block_fails_its_chunk),
		cmocka_unit_test(test_every_range_matches),
		cmocka_unit_test(test_plain_pieces_bypass_cache),
		cmocka_unit_test(test_cached_pieces_report_chunks),
		cmocka_unit_test(test_chunk_range),
		cmocka_unit_test(test_range_past_end),
		cmocka_unit_test(test_stats_members),
		cmocka_unit_test(test_hinted_bytes_counted_apart),
		cmocka_unit_test(test_truncated_source),
		cmocka_unit_test(test_engine_open),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
