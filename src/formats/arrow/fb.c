/* FlatBuffers, read with every offset checked (fb.h). */
#include <string.h>

#include "common/bytes.h"
#include "formats/arrow/fb.h"

static int in(const fb_buf *b, size_t pos, size_t n)
{
	return pos <= b->n && n <= b->n - pos;
}

int fb_table_at(const fb_buf *b, size_t pos, fb_table *t)
{
	if (!in(b, pos, 4))
		return -1;
	int32_t so = (int32_t)dsv_load_le32(b->p + pos);
	int64_t vt = (int64_t)pos - so;
	if (vt < 0 || !in(b, (size_t)vt, 4))
		return -1;
	unsigned vsize = (unsigned)(b->p[vt] | b->p[vt + 1] << 8);
	unsigned tsize = (unsigned)(b->p[vt + 2] | b->p[vt + 3] << 8);
	if (vsize < 4 || (vsize & 1) || !in(b, (size_t)vt, vsize) || tsize < 4 ||
	    !in(b, pos, tsize))
		return -1;
	t->b = b;
	t->pos = pos;
	t->vt = (size_t)vt;
	t->vsize = vsize;
	return 0;
}

int fb_root(const fb_buf *b, fb_table *t)
{
	if (!in(b, 0, 4))
		return -1;
	return fb_table_at(b, dsv_load_le32(b->p), t);
}

size_t fb_field(const fb_table *t, unsigned k)
{
	size_t at = 4 + 2 * (size_t)k;
	if (at + 2 > t->vsize)
		return 0;
	unsigned off = (unsigned)(t->b->p[t->vt + at] | t->b->p[t->vt + at + 1] << 8);
	return off ? t->pos + off : 0;
}

/* Field k's n bytes at *at; 1 when absent. */
static int scalar(const fb_table *t, unsigned k, size_t n, size_t *at)
{
	*at = fb_field(t, k);
	if (!*at)
		return 1;
	return in(t->b, *at, n) ? 0 : -1;
}

int fb_u8(const fb_table *t, unsigned k, uint8_t def, uint8_t *out)
{
	size_t at;
	int r = scalar(t, k, 1, &at);
	*out = r ? def : t->b->p[at];
	return r < 0 ? -1 : 0;
}

int fb_i16(const fb_table *t, unsigned k, int16_t def, int16_t *out)
{
	size_t at;
	int r = scalar(t, k, 2, &at);
	*out = r ? def : (int16_t)(t->b->p[at] | t->b->p[at + 1] << 8);
	return r < 0 ? -1 : 0;
}

int fb_i32(const fb_table *t, unsigned k, int32_t def, int32_t *out)
{
	size_t at;
	int r = scalar(t, k, 4, &at);
	*out = r ? def : (int32_t)dsv_load_le32(t->b->p + at);
	return r < 0 ? -1 : 0;
}

int fb_i64(const fb_table *t, unsigned k, int64_t def, int64_t *out)
{
	size_t at;
	int r = scalar(t, k, 8, &at);
	*out = r ? def : (int64_t)dsv_load_le64(t->b->p + at);
	return r < 0 ? -1 : 0;
}

/* The position field k's uoffset points to; 1 when absent. */
static int target(const fb_table *t, unsigned k, size_t *pos)
{
	size_t at;
	int r = scalar(t, k, 4, &at);
	if (r)
		return r;
	uint32_t off = dsv_load_le32(t->b->p + at);
	if (!off || !in(t->b, at + off, 4))
		return -1;
	*pos = at + off;
	return 0;
}

int fb_sub(const fb_table *t, unsigned k, fb_table *out)
{
	size_t pos;
	int r = target(t, k, &pos);
	if (r)
		return r;
	return fb_table_at(t->b, pos, out);
}

int fb_vector(const fb_table *t, unsigned k, size_t size, size_t *count, size_t *start)
{
	size_t pos;
	int r = target(t, k, &pos);
	*count = 0;
	*start = 0;
	if (r)
		return r;
	uint32_t n = dsv_load_le32(t->b->p + pos);
	if (size && n > (t->b->n - pos - 4) / size)
		return -1;
	*count = n;
	*start = pos + 4;
	return 0;
}

int fb_vector_table(const fb_buf *b, size_t start, size_t i, fb_table *out)
{
	size_t at = start + 4 * i;
	if (!in(b, at, 4))
		return -1;
	uint32_t off = dsv_load_le32(b->p + at);
	if (!off)
		return -1;
	return fb_table_at(b, at + off, out);
}

int fb_string(const fb_table *t, unsigned k, char *out, size_t cap)
{
	size_t n, start;
	int r = fb_vector(t, k, 1, &n, &start);
	out[0] = '\0';
	if (r)
		return r;
	size_t c = n < cap - 1 ? n : cap - 1;
	memcpy(out, t->b->p + start, c);
	out[c] = '\0';
	return memchr(out, '\0', c) ? -1 : 0;
}
