/*
 * Zip directories (zip.h): the end of central directory record, found in
 * the file's last 64 KiB + 22 bytes; its zip64 locator and record where a
 * field of it is saturated; then the central directory, read whole, one
 * entry per member with the zip64 extra field's values in place of the
 * saturated ones. Only single-disk, unencrypted archives are read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "dsview/dsview.h"
#include "formats/npy/zip.h"

#define EOCD_SIG 0x06054b50u
#define LOC64_SIG 0x07064b50u
#define EOCD64_SIG 0x06064b50u
#define CENTRAL_SIG 0x02014b50u
#define LOCAL_SIG 0x04034b50u
#define EOCD_LEN 22u
#define LOC64_LEN 20u
#define EOCD64_LEN 56u
#define CENTRAL_LEN 46u
#define LOCAL_LEN 30u
#define MAX_COMMENT 65535u
/* a central directory larger than this is refused, not read */
#define MAX_CENTRAL (256u << 20)

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static int fail(char *why, size_t cap, int err, const char *msg)
{
	snprintf(why, cap, "%s", msg);
	return err;
}

/* Where the central directory is, and how many entries it has. */
typedef struct central {
	uint64_t off, size, count;
} central;

/* The zip64 end record that the locator at loc points to. */
static int read_eocd64(dsv_zip_read rd, void *arg, uint64_t size, uint64_t loc, central *c,
		       char *why, size_t cap)
{
	uint8_t b[EOCD64_LEN];
	if (loc < LOC64_LEN || rd(arg, b, LOC64_LEN, loc - LOC64_LEN) ||
	    dsv_load_le32(b) != LOC64_SIG)
		return fail(why, cap, DSV_ERR_FORMAT,
			    "zip64 end of central directory locator missing");
	uint64_t at = dsv_load_le64(b + 8);
	if (dsv_load_le32(b + 16) > 1)
		return fail(why, cap, DSV_ERR_UNSUPPORTED, "a multi-disk zip");
	if (at > size - EOCD64_LEN || at >= loc || rd(arg, b, EOCD64_LEN, at) ||
	    dsv_load_le32(b) != EOCD64_SIG)
		return fail(why, cap, DSV_ERR_FORMAT,
			    "zip64 end of central directory record offset is invalid");
	c->count = dsv_load_le64(b + 32);
	c->size = dsv_load_le64(b + 40);
	c->off = dsv_load_le64(b + 48);
	return 0;
}

/* The end of central directory record, and from it (or its zip64 record)
 * the central directory's place. */
static int find_central(dsv_zip_read rd, void *arg, uint64_t size, central *c, char *why,
			size_t cap)
{
	if (size < EOCD_LEN)
		return fail(why, cap, DSV_ERR_FORMAT, "too short to be a zip");
	uint64_t span = size < EOCD_LEN + MAX_COMMENT ? size : EOCD_LEN + MAX_COMMENT;
	uint8_t *tail = malloc(span);
	if (!tail)
		return fail(why, cap, DSV_ERR_NOMEM, "out of memory");
	if (rd(arg, tail, span, size - span)) {
		free(tail);
		return fail(why, cap, DSV_ERR_TRUNCATED, "cannot read its end");
	}
	uint64_t i = span - EOCD_LEN + 1, at = UINT64_MAX;
	while (i-- > 0 && at == UINT64_MAX)
		if (dsv_load_le32(tail + i) == EOCD_SIG &&
		    i + EOCD_LEN + le16(tail + i + 20) <= span)
			at = i;
	uint8_t e[EOCD_LEN];
	if (at != UINT64_MAX)
		memcpy(e, tail + at, EOCD_LEN);
	free(tail);
	if (at == UINT64_MAX)
		return fail(why, cap, DSV_ERR_FORMAT,
			    "no end of central directory record (not a zip file)");
	at += size - span;
	if (le16(e + 4) || le16(e + 6))
		return fail(why, cap, DSV_ERR_UNSUPPORTED, "a multi-disk zip");
	c->count = le16(e + 10);
	c->size = dsv_load_le32(e + 12);
	c->off = dsv_load_le32(e + 16);
	if (c->count == 0xFFFF || c->size == 0xFFFFFFFFu || c->off == 0xFFFFFFFFu)
		return read_eocd64(rd, arg, size, at, c, why, cap);
	return 0;
}

/* The zip64 extra field's values (id 1) for the saturated ones among
 * usize, csize, off, in that order, from the extra bytes x[0 .. n). */
