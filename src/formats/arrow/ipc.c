/*
 * Arrow IPC (ipc.h). Both forms hold encapsulated messages: 0xFFFFFFFF,
 * an int32 metadata length, the FlatBuffer Message padded to 8 bytes,
 * then its body (bodyLength bytes); before format 0.15 the length came
 * alone. The stream form is the Schema message, then dictionary and
 * record batches, then 0xFFFFFFFF 0 (end of stream; a stream that just
 * ends is read as pyarrow reads it). The file form is "ARROW1\0\0", the
 * same messages, a Footer FlatBuffer (the schema and a Block per record
 * batch: offset, metadata length, body length), its int32 length and
 * "ARROW1"; its batches are read where the footer says.
 *
 * Record batches lay the fields out in pre-order: one FieldNode (length,
 * null count) per field and its buffers in a fixed order per type (a
 * list<int32>: validity, int32 offsets, then the values' validity and
 * values). A dictionary-encoded field is its indices (one node, two
 * buffers). Counting the nodes and buffers of the columns before the one
 * served tells where its own are; a union or view column before it
 * (whose buffers depend on more than its type) makes it unservable.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "formats/arrow/fb.h"
#include "formats/arrow/ipc.h"

#define MAX_META (64u << 20)
#define MAX_FIELDS 100000u
#define MAX_DEPTH 64
#define MSG_SCHEMA 1
#define MSG_DICT 2
#define MSG_BATCH 3

typedef struct reader {
	dsv_arrow_read rd;
	void *arg;
	uint64_t size;
	char *why;
	size_t cap;
	const char *column;
	dsv_arrow_file *f;
	dsv_arrow_col *col; /* the chosen column, once the schema is read */
	size_t batch;       /* record batches read so far */
} reader;

static int fail(reader *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(reader *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, r->cap, fmt, ap);
	va_end(ap);
	return err;
}

/* One message's metadata (into *meta, malloc'd) and where its body lies. */
typedef struct message {
	uint8_t *meta;
	fb_buf b;
	uint64_t body, body_len, next;
	int eos;
	uint8_t type;
	fb_table header;
} message;

static int read_message(reader *r, uint64_t off, message *m)
{
	uint8_t pre[8];
	uint64_t at;
	int32_t len;

	memset(m, 0, sizeof(*m));
	if (off == r->size || (r->size - off < 8 && r->size - off >= 4 &&
			       !r->rd(r->arg, pre, 4, off) && dsv_load_le32(pre) == 0)) {
		m->eos = 1; /* the end, with or without the old 4-byte marker */
		return 0;
	}
	if (off > r->size || r->size - off < 8 || r->rd(r->arg, pre, 8, off))
		return fail(r, DSV_ERR_TRUNCATED, "message at byte %llu: cut short",
			    (unsigned long long)off);
	if (dsv_load_le32(pre) == 0xFFFFFFFFu) {
		len = (int32_t)dsv_load_le32(pre + 4);
		at = off + 8;
	} else {
		len = (int32_t)dsv_load_le32(pre);
		at = off + 4;
	}
	if (len == 0) {
		m->eos = 1;
		return 0;
	}
	if (len < 0 || (uint32_t)len > MAX_META || (uint64_t)len > r->size - at)
		return fail(r, DSV_ERR_FORMAT,
			    "message at byte %llu: metadata length %d is invalid",
			    (unsigned long long)off, len);
	if (!(m->meta = malloc((size_t)len)))
		return fail(r, DSV_ERR_NOMEM, "out of memory");
	if (r->rd(r->arg, m->meta, (size_t)len, at))
		return fail(r, DSV_ERR_TRUNCATED, "message at byte %llu: cut short",
			    (unsigned long long)off);
	m->b = (fb_buf){ m->meta, (size_t)len };
	fb_table root;
	int16_t version;
	int64_t body_len;
	if (fb_root(&m->b, &root) || fb_i16(&root, 0, 0, &version) ||
	    fb_u8(&root, 1, 0, &m->type) || fb_i64(&root, 3, 0, &body_len) ||
	    (m->type && fb_sub(&root, 2, &m->header)))
		return fail(r, DSV_ERR_FORMAT, "message at byte %llu: its Message is malformed",
			    (unsigned long long)off);
	if (version < 3) /* MetadataVersion V4 (format 0.8) and later */
		return fail(r, DSV_ERR_UNSUPPORTED,
			    "message at byte %llu: metadata version V%d (before Arrow 0.8)",
			    (unsigned long long)off, version + 1);
	m->body = at + (uint64_t)len;
	if (body_len < 0 || (uint64_t)body_len > r->size - m->body)
		return fail(r, DSV_ERR_TRUNCATED,
			    "message at byte %llu: its body of %lld bytes runs past the end",
			    (unsigned long long)off, (long long)body_len);
	m->body_len = (uint64_t)body_len;
	m->next = m->body + m->body_len;
	return 0;
}

