/*
 * The Level-5 MAT-file walk (MathWorks' "MAT-File Format", matfile_format.pdf):
 * after a 128-byte header, tagged elements, each a 4-byte type and a 4-byte
 * length then its data padded to 8 bytes, or, where the type's upper half
 * is not zero, a small element of up to 4 bytes inside its tag. A variable
 * is a matrix element (miMATRIX) whose subelements are its array flags
 * (the class), dimensions, name, then per class: a numeric array's real
 * (and imaginary) part, a char array's characters, a struct's field name
 * length, field names and one matrix per field and element. A v7 file may
 * wrap a variable in a compressed element (miCOMPRESSED), which is not
 * read here.
 *
 * Only what a variable's header says is read, tag by tag, through the
 * caller's read; a numeric array's data is located, never loaded. Every
 * length is checked against its enclosing element and the file.
 */
#include <stdio.h>
#include <string.h>

#include "common/bytes.h"
#include "formats/eeglab/mat5.h"

/* One subelement: its type, its data's bytes, and where the next starts. */
typedef struct mat_el {
	uint32_t type;
	uint64_t off, len, next;
} mat_el;

size_t dsv_mat_type_size(int t)
{
	switch (t) {
	case DSV_MI_INT8:
	case DSV_MI_UINT8:
	case DSV_MI_UTF8: return 1;
	case DSV_MI_INT16:
	case DSV_MI_UINT16:
	case DSV_MI_UTF16: return 2;
	case DSV_MI_INT32:
	case DSV_MI_UINT32:
	case DSV_MI_SINGLE: return 4;
	case DSV_MI_DOUBLE:
	case DSV_MI_INT64:
	case DSV_MI_UINT64: return 8;
	default: return 0;
	}
}

static int bad(dsv_errbuf *eb, uint64_t at, const char *what)
{
	char where[48];
	snprintf(where, sizeof(where), "element at byte %llu", (unsigned long long)at);
	return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, where, "%s", what);
}

/* The element whose tag is at off, inside [off, end). */
static int element(const dsv_mat *m, uint64_t off, uint64_t end, mat_el *e, dsv_errbuf *eb)
{
	uint8_t tag[8];
	if (end > m->size || off > end || end - off < 8)
		return bad(eb, off, "a tag past the end of its element or the file");
	int err = m->read(m->arg, tag, 8, off);
	if (err)
		return dsv_errf_at(eb, err, NULL, NULL, "cannot read the element at byte %llu",
				   (unsigned long long)off);
	uint32_t type = (uint32_t)dsv_load_uint(tag, 4, 0);
	uint32_t len = (uint32_t)dsv_load_uint(tag + 4, 4, 0);
	if (type >> 16) { /* small element: the data in the tag's second half */
		e->type = type & 0xffff;
		e->len = type >> 16;
		e->off = off + 4;
		e->next = off + 8;
		if (e->len > 4)
			return bad(eb, off, "a small element of more than 4 bytes");
		return 0;
	}
	e->type = type;
	e->off = off + 8;
	e->len = len;
	if (len > end - e->off)
		return bad(eb, off, "its length runs past the end of its element or the file");
	/* a compressed element is not padded; every other is, to 8 bytes */
	uint64_t padded = type == DSV_MI_COMPRESSED ? len : (len + 7) & ~7ull;
	e->next = padded > end - e->off ? end : e->off + padded;
	return 0;
}

static int read_u32s(const dsv_mat *m, const mat_el *e, uint32_t *out, size_t n)
{
	uint8_t b[4 * DSV_MAT_MAX_DIMS];
	int err = m->read(m->arg, b, 4 * n, e->off);
	for (size_t i = 0; !err && i < n; i++)
		out[i] = (uint32_t)dsv_load_uint(b + 4 * i, 4, 0);
	return err;
}

/* The header of the matrix element whose data is [off, end): flags,
 * dimensions, name, and the class's own parts. */
