/*
 * Arrow IPC files as sources: each top-level column is a dataset
 * ("cache-x.arrow:input_ids"; a spec naming none opens input_ids where
 * the file has it). A list<intN> or large_list<intN> column (Hugging
 * Face datasets' input_ids) is served as its flat values, the token
 * stream: one run per record batch, from the batch's first row's offset
 * to its last row's end, read where it lies (source/runs.c), or a
 * compressed batch's buffer (LZ4_FRAME, ZSTD) decoded whole when read. A
 * primitive integer or float column is a 1-D array; a fixed_size_list
 * one of rows. A batch with null entries in the column is refused, as
 * is a Hugging Face indices file (the row order of a shuffle or select
 * over another cache file, not data).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/bytes.h"
#include "common/str.h"
#include "dsview/codec.h"
#include "formats/arrow/arrow.h"
#include "formats/arrow/ipc.h"
#include "source/source_i.h"

/* why an indices file is not served */
#define INDICES_WHY                                                                          \
	"a Hugging Face indices file (the row order a shuffle or select keeps over another " \
	"cache file), not data: serve the data file, or flatten_indices() and save_to_disk()"
/* a compressed buffer decoded whole at a read: at most this */
#define ARROW_MAX_RAW (1ull << 30)

static int read_src(void *arg, void *buf, size_t n, uint64_t off)
{
	return dsv_source_pread(arg, buf, n, off);
}

typedef struct opened {
	dsv_source *s;
	const char *file, *column;
	dsv_arrow_file a;
	const dsv_arrow_col *col;
	dsv_errbuf *eb;
} opened;