static dsv_dtype int_dtype(int bits, int sign)
{
	switch (bits) {
	case 8: return sign ? DSV_I8 : DSV_U8;
	case 16: return sign ? DSV_I16 : DSV_U16;
	case 32: return sign ? DSV_I32 : DSV_U32;
	case 64: return sign ? DSV_I64 : DSV_U64;
	}
	return DSV_DTYPE_INVALID;
}

/* The dtype of a primitive field (Int, FloatingPoint), else INVALID. */
static dsv_dtype prim_dtype(const fb_table *field, uint8_t type)
{
	fb_table t;
	int32_t bits;
	uint8_t sign;
	int16_t prec;
	if (fb_sub(field, 3, &t))
		return DSV_DTYPE_INVALID;
	if (type == ARROW_INT && !fb_i32(&t, 0, 0, &bits) && !fb_u8(&t, 1, 0, &sign))
		return int_dtype(bits, sign);
	if (type == ARROW_FLOAT && !fb_i16(&t, 0, 0, &prec))
		return prec == 1   ? DSV_F32
		       : prec == 2 ? DSV_F64
		       : prec == 0 ? DSV_F16
				   : DSV_DTYPE_INVALID;
	return DSV_DTYPE_INVALID;
}

/* Buffers a field of type has in a record batch; -1: they depend on more
 * than its type (unions, views). */
static int type_buffers(uint8_t type)
{
	switch (type) {
	case ARROW_NULL:
	case 22: return 0; /* RunEndEncoded */
	case ARROW_STRUCT:
	case ARROW_FIXED_LIST: return 1;
	case ARROW_INT:
	case ARROW_FLOAT:
	case 6:
	case 7:
	case 8:
	case 9:
	case 10:
	case 11:
	case 15:
	case 18:
	case ARROW_LIST:
	case ARROW_LARGE_LIST:
	case 17: return 2; /* Map */
	case 4:
	case ARROW_UTF8:
	case 19:
	case 20:
	case 25:
	case 26: return 3;
	default: return -1;
	}
}

typedef struct counts {
	size_t nodes, bufs, fields;
	int unknown; /* a field whose buffers cannot be counted */
} counts;

/* Counts field (at depth) and its children into c. */
static int count_field(reader *r, const fb_table *field, int depth, counts *c)
{
	uint8_t type;
	fb_table dict, child;
	size_t n, start;
	if (depth > MAX_DEPTH || ++c->fields > MAX_FIELDS)
		return fail(r, DSV_ERR_UNSUPPORTED, "schema: fields nested too deep or too many");
	if (fb_u8(field, 2, 0, &type))
		return fail(r, DSV_ERR_FORMAT, "schema: a field's type is malformed");
	c->nodes++;
	int d = fb_sub(field, 4, &dict);
	if (d < 0)
		return fail(r, DSV_ERR_FORMAT, "schema: a field's dictionary is malformed");
	if (d == 0) { /* the indices alone */
		c->bufs += 2;
		return 0;
	}
	int nb = type_buffers(type);
	if (nb < 0)
		c->unknown = 1;
	else
		c->bufs += (size_t)nb;
	if (fb_vector(field, 5, 4, &n, &start) < 0)
		return fail(r, DSV_ERR_FORMAT, "schema: a field's children are malformed");
	for (size_t i = 0; i < n; i++) {
		int err;
		if (fb_vector_table(field->b, start, i, &child))
			return fail(r, DSV_ERR_FORMAT, "schema: a field's children are malformed");
		if ((err = count_field(r, &child, depth + 1, c)))
			return err;
	}
	return 0;
}