static int matrix(const dsv_mat *m, uint64_t off, uint64_t end, dsv_mat_var *v, dsv_errbuf *eb)
{
	mat_el f, d, n;
	uint32_t flags[2], dims[DSV_MAT_MAX_DIMS];
	int err;

	memset(v, 0, sizeof(*v));
	v->end = end;
	if (off == end)
		return 0; /* an empty matrix (an empty cell or field) */
	if ((err = element(m, off, end, &f, eb)) || (err = element(m, f.next, end, &d, eb)) ||
	    (err = element(m, d.next, end, &n, eb)))
		return err;
	if (f.type != DSV_MI_UINT32 || f.len != 8)
		return bad(eb, f.off - 8, "array flags that are not two uint32");
	if (d.type != DSV_MI_INT32 || d.len % 4 || d.len < 8 || d.len > 4 * DSV_MAT_MAX_DIMS)
		return bad(eb, d.off - 8, "dimensions that are not 2 to 8 int32");
	if (n.type != DSV_MI_INT8 || n.len >= sizeof(v->name))
		return bad(eb, n.off - 8, "a name that is not int8 text of under 64 bytes");
	if ((err = read_u32s(m, &f, flags, 2)) || (err = read_u32s(m, &d, dims, d.len / 4)) ||
	    (err = m->read(m->arg, v->name, (size_t)n.len, n.off)))
		return dsv_errf(eb, err, "cannot read a variable's header");
	v->cls = flags[0] & 0xff;
	v->complex = (flags[0] >> 11) & 1;
	v->ndims = (int)(d.len / 4);
	v->numel = 1;
	for (int i = 0; i < v->ndims; i++) {
		if ((int32_t)dims[i] < 0)
			return bad(eb, d.off - 8, "a negative dimension");
		v->dims[i] = dims[i];
		v->numel = v->numel && dims[i] > UINT64_MAX / v->numel ? 0 : v->numel * dims[i];
	}
	v->body = n.next;
	if (v->cls == DSV_MX_STRUCT) {
		mat_el l, names;
		uint32_t len;
		if ((err = element(m, v->body, end, &l, eb)) ||
		    (err = element(m, l.next, end, &names, eb)))
			return err;
		if (l.type != DSV_MI_INT32 || l.len != 4 || read_u32s(m, &l, &len, 1) || !len ||
		    len > 64 || names.len % len)
			return bad(eb, l.off - 4, "a struct's field name length");
		v->field_len = len;
		v->nfields = (size_t)(names.len / len);
		v->names_off = names.off;
		v->body = names.next;
		return 0;
	}
	if (v->cls == DSV_MX_CELL || v->body == end)
		return 0;
	mat_el r;
	if ((err = element(m, v->body, end, &r, eb)))
		return err;
	v->type = (int)r.type;
	v->data_off = r.off;
	v->data_len = r.len;
	return 0;
}

int dsv_mat_check_header(const dsv_mat *m, dsv_errbuf *eb)
{
	uint8_t h[DSV_MAT_HEADER];
	if (m->size < DSV_MAT_HEADER || m->read(m->arg, h, sizeof(h), 0))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "header",
				   "shorter than a MAT-file's 128-byte header");
	if (memcmp(h, "MATLAB 5.0 MAT-file", 19))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "header",
				   "not a MATLAB 5.0 MAT-file (its text does not say so)");
	if (h[126] == 'M' && h[127] == 'I')
		return dsv_errf_at(
			eb, DSV_ERR_UNSUPPORTED, NULL, "header",
			"a big-endian MAT-file; save it again on a little-endian machine");
	if (h[126] != 'I' || h[127] != 'M')
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "header",
				   "endian indicator is neither IM nor MI");
	if (dsv_load_uint(h + 124, 2, 0) != 0x0100)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "header", "version is not 0x0100");
	return 0;
}

