/*
 * .npy sources (format versions 1.0, 2.0 and 3.0) and the open dispatcher.
 *
 * The header is a Python dict literal; we accept exactly what numpy writes:
 * keys 'descr' (a simple type string), 'fortran_order' (True/False) and
 * 'shape' (a tuple of non-negative integers), in any order. The header is
 * untrusted: its length is capped, every number is overflow-checked, and the
 * data must fit in the file.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "common/bytes.h"
#include "common/str.h"
#include "dsview/source.h"
#include "formats/npy/npy.h"
#include "source/source_i.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_HEADER (1u << 20)

typedef struct npy_cursor {
	const char *p, *end;
} npy_cursor;

static void skip_ws(npy_cursor *c)
{
	while (c->p < c->end && isspace((unsigned char)*c->p))
		c->p++;
}

static int take(npy_cursor *c, char ch)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

/* A quoted Python string without escapes; copies at most cap-1 bytes. */
static int parse_str(npy_cursor *c, char *out, size_t cap)
{
	skip_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return -1;
	char q = *c->p++;
	size_t n = 0;
	while (c->p < c->end && *c->p != q) {
		if (*c->p == '\\' || n + 1 >= cap)
			return -1;
		out[n++] = *c->p++;
	}
	if (c->p >= c->end)
		return -1;
	c->p++;
	out[n] = '\0';
	return 0;
}

static int parse_shape(npy_cursor *c, int *ndim, uint64_t *shape)
{
	*ndim = 0;
	if (!take(c, '('))
		return -1;
	for (;;) {
		if (take(c, ')'))
			return 0;
		skip_ws(c);
		if (c->p >= c->end || !isdigit((unsigned char)*c->p))
			return -1;
		uint64_t v = 0;
		while (c->p < c->end && isdigit((unsigned char)*c->p)) {
			if (dsv_mul_u64(v, 10, &v) || dsv_add_u64(v, (uint64_t)(*c->p - '0'), &v))
				return -2;
			c->p++;
		}
		skip_ws(c);
		if (c->p < c->end && *c->p == 'L') /* Python 2 longs */
			c->p++;
		if (*ndim >= DSV_MAX_DIMS)
			return -2;
		shape[(*ndim)++] = v;
		if (!take(c, ',')) {
			if (take(c, ')'))
				return 0;
			return -1;
		}
	}
}

static int parse_header(dsv_source *s, const char *h, size_t len, dsv_errbuf *eb)
{
	npy_cursor c = { h, h + len };
	char key[32], descr[32] = "";
	int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0, ndim = 0;
	uint64_t shape[DSV_MAX_DIMS];

	if (!take(&c, '{'))
		goto bad;
	while (!take(&c, '}')) {
		if (parse_str(&c, key, sizeof(key)) || !take(&c, ':'))
			goto bad;
		skip_ws(&c);
		if (!strcmp(key, "descr")) {
			if (parse_str(&c, descr, sizeof(descr)))
				return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
						   "structured or unknown dtype in .npy header");
			have_descr = 1;
		} else if (!strcmp(key, "fortran_order")) {
			if ((size_t)(c.end - c.p) >= 4 && !strncmp(c.p, "True", 4)) {
				fortran = 1;
				c.p += 4;
			} else if ((size_t)(c.end - c.p) >= 5 && !strncmp(c.p, "False", 5)) {
				c.p += 5;
			} else {
				goto bad;
			}
			have_order = 1;
		} else if (!strcmp(key, "shape")) {
			int r = parse_shape(&c, &ndim, shape);
			if (r == -2)
				return dsv_errf_at(
					eb, DSV_ERR_OVERFLOW, s->path, NULL,
					".npy shape too large or has too many dimensions");
			if (r)
				goto bad;
			have_shape = 1;
		} else {
			goto bad;
		}
		if (!take(&c, ',')) {
			if (take(&c, '}'))
				break;
			goto bad;
		}
	}
	if (!have_descr || !have_order || !have_shape)
		goto bad;
	if (fortran)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
				   "Fortran-order .npy is not supported; save it in C order "
				   "(np.save(p, np.ascontiguousarray(a)))");
	if (descr[0] == '>' && strcmp(descr + 1, "u1") && strcmp(descr + 1, "i1"))
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
				   "big-endian dtype '%s' is not supported; convert with "
				   "a.astype(a.dtype.newbyteorder('<'))",
				   descr);
	s->info.dtype = dsv_dtype_parse(descr[0] == '>' ? descr + 1 : descr);
	/* numpy's own spelling only: dsv_dtype_parse also takes dsview's
	 * aliases, and '<f16' (numpy's long double) must not read as "f16". */
	if (s->info.dtype != DSV_DTYPE_INVALID &&
	    (!strchr("<>|=", descr[0]) ||
	     strcmp(descr + 1, dsv_dtype_npy_descr(s->info.dtype) + 1)))
		s->info.dtype = DSV_DTYPE_INVALID;
	if (s->info.dtype == DSV_DTYPE_INVALID || s->info.dtype == DSV_BF16)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
				   "unsupported dtype '%s'", descr);
	if (ndim == 0)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
				   "0-d arrays are not supported");
	if (dsv_source_set_shape(s, ndim, shape))
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, s->path, s->dataset,
				   ".npy shape overflows");
	return 0;