/* The Type union's member as Arrow's schema names it ("utf8", "struct"). */
static const char *type_name(int type)
{
	static const char *const names[] = { "none",
					     "null",
					     "int",
					     "floating point",
					     "binary",
					     "utf8",
					     "bool",
					     "decimal",
					     "date",
					     "time",
					     "timestamp",
					     "interval",
					     "list",
					     "struct",
					     "union",
					     "fixed_size_binary",
					     "fixed_size_list",
					     "map",
					     "duration",
					     "large_binary",
					     "large_utf8",
					     "large_list",
					     "run_end_encoded",
					     "binary_view",
					     "utf8_view",
					     "list_view",
					     "large_list_view" };
	return type >= 0 && (size_t)type < sizeof(names) / sizeof(names[0]) ? names[type] : NULL;
}

/* What column col (schema field f) is, and why it is not served if not. */
static void describe(const fb_table *f, dsv_arrow_col *col)
{
	uint8_t type = 0, ctype = 0;
	fb_table t, child;
	size_t n = 0, start;
	int32_t size = 0;

	fb_u8(f, 2, 0, &type);
	col->type = type;
	col->dtype = DSV_DTYPE_INVALID;
	fb_vector(f, 5, 4, &n, &start);
	int has_child = n == 1 && !fb_vector_table(f->b, start, 0, &child) &&
			!fb_u8(&child, 2, 0, &ctype);
	if (col->dict)
		snprintf(col->why, sizeof(col->why), "a dictionary-encoded column");
	else if (type == ARROW_INT || type == ARROW_FLOAT)
		col->dtype = prim_dtype(f, type);
	else if ((type == ARROW_LIST || type == ARROW_LARGE_LIST || type == ARROW_FIXED_LIST) &&
		 has_child) {
		fb_table cd;
		if (fb_sub(&child, 4, &cd) == 1 && (ctype == ARROW_INT || ctype == ARROW_FLOAT))
			col->dtype = prim_dtype(&child, ctype);
		if (col->dtype == DSV_DTYPE_INVALID)
			snprintf(col->why, sizeof(col->why),
				 "a list of other than integers or floats");
		if (type == ARROW_FIXED_LIST &&
		    (fb_sub(f, 3, &t) || fb_i32(&t, 0, 0, &size) || size <= 0)) {
			col->dtype = DSV_DTYPE_INVALID;
			snprintf(col->why, sizeof(col->why), "a fixed_size_list of size %d",
				 (int)size);
		}
		col->list_size = size;
	} else if (type_name(type))
		snprintf(col->why, sizeof(col->why),
			 "a %s column (dsview serves integer and float columns and lists of them)",
			 type_name(type));
	else
		snprintf(col->why, sizeof(col->why),
			 "a column of Arrow type %d (dsview serves integer and float columns "
			 "and lists of them)",
			 type);
	if (!col->why[0] && col->dtype == DSV_DTYPE_INVALID)
		snprintf(col->why, sizeof(col->why), "an integer or float width dsview lacks");
}

static int read_schema(reader *r, const fb_table *schema)
{
	int16_t endian;
	size_t n, start;
	counts c = { 0 };
	if (fb_i16(schema, 0, 0, &endian) || fb_vector(schema, 1, 4, &n, &start) < 0)
		return fail(r, DSV_ERR_FORMAT, "schema: malformed");
	if (endian != 0)
		return fail(r, DSV_ERR_UNSUPPORTED, "schema: big-endian data");
	if (n > MAX_FIELDS || !(r->f->cols = calloc(n ? n : 1, sizeof(*r->f->cols))))
		return fail(r, n > MAX_FIELDS ? DSV_ERR_UNSUPPORTED : DSV_ERR_NOMEM,
			    "schema: %zu columns", n);
	for (size_t i = 0; i < n; i++) {
		fb_table f, dict;
		dsv_arrow_col *col = &r->f->cols[i];
		int err;
		if (fb_vector_table(schema->b, start, i, &f) ||
		    fb_string(&f, 0, col->name, sizeof(col->name)) < 0)
			return fail(r, DSV_ERR_FORMAT, "schema: field %zu is malformed", i);
		col->node = c.nodes;
		col->buf = c.bufs;
		col->counted = !c.unknown;
		col->dict = fb_sub(&f, 4, &dict) == 0;
		r->f->ncols = i + 1;
		if ((err = count_field(r, &f, 0, &c)))
			return err;
		describe(&f, col);
		if (!col->counted && !col->why[0])
			snprintf(col->why, sizeof(col->why),
				 "a union or view column before it (its buffers cannot be "
				 "counted)");
	}
	return 0;
}