static int bad(const opened *o, int err, size_t b, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(const opened *o, int err, size_t b, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return dsv_errf_at(o->eb, err, o->file, o->column, "record batch %zu: %s", b, msg);
}

/* Buffer k of batch b as a run: plain, or in a compressed batch an int64
 * decoded length and its frame (-1: the bytes follow as they are). */
static int buffer_run(const opened *o, size_t bi, int k, dsv_run *r)
{
	const dsv_arrow_batch *b = &o->a.batches[bi];
	uint8_t len[8];
	r->file = NULL; /* the source's own file */
	r->off = b->off[k];
	r->codec = DSV_RUN_PLAIN;
	r->raw = b->size[k];
	if (b->codec < 0 || b->size[k] == 0)
		return 0;
	if (b->size[k] < 8 || dsv_source_pread(o->s, len, 8, b->off[k]))
		return bad(o, DSV_ERR_FORMAT, bi, "compressed buffer %d has no length", k);
	int64_t raw = (int64_t)dsv_load_le64(len);
	r->off += 8;
	r->raw = b->size[k] - 8;
	if (raw == -1)
		return 0;
	if (raw < 0 || (uint64_t)raw > ARROW_MAX_RAW)
		return bad(o, DSV_ERR_FORMAT, bi, "compressed buffer %d: decoded length %lld", k,
			   (long long)raw);
	r->codec = b->codec == 0 ? DSV_RUN_LZ4F : DSV_RUN_ZSTD;
	r->stored = b->size[k] - 8;
	r->raw = (uint64_t)raw;
	return 0;
}

/* Offsets i and j (widths w) of batch bi's offsets buffer (run r). */
static int list_bounds(const opened *o, size_t bi, const dsv_run *r, int w, uint64_t n,
		       int64_t *first, int64_t *last)
{
	uint8_t *buf = NULL, v[16];
	int err = 0;
	if (r->raw < (n + 1) * (uint64_t)w)
		return bad(o, DSV_ERR_FORMAT, bi, "offsets buffer of %llu bytes for %llu rows",
			   (unsigned long long)r->raw, (unsigned long long)n);
	if (r->codec == DSV_RUN_PLAIN) {
		if (dsv_source_pread(o->s, v, (size_t)w, r->off) ||
		    dsv_source_pread(o->s, v + 8, (size_t)w, r->off + n * (uint64_t)w))
			return bad(o, DSV_ERR_TRUNCATED, bi, "cannot read its offsets");
	} else {
		uint8_t *in = malloc((size_t)r->stored);
		buf = malloc((size_t)r->raw ? (size_t)r->raw : 1);
		int64_t got = -1;
		if (in && buf && !dsv_source_pread(o->s, in, (size_t)r->stored, r->off))
			got = r->codec == DSV_RUN_LZ4F
				      ? dsv_lz4f_decode(buf, (size_t)r->raw, in, (size_t)r->stored)
				      : dsv_zstd_decode(buf, (size_t)r->raw, in, (size_t)r->stored);
		free(in);
		if (got < 0 || (uint64_t)got != r->raw)
			err = bad(o, DSV_ERR_CORRUPT, bi, "its offsets buffer does not decode");
		else {
			memcpy(v, buf, (size_t)w);
			memcpy(v + 8, buf + n * (uint64_t)w, (size_t)w);
		}
		free(buf);
		if (err)
			return err;
	}
	*first = w == 4 ? (int32_t)dsv_load_le32(v) : (int64_t)dsv_load_le64(v);
	*last = w == 4 ? (int32_t)dsv_load_le32(v + 8) : (int64_t)dsv_load_le64(v + 8);
	return 0;
}

/* Batch bi's run of the column's elements. */
static int batch_run(const opened *o, size_t bi, dsv_run *r)
{
	const dsv_arrow_batch *b = &o->a.batches[bi];
	const dsv_arrow_col *c = o->col;
	size_t es = dsv_dtype_size(c->dtype);
	int vk = c->type == ARROW_LIST || c->type == ARROW_LARGE_LIST ? 3
		 : c->type == ARROW_FIXED_LIST                        ? 2
								      : 1;
	uint64_t first = 0, count = (uint64_t)b->length;
	int err;

	if (b->len[0] != b->length)
		return bad(o, DSV_ERR_FORMAT, bi, "the column has %lld rows, the batch %lld",
			   (long long)b->len[0], (long long)b->length);
	if (b->nulls[0] || (vk > 1 && b->nulls[1]))
		return bad(o, DSV_ERR_UNSUPPORTED, bi,
			   "%lld null entries in the column (dsview serves columns without "
			   "nulls)",
			   (long long)(b->nulls[0] ? b->nulls[0] : b->nulls[1]));
	if (vk == 3) {
		dsv_run offs;
		int64_t lo = 0, hi = 0;
		int w = c->type == ARROW_LIST ? 4 : 8;
		if ((err = buffer_run(o, bi, 1, &offs)) ||
		    (err = list_bounds(o, bi, &offs, w, (uint64_t)b->length, &lo, &hi)))
			return err;
		if (lo < 0 || hi < lo || hi > b->len[1])
			return bad(o, DSV_ERR_FORMAT, bi,
				   "offsets run from %lld to %lld over %lld values", (long long)lo,
				   (long long)hi, (long long)b->len[1]);
		first = (uint64_t)lo;
		count = (uint64_t)(hi - lo);
	} else if (vk == 2) {
		if ((uint64_t)b->len[1] / (uint64_t)c->list_size != (uint64_t)b->length)
			return bad(o, DSV_ERR_FORMAT, bi, "%lld values for %lld rows of %lld",
				   (long long)b->len[1], (long long)b->length,
				   (long long)c->list_size);
		count = (uint64_t)b->length * (uint64_t)c->list_size;
	}
	if ((err = buffer_run(o, bi, vk, r)))
		return err;
	if (r->raw / es < first + count)
		return bad(o, DSV_ERR_FORMAT, bi,
			   "values buffer of %llu bytes holds fewer than "
			   "%llu %s",
			   (unsigned long long)r->raw, (unsigned long long)(first + count),
			   dsv_dtype_name(c->dtype));
	r->count = count;
	if (r->codec)
		r->skip = first * es;
	else
		r->off += first * es;
	return 0;
}

/* A Hugging Face indices file: one uint64 column "indices". */
static int is_indices(const dsv_arrow_file *a)
{
	return a->ncols == 1 && !strcmp(a->cols[0].name, "indices") &&
	       a->cols[0].type == ARROW_INT && a->cols[0].dtype == DSV_U64;
}

static const char *type_name(const dsv_arrow_col *c)
{
	return c->type == ARROW_LIST         ? "list"
	       : c->type == ARROW_LARGE_LIST ? "large_list"
	       : c->type == ARROW_FIXED_LIST ? "fixed_size_list"
					     : "";
}

/* The source of o's column, its runs made of every batch's. */
static int make_source(opened *o)
{
	dsv_source *s = o->s;
	size_t n = o->a.nbatches, k = 0;
	dsv_run *runs = calloc(n ? n : 1, sizeof(*runs));
	int err = runs ? 0 : dsv_errf(o->eb, DSV_ERR_NOMEM, "out of memory");
	int packed = 0;

	for (; !err && k < n; k++) {
		err = batch_run(o, k, &runs[k]);
		packed |= runs[k].codec;
	}
	s->info.dtype = o->col->dtype;
	uint64_t row = o->col->type == ARROW_FIXED_LIST ? (uint64_t)o->col->list_size : 1;
	if (!err && n == 1 && !packed) { /* one run: served as one */
		uint64_t shape[2] = { runs[0].count / row, row };
		s->data_offset = runs[0].off;
		if ((err = dsv_source_set_shape(s, row == 1 ? 1 : 2, shape)))
			err = dsv_errf_at(o->eb, err, o->file, o->column, "too large");
		s->info.kind = DSV_SRC_RUN;
		s->info.stored_bytes = runs[0].count * dsv_dtype_size(s->info.dtype);
		dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
		free(runs);
	} else if (!err) {
		if ((err = dsv_source_set_runs(s, runs, n, row)))
			err = dsv_errf_at(o->eb, err, o->file, o->column, "too large");
	} else
		free(runs);
	if (err)
		return err;
	dsv_source_why(
		s, "Arrow IPC %s, %s%s%s%s, %zu batch%s%s", o->a.file_form ? "file" : "stream",
		type_name(o->col), *type_name(o->col) ? "<" : "", dsv_dtype_name(o->col->dtype),
		*type_name(o->col) ? ">" : "", n, n == 1 ? "" : "es", packed ? ", compressed" : "");
	s->info.tokens = (o->col->type == ARROW_LIST || o->col->type == ARROW_LARGE_LIST) &&
			 dsv_dtype_is_int(o->col->dtype);
	return 0;
}

static int arrow_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	const char *column = dataset[0] == '/' ? dataset + 1 : dataset;
	opened o = { .file = file, .column = dataset, .eb = eb };
	char why[256];
	int err;

	*out = NULL;
	if (!(o.s = dsv_source_alloc(file, dataset)))
		return dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
	if (!(err = dsv_source_open_file(o.s, eb))) {
		err = dsv_arrow_open(read_src, o.s, o.s->file_size, column, &o.a, why, sizeof(why));
		if (is_indices(&o.a)) /* its column named or not */
			err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, file, NULL, INDICES_WHY);
		else if (err)
			err = dsv_errf_at(eb, err, file, dataset, "%s", why);
	}
	for (size_t i = 0; !err && i < o.a.ncols && !o.col; i++)
		if (!strcmp(o.a.cols[i].name, column))
			o.col = &o.a.cols[i];
	if (!err)
		err = make_source(&o);
	dsv_arrow_free(&o.a);
	if (err) {
		dsv_source_close(o.s);
		return err;
	}
	*out = o.s;
	return 0;
}