bad:
	return dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, s->dataset, "malformed .npy header");
}

int dsv_npy_read_header(dsv_source *s, uint64_t base, uint64_t len, dsv_errbuf *eb)
{
	const char *path = s->path;
	unsigned char pre[12];
	char *hdr = NULL;
	uint64_t hlen, nbytes;
	size_t pre_len;
	int err;

	if (len < 10 || dsv_source_pread(s, pre, 10, base) || memcmp(pre, NPY_MAGIC, 6))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, s->dataset,
				   "not a .npy file (bad magic)");
	if (pre[6] == 1) {
		hlen = pre[8] | (uint64_t)pre[9] << 8;
		pre_len = 10;
	} else if (pre[6] == 2 || pre[6] == 3) {
		if (len < 12 || dsv_source_pread(s, pre, 12, base))
			return dsv_errf_at(eb, DSV_ERR_FORMAT, path, s->dataset,
					   "truncated .npy header");
		hlen = dsv_load_le32(pre + 8);
		pre_len = 12;
	} else {
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, s->dataset,
				   ".npy format version %d.%d is not supported", pre[6], pre[7]);
	}
	if (hlen > NPY_MAX_HEADER || pre_len + hlen > len)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, s->dataset,
				   ".npy header length %llu is invalid", (unsigned long long)hlen);
	if (!(hdr = malloc(hlen + 1)))
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if (dsv_source_pread(s, hdr, hlen, base + pre_len))
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, s->dataset, "truncated .npy header");
	else if (hdr[hlen] = '\0', memchr(hdr, '\0', hlen))
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, s->dataset, "malformed .npy header");
	else
		err = parse_header(s, hdr, hlen, eb);
	free(hdr);
	if (err)
		return err;
	s->data_offset = base + pre_len + hlen;
	nbytes = s->info.nelems * dsv_dtype_size(s->info.dtype); /* checked by set_shape */
	if (nbytes > len - pre_len - hlen)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, path, s->dataset,
				   "%s is %llu bytes but its header declares %llu bytes of data",
				   base ? "the member" : "file", (unsigned long long)len,
				   (unsigned long long)(pre_len + hlen + nbytes));
	s->info.kind = DSV_SRC_NPY;
	s->info.stored_bytes = nbytes;
	dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	return 0;
}

int dsv_source_open_npy(const char *path, dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(path, NULL);
	int err;

	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if (!(err = dsv_source_open_file(s, eb)))
		err = dsv_npy_read_header(s, 0, s->file_size, eb);
	if (err) {
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}

static size_t npy_by_name(const char *name)
{
	return dsv_has_ext(name, ".npy") ? 4 : 0;
}

static int npy_by_magic(int fd)
{
	unsigned char pre[6];
	return dsv_pread_fd(fd, pre, sizeof(pre), 0) == 0 && !memcmp(pre, NPY_MAGIC, 6);
}

static int npy_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	return dsv_source_open_npy(file, out, eb);
}

static int npy_save(const dsv_source *s, dsv_index_buf *out)
{
	return dsv_index_save_flat(s, out);
}

static int npy_load(const char *file, const char *dataset, const void *blob, size_t len,
		    const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	return dsv_index_load_flat(file, NULL, blob, len, st, DSV_SRC_NPY, out, eb);
}

const dsv_format dsv_format_npy = {
	.name = "npy",
	.noun = "a .npy",
	.by_name = npy_by_name,
	.by_magic = npy_by_magic,
	.open = npy_open,
	.save = npy_save,
	.load = npy_load,
};