int dsv_arrow_col_layout(const dsv_arrow_col *c, int *nbufs, int *nnodes)
{
	if (c->why[0] || c->dtype == DSV_DTYPE_INVALID)
		return -1;
	switch (c->type) {
	case ARROW_INT:
	case ARROW_FLOAT: *nbufs = 2, *nnodes = 1; return 0;
	case ARROW_LIST:
	case ARROW_LARGE_LIST: *nbufs = 4, *nnodes = 2; return 0;
	case ARROW_FIXED_LIST: *nbufs = 3, *nnodes = 2; return 0;
	}
	return -1;
}

/* A RecordBatch message m: the chosen column's nodes and buffers. */
static int read_batch(reader *r, const message *m)
{
	const dsv_arrow_col *c = r->col;
	size_t i = r->batch++, nn, nstart, nbuf, bstart;
	int64_t length;
	int nbufs, nnodes;
	fb_table comp;
	const fb_table *h = &m->header;

	if (!c)
		return 0;
	if (fb_i64(h, 0, 0, &length) || length < 0 || fb_vector(h, 1, 16, &nn, &nstart) < 0 ||
	    fb_vector(h, 2, 16, &nbuf, &bstart) < 0)
		return fail(r, DSV_ERR_FORMAT, "record batch %zu: malformed", i);
	dsv_arrow_col_layout(c, &nbufs, &nnodes);
	if (c->node + (size_t)nnodes > nn || c->buf + (size_t)nbufs > nbuf)
		return fail(r, DSV_ERR_FORMAT,
			    "record batch %zu: %zu nodes and %zu buffers, too few for column %s", i,
			    nn, nbuf, c->name);
	dsv_arrow_batch *b = realloc(r->f->batches, (i + 1) * sizeof(*b));
	if (!b)
		return fail(r, DSV_ERR_NOMEM, "out of memory");
	r->f->batches = b;
	r->f->nbatches = i + 1;
	b = &b[i];
	memset(b, 0, sizeof(*b));
	b->length = length;
	b->codec = -1;
	int cr = fb_sub(h, 3, &comp);
	int8_t codec = 0;
	if (cr < 0 || (cr == 0 && fb_u8(&comp, 0, 0, (uint8_t *)&codec)))
		return fail(r, DSV_ERR_FORMAT, "record batch %zu: compression is malformed", i);
	if (cr == 0) {
		if (codec != 0 && codec != 1)
			return fail(r, DSV_ERR_UNSUPPORTED,
				    "record batch %zu: compression codec %d", i, codec);
		b->codec = codec;
	}
	for (int k = 0; k < nnodes; k++) {
		const uint8_t *p = m->b.p + nstart + 16 * (c->node + (size_t)k);
		b->len[k] = (int64_t)dsv_load_le64(p);
		b->nulls[k] = (int64_t)dsv_load_le64(p + 8);
	}
	for (int k = 0; k < nbufs; k++) {
		const uint8_t *p = m->b.p + bstart + 16 * (c->buf + (size_t)k);
		uint64_t off = dsv_load_le64(p), len = dsv_load_le64(p + 8);
		if (off > m->body_len || len > m->body_len - off)
			return fail(r, DSV_ERR_FORMAT,
				    "record batch %zu: buffer %zu (offset %llu, %llu bytes) lies "
				    "outside its body of %llu bytes",
				    i, c->buf + (size_t)k, (unsigned long long)off,
				    (unsigned long long)len, (unsigned long long)m->body_len);
		b->off[k] = m->body + off;
		b->size[k] = len;
	}
	return 0;
}