int dsv_mat_find(const dsv_mat *m, const char *name, dsv_mat_var *v, dsv_errbuf *eb)
{
	int compressed = 0, err;
	mat_el e;
	for (uint64_t off = DSV_MAT_HEADER; off + 8 <= m->size; off = e.next) {
		if ((err = element(m, off, m->size, &e, eb)))
			return err;
		compressed |= e.type == DSV_MI_COMPRESSED;
		if (e.type != DSV_MI_MATRIX)
			continue;
		if ((err = matrix(m, e.off, e.off + e.len, v, eb)))
			return err;
		if (!strcmp(v->name, name))
			return 0;
	}
	if (compressed)
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
				"compressed variables (MATLAB -v7), which cannot be read in place");
	return dsv_errf(eb, DSV_ERR_NOTFOUND, "no variable '%s'", name);
}

int dsv_mat_field(const dsv_mat *m, const dsv_mat_var *st, const char *field, dsv_mat_var *out,
		  uint64_t n, dsv_errbuf *eb)
{
	char fname[65];
	size_t k = 0;
	int err;

	if (st->cls != DSV_MX_STRUCT || n > st->numel)
		return dsv_errf(eb, DSV_ERR_NOTFOUND, "'%s' is not a struct of %llu elements",
				st->name, (unsigned long long)n);
	for (; k < st->nfields; k++) {
		if ((err = m->read(m->arg, fname, st->field_len,
				   st->names_off + k * st->field_len)))
			return dsv_errf(eb, err, "cannot read a struct's field names");
		fname[st->field_len] = '\0';
		if (!strcmp(fname, field))
			break;
	}
	if (k == st->nfields)
		return dsv_errf(eb, DSV_ERR_NOTFOUND, "no field '%s' in '%s'", field, st->name);
	/* the matrices follow element by element, each its fields in order */
	uint64_t off = st->body;
	mat_el e;
	for (uint64_t i = 0; i < n * st->nfields; i++, off = e.next) {
		if ((err = element(m, off, st->end, &e, eb)))
			return err;
		if (e.type != DSV_MI_MATRIX)
			return bad(eb, off, "a struct's field that is not a matrix");
		if (i % st->nfields == k &&
		    (err = matrix(m, e.off, e.off + e.len, &out[i / st->nfields], eb)))
			return err;
	}
	return 0;
}

int dsv_mat_scalar(const dsv_mat *m, const dsv_mat_var *v, double *out, dsv_errbuf *eb)
{
	uint8_t b[8];
	size_t es = dsv_mat_type_size(v->type);
	if (v->cls < 6 || v->cls > 15 || v->complex || !es || v->numel < 1 || v->data_len < es ||
	    m->read(m->arg, b, es, v->data_off))
		return dsv_errf(eb, DSV_ERR_FORMAT, "'%s' is not a real number", v->name);
	uint64_t u = dsv_load_uint(b, (int)es, 0);
	float f;
	switch (v->type) {
	case DSV_MI_INT8: *out = (int8_t)u; break;
	case DSV_MI_INT16: *out = (int16_t)u; break;
	case DSV_MI_INT32: *out = (int32_t)u; break;
	case DSV_MI_INT64: *out = (double)(int64_t)u; break;
	case DSV_MI_SINGLE: memcpy(&f, b, 4), *out = f; break;
	case DSV_MI_DOUBLE: memcpy(out, b, 8); break;
	default: *out = (double)u; break; /* the unsigned types */
	}
	return 0;
}

int dsv_mat_string(const dsv_mat *m, const dsv_mat_var *v, char *out, size_t cap, dsv_errbuf *eb)
{
	uint8_t b[1024];
	size_t es = dsv_mat_type_size(v->type);
	if (v->cls == 0 && cap) { /* an empty field: "" */
		out[0] = '\0';
		return 0;
	}
	if (v->cls != DSV_MX_CHAR || !es || es > 2 || v->data_len / es >= cap ||
	    v->data_len > sizeof(b) || m->read(m->arg, b, (size_t)v->data_len, v->data_off))
		return dsv_errf(eb, DSV_ERR_FORMAT, "'%s' is not a short char array", v->name);
	size_t n = (size_t)(v->data_len / es);
	for (size_t i = 0; i < n; i++) {
		uint64_t c = dsv_load_uint(b + i * es, (int)es, 0);
		out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[n] = '\0';
	return 0;
}
