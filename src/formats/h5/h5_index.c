/*
 * HDF5 sources in the index cache (source/index.h), made again with no
 * library call and no read of the file (the scaling a store records is
 * worked out again from the attributes). Two kinds are kept, each with
 * its dataset's path, attributes and axis names: a contiguous dataset
 * the open mapped to one run of the file (as a flat source), and a
 * chunked one of whole-row chunks that dsview decodes itself (its chunk
 * map, 16 bytes a chunk, and its filter pipeline as the read path's
 * fields). Other datasets are opened at every mount: a grid's chunks
 * (chunks that split rows) are located per chunk, which this does not
 * write yet, and one read through the library (or with chunks never
 * written) keeps the library's handles open for its reads, which no file
 * can hold. An entry is at most DSV_INDEX_BLOB_MAX bytes: a dataset of
 * more chunks than that holds is opened at every mount.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "formats/h5/h5_src.h"

/* The longest dataset path kept (h5_source.c opens no longer one). */
#define PATH_MAX_LEN 4096

/* text (NULL: none) as a u64 of its length + 1, then its bytes. */
static void put_text(dsv_index_buf *b, const char *text)
{
	size_t n = text ? strlen(text) : 0;
	dsv_index_put_u64(b, text ? n + 1 : 0);
	dsv_index_put(b, text, n);
}

/* A text put_text wrote, newly allocated into *out (NULL for none).
 * @return 0, or -1 (past the end, a NUL inside, out of memory). */
static int get_text(dsv_index_cur *c, char **out)
{
	uint64_t n = dsv_index_get_u64(c);
	const unsigned char *p;

	*out = NULL;
	if (c->bad || n > DSV_INDEX_BLOB_MAX)
		return -1;
	if (!n)
		return 0;
	if (!(p = dsv_index_get(c, (size_t)n - 1)) || memchr(p, '\0', (size_t)n - 1) ||
	    !(*out = strndup((const char *)p, (size_t)n - 1)))
		return -1;
	return 0;
}

int dsv_h5_index_save(const dsv_source *s, dsv_index_buf *out)
{
	dsv_index_buf flat = { 0 };
	int err;

	if (s->fallback || s->fmt || !s->dataset)
		return DSV_ERR_UNSUPPORTED;
	if (s->info.kind == DSV_SRC_H5_CONTIGUOUS)
		err = dsv_index_save_flat(s, &flat);
	else if (s->info.kind == DSV_SRC_H5_CHUNKED)
		err = dsv_index_save_chunked(s, &flat);
	else
		err = DSV_ERR_UNSUPPORTED;
	if (err) {
		free(flat.p);
		return err;
	}
	dsv_index_put_u64(out, flat.len);
	dsv_index_put(out, flat.p, flat.len);
	free(flat.p);
	put_text(out, s->dataset);
	put_text(out, s->attrs_json);
	put_text(out, s->dims_json);
	return out->bad ? DSV_ERR_NOMEM : 0;
}

/* 1 when text is JSON of the type want (an object, an array). */
static int json_of(const char *text, json_type want)
{
	json_t *j = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
	int ok = j && json_typeof(j) == want;
	json_decref(j);
	return ok;
}

/* dname (the path kept) is the dataset asked for (NULL: the file's only
 * one, any path), written with or without its leading '/'. */
static int same_dataset(const char *asked, const char *dname)
{
	if (dname[0] != '/' || strlen(dname) >= PATH_MAX_LEN)
		return 0;
	return !asked || !strcmp(asked + (asked[0] == '/'), dname + 1);
}

/* The source of layout[0 .. len), by the kind it starts with. */
static int load_layout(const char *file, const char *dname, const unsigned char *layout, size_t len,
		       const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb)
{
	dsv_index_cur c = { layout, layout + len, 0 };
	uint64_t kind = dsv_index_get_u64(&c);

	if (kind == DSV_SRC_H5_CHUNKED)
		return dsv_index_load_chunked(file, dname, layout, len, st, DSV_SRC_H5_CHUNKED, out,
					      eb);
	return dsv_index_load_flat(file, dname, layout, len, st, DSV_SRC_H5_CONTIGUOUS, out, eb);
}

int dsv_h5_index_load(const char *file, const char *dataset, const void *blob, size_t len,
		      const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb)
{
	dsv_index_cur c = { blob, (const unsigned char *)blob + len, 0 };
	uint64_t flen = dsv_index_get_u64(&c);
	const unsigned char *flat = c.bad || flen > len ? NULL : dsv_index_get(&c, (size_t)flen);
	char *dname = NULL, *attrs = NULL, *dims = NULL;
	dsv_source *s = NULL;
	int err = DSV_ERR_CORRUPT;

	*out = NULL;
	if (flat && !get_text(&c, &dname) && !get_text(&c, &attrs) && !get_text(&c, &dims) &&
	    c.p == c.end && dname && same_dataset(dataset, dname) &&
	    (!attrs || json_of(attrs, JSON_OBJECT)) && (!dims || json_of(dims, JSON_ARRAY)))
		err = load_layout(file, dname, flat, (size_t)flen, st, &s, eb);
	else
		err = dsv_errf_at(eb, err, file, dataset,
				  "its entry in the index cache is damaged");
	free(dname);
	if (err) {
		free(attrs);
		free(dims);
		return err;
	}
	s->info.attrs = s->attrs_json = attrs;
	s->info.dim_names = s->dims_json = dims;
	dsv_h5_store_scale(s);
	*out = s;
	return 0;
}