/* The schema has been read: pick the column. */
static int choose(reader *r)
{
	int nb, nn;
	if (!r->column)
		return 0;
	for (size_t i = 0; i < r->f->ncols && !r->col; i++)
		if (!strcmp(r->f->cols[i].name, r->column))
			r->col = &r->f->cols[i];
	if (!r->col)
		return fail(r, DSV_ERR_NOTFOUND, "no column %s", r->column);
	if (dsv_arrow_col_layout(r->col, &nb, &nn))
		return fail(r, DSV_ERR_UNSUPPORTED, "column %s is %s", r->column,
			    r->col->why[0] ? r->col->why : "not served");
	return 0;
}

static int read_stream(reader *r)
{
	uint64_t off = 0;
	int err = 0, have_schema = 0;
	for (size_t k = 0; !err; k++) {
		message m;
		err = read_message(r, off, &m);
		if (!err && m.eos) {
			free(m.meta);
			break;
		}
		if (!err && !have_schema && m.type != MSG_SCHEMA)
			err = fail(r, DSV_ERR_FORMAT, "the stream does not start with a schema");
		else if (!err && !have_schema) {
			have_schema = 1;
			if (!(err = read_schema(r, &m.header)))
				err = choose(r);
		} else if (!err && m.type == MSG_BATCH)
			err = read_batch(r, &m);
		else if (!err && m.type != MSG_DICT)
			err = fail(r, DSV_ERR_FORMAT, "message %zu: type %d in a stream", k,
				   m.type);
		off = m.next;
		free(m.meta);
	}
	if (!err && !have_schema)
		err = fail(r, DSV_ERR_FORMAT, "no schema");
	return err;
}

#define FILE_MAGIC "ARROW1"

static int read_file_form(reader *r)
{
	uint8_t tail[10], *foot = NULL;
	if (r->size < 8 + 10 || r->rd(r->arg, tail, 10, r->size - 10) ||
	    memcmp(tail + 4, FILE_MAGIC, 6))
		return fail(r, DSV_ERR_FORMAT, "file form without its closing ARROW1 (cut short?)");
	int32_t len = (int32_t)dsv_load_le32(tail);
	if (len <= 0 || (uint64_t)len > r->size - 18 || (uint32_t)len > MAX_META)
		return fail(r, DSV_ERR_FORMAT, "footer length %d is invalid", len);
	if (!(foot = malloc((size_t)len)))
		return fail(r, DSV_ERR_NOMEM, "out of memory");
	int err = 0;
	fb_buf b = { foot, (size_t)len };
	fb_table root, schema;
	size_t n = 0, start = 0;
	if (r->rd(r->arg, foot, (size_t)len, r->size - 10 - (uint64_t)len) || fb_root(&b, &root) ||
	    fb_sub(&root, 1, &schema) || fb_vector(&root, 3, 24, &n, &start) < 0)
		err = fail(r, DSV_ERR_FORMAT, "footer is malformed");
	if (!err && !(err = read_schema(r, &schema)))
		err = choose(r);
	for (size_t i = 0; !err && i < n; i++) {
		const uint8_t *blk = foot + start + 24 * i;
		uint64_t off = dsv_load_le64(blk), blen = dsv_load_le64(blk + 16);
		int32_t mlen = (int32_t)dsv_load_le32(blk + 8);
		message m;
		if ((err = read_message(r, off, &m))) {
			free(m.meta);
			break;
		}
		if (m.eos || m.type != MSG_BATCH || mlen <= 0 || m.body != off + (uint64_t)mlen ||
		    m.body_len != blen)
			err = fail(r, DSV_ERR_FORMAT,
				   "footer block %zu (byte %llu) is not the record batch there", i,
				   (unsigned long long)off);
		else
			err = read_batch(r, &m);
		free(m.meta);
	}
	free(foot);
	return err;
}

int dsv_arrow_open(dsv_arrow_read rd, void *arg, uint64_t size, const char *column,
		   dsv_arrow_file *out, char *why, size_t cap)
{
	reader r = { rd, arg, size, why, cap, column, out, NULL, 0 };
	uint8_t head[8];
	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	if (size >= 8 && !rd(arg, head, 8, 0) && !memcmp(head, FILE_MAGIC, 6)) {
		out->file_form = 1;
		return read_file_form(&r);
	}
	return read_stream(&r);
}

void dsv_arrow_free(dsv_arrow_file *f)
{
	free(f->cols);
	free(f->batches);
	memset(f, 0, sizeof(*f));
}