static int zip64_extra(const uint8_t *x, size_t n, uint64_t *usize, uint64_t *csize, uint64_t *off)
{
	while (n >= 4) {
		unsigned id = le16(x), len = le16(x + 2);
		if (len > n - 4)
			return -1;
		if (id == 1) {
			const uint8_t *p = x + 4, *end = x + 4 + len;
			uint64_t *v[3] = { usize, csize, off };
			for (int k = 0; k < 3; k++) {
				if (*v[k] != 0xFFFFFFFFu)
					continue;
				if (end - p < 8)
					return -1;
				*v[k] = dsv_load_le64(p);
				p += 8;
			}
			return 0;
		}
		x += 4 + len;
		n -= 4 + len;
	}
	return 0;
}

/* Entry at *at of the central directory cd[0 .. len) into m; *at moves
 * past it. */
static int parse_entry(const uint8_t *cd, uint64_t len, uint64_t *at, dsv_zip_member *m, char *why,
		       size_t cap)
{
	const uint8_t *p = cd + *at;
	if (len - *at < CENTRAL_LEN || dsv_load_le32(p) != CENTRAL_SIG)
		return fail(why, cap, DSV_ERR_FORMAT, "central directory entry signature is wrong");
	size_t nlen = le16(p + 28), xlen = le16(p + 30), clen = le16(p + 32);
	if (len - *at - CENTRAL_LEN < (uint64_t)nlen + xlen + clen)
		return fail(why, cap, DSV_ERR_FORMAT,
			    "central directory entry runs past the directory");
	m->flags = le16(p + 8);
	m->method = le16(p + 10);
	m->csize = dsv_load_le32(p + 20);
	m->usize = dsv_load_le32(p + 24);
	m->local_off = dsv_load_le32(p + 42);
	if (zip64_extra(p + CENTRAL_LEN + nlen, xlen, &m->usize, &m->csize, &m->local_off))
		return fail(why, cap, DSV_ERR_FORMAT, "zip64 extra field is malformed");
	if (memchr(p + CENTRAL_LEN, '\0', nlen))
		return fail(why, cap, DSV_ERR_FORMAT, "member name holds a NUL byte");
	if (!(m->name = strndup((const char *)p + CENTRAL_LEN, nlen)))
		return fail(why, cap, DSV_ERR_NOMEM, "out of memory");
	*at += CENTRAL_LEN + nlen + xlen + clen;
	return 0;
}

int dsv_zip_list(dsv_zip_read rd, void *arg, uint64_t size, dsv_zip_member **out, size_t *n,
		 char *why, size_t cap)
{
	central c;
	int err = find_central(rd, arg, size, &c, why, cap);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	if (c.off > size || c.size > size - c.off)
		return fail(why, cap, DSV_ERR_TRUNCATED,
			    "central directory lies past the end of the file");
	if (c.size > MAX_CENTRAL || c.count > c.size / CENTRAL_LEN)
		return fail(why, cap, DSV_ERR_FORMAT, "central directory size or count is invalid");
	uint8_t *cd = malloc(c.size ? c.size : 1);
	dsv_zip_member *m = calloc(c.count ? c.count : 1, sizeof(*m));
	if (!cd || !m)
		err = fail(why, cap, DSV_ERR_NOMEM, "out of memory");
	else if (rd(arg, cd, c.size, c.off))
		err = fail(why, cap, DSV_ERR_TRUNCATED, "cannot read the central directory");
	uint64_t at = 0, k = 0;
	for (; !err && k < c.count; k++)
		err = parse_entry(cd, c.size, &at, &m[k], why, cap);
	free(cd);
	if (err) {
		dsv_zip_free(m, k);
		return err;
	}
	*out = m;
	*n = c.count;
	return 0;
}

int dsv_zip_data_at(dsv_zip_read rd, void *arg, uint64_t size, const dsv_zip_member *m,
		    uint64_t *off, char *why, size_t cap)
{
	uint8_t h[LOCAL_LEN];
	if (m->flags & 1)
		return fail(why, cap, DSV_ERR_UNSUPPORTED, "the member is encrypted");
	if (m->local_off > size || size - m->local_off < LOCAL_LEN ||
	    rd(arg, h, LOCAL_LEN, m->local_off))
		return fail(why, cap, DSV_ERR_TRUNCATED,
			    "local header lies past the end of the file");
	if (dsv_load_le32(h) != LOCAL_SIG)
		return fail(why, cap, DSV_ERR_FORMAT, "local header signature is wrong");
	*off = m->local_off + LOCAL_LEN + le16(h + 26) + le16(h + 28);
	if (*off > size || m->csize > size - *off)
		return fail(why, cap, DSV_ERR_TRUNCATED,
			    "member data runs past the end of the file");
	return 0;
}

void dsv_zip_free(dsv_zip_member *m, size_t n)
{
	for (size_t i = 0; m && i < n; i++)
		free(m[i].name);
	free(m);
}