static int arrow_list(const char *file, char ***names, size_t *n, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(file, NULL);
	dsv_arrow_file a = { 0 };
	char why[256];
	int err = s ? dsv_source_open_file(s, eb) : dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");

	*names = NULL;
	*n = 0;
	if (!err && (err = dsv_arrow_open(read_src, s, s->file_size, NULL, &a, why, sizeof(why))))
		err = dsv_errf_at(eb, err, file, NULL, "%s", why);
	if (!err && is_indices(&a))
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, file, NULL, INDICES_WHY);
	char **out = err ? NULL : calloc(a.ncols ? a.ncols : 1, sizeof(*out));
	if (!err && !out)
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	for (size_t i = 0; !err && i < a.ncols; i++) {
		if (asprintf(&out[i], "/%s", a.cols[i].name) < 0) {
			out[i] = NULL;
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		} else
			*n = i + 1;
	}
	if (err) {
		for (size_t i = 0; out && i < *n; i++)
			free(out[i]);
		free(out);
		out = NULL;
		*n = 0;
	}
	*names = out;
	dsv_arrow_free(&a);
	dsv_source_close(s);
	return err;
}

static size_t arrow_by_name(const char *name)
{
	return dsv_has_ext(name, ".arrow")     ? 6
	       : dsv_has_ext(name, ".arrows")  ? 7
	       : dsv_has_ext(name, ".feather") ? 8
					       : 0;
}

static int arrow_by_magic(int fd)
{
	uint8_t h[6];
	return dsv_pread_fd(fd, h, sizeof(h), 0) == 0 && !memcmp(h, "ARROW1", 6);
}

const dsv_format dsv_format_arrow = {
	.name = "arrow",
	.noun = "an Arrow IPC file (.arrow)",
	.traits = DSV_FMT_DATASETS,
	.by_name = arrow_by_name,
	.by_magic = arrow_by_magic,
	.open = arrow_open,
	.list = arrow_list,
	.default_dataset = "/input_ids",
};
