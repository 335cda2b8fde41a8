/*
 * Zarr metadata (zarr.h): v2 `.zarray` and v3 `zarr.json` into one
 * dsv_zarr_meta.
 *
 * v2 (zarr-specs v2): shape, chunks, dtype ("<f4", "|u1", ">i2", ...),
 * compressor (null or {"id": ...}), fill_value, order ("C"/"F"), filters
 * (null or empty: anything else changes the bytes and is refused), and
 * dimension_separator ("." default, or "/").
 * v3 (zarr-specs v3.0): node_type "array", shape, data_type, chunk_grid
 * "regular", chunk_key_encoding "default" (keys "c/0/1") or "v2" ("0.1"),
 * fill_value, and codecs: an optional transpose that is the identity or a
 * full reversal (Fortran order), then "bytes" (its endian), then at most
 * one of blosc, zstd, gzip and any crc32c before or after it; or, in
 * place of all that, sharding_indexed alone, whose inner codecs are the
 * same and whose index codecs are bytes and an optional crc32c. Other
 * codecs, sharding inside a shard, and codecs around the sharding are
 * refused.
 *
 * Fill values: numbers (integral and in range for integer types), and for
 * floats "NaN", "Infinity", "-Infinity" or, in v3, "0x..." raw bits.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "formats/zarr/zarr.h"
#include "xform/xform_elem.h"

static int bad(dsv_errbuf *eb, const char *what)
{
	return dsv_errf(eb, DSV_ERR_FORMAT, "%s", what);
}

/* shape or chunks: an array of ndim non-negative integers (chunks: >= 1). */
static int dims(json_t *a, const char *name, int min, uint64_t *out, int *ndim, dsv_errbuf *eb)
{
	if (!json_is_array(a))
		return dsv_errf(eb, DSV_ERR_FORMAT, "%s is missing or not an array", name);
	if (json_array_size(a) > DSV_MAX_DIMS)
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s has %zu dimensions (at most %d)", name,
				json_array_size(a), DSV_MAX_DIMS);
	if (*ndim >= 0 && (int)json_array_size(a) != *ndim)
		return dsv_errf(eb, DSV_ERR_FORMAT, "%s has %zu dimensions, shape has %d", name,
				json_array_size(a), *ndim);
	*ndim = (int)json_array_size(a);
	for (int k = 0; k < *ndim; k++) {
		json_t *v = json_array_get(a, (size_t)k);
		if (!json_is_integer(v) || json_integer_value(v) < min)
			return dsv_errf(eb, DSV_ERR_FORMAT, "%s[%d] is not an integer >= %d", name,
					k, min);
		out[k] = (uint64_t)json_integer_value(v);
	}
	return 0;
}

/* v2 dtype: byte order, kind, size ("<f4"); v3 data_type: a name. */
static int parse_dtype(const char *s, int version, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	static const struct {
		const char *v2, *v3;
		dsv_dtype t;
	} types[] = {
		{ "u1", "uint8", DSV_U8 },    { "i1", "int8", DSV_I8 },
		{ "u2", "uint16", DSV_U16 },  { "i2", "int16", DSV_I16 },
		{ "u4", "uint32", DSV_U32 },  { "i4", "int32", DSV_I32 },
		{ "u8", "uint64", DSV_U64 },  { "i8", "int64", DSV_I64 },
		{ "f2", "float16", DSV_F16 }, { "f4", "float32", DSV_F32 },
		{ "f8", "float64", DSV_F64 },
	};
	const char *name = s;
	if (version == 2) {
		if (s[0] != '<' && s[0] != '>' && s[0] != '|')
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
					"dtype '%s' is not a numeric dtype", s);
		m->big_endian = s[0] == '>';
		name = s + 1;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(name, version == 2 ? types[i].v2 : types[i].v3)) {
			m->dtype = types[i].t;
			if (version == 2 && s[0] == '|' && dsv_dtype_size(m->dtype) != 1)
				break;
			return 0;
		}
	return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "dtype '%s' is not served (numeric types only)",
			s);
}

/* One element of m->dtype from a JSON fill value, little-endian. */
static int parse_fill(json_t *v, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	size_t esize = dsv_dtype_size(m->dtype);
	double d = 0;
	memset(m->fill, 0, sizeof(m->fill));
	if (json_is_null(v))
		return 0;
	m->has_fill = 1;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!dsv_dtype_is_float(m->dtype))
			return dsv_errf(eb, DSV_ERR_FORMAT,
					"fill_value '%.40s' for an integer dtype", s);
		if (!strcmp(s, "NaN"))
			d = NAN;
		else if (!strcmp(s, "Infinity"))
			d = INFINITY;
		else if (!strcmp(s, "-Infinity"))
			d = -INFINITY;
		else if (m->version == 3 && s[0] == '0' && s[1] == 'x' &&
			 strlen(s) == 2 + 2 * esize &&
			 strspn(s + 2, "0123456789abcdefABCDEF") == 2 * esize) {
			uint64_t bits = strtoull(s + 2, NULL, 16);
			memcpy(m->fill, &bits, esize); /* little-endian host */
			return 0;
		} else
			return dsv_errf(eb, DSV_ERR_FORMAT, "fill_value '%.40s' is not a number",
					s);
	} else if (dsv_dtype_is_int(m->dtype) &&
		   (json_is_integer(v) || json_is_boolean(v) ||
		    (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
		     fabs(json_real_value(v)) < 0x1p63))) {
		json_int_t i = json_is_integer(v)   ? json_integer_value(v)
			       : json_is_boolean(v) ? json_is_true(v)
						    : (json_int_t)json_real_value(v);
		int sgn = m->dtype == DSV_I8 || m->dtype == DSV_I16 || m->dtype == DSV_I32 ||
			  m->dtype == DSV_I64;
		unsigned bits = (unsigned)esize * 8;
		int ok = sgn ? (bits == 64 ||
				(i >= -(1ll << (bits - 1)) && i < (1ll << (bits - 1))))
			     : (i >= 0 && (bits == 64 || i < (1ll << bits)));
		if (!ok)
			return dsv_errf(eb, DSV_ERR_FORMAT,
					"fill_value %lld is out of range for %s", (long long)i,
					dsv_dtype_name(m->dtype));
		memcpy(m->fill, &i, esize);
		return 0;
	} else if (json_is_number(v) && dsv_dtype_is_float(m->dtype)) {
		d = json_number_value(v);
	} else {
		return bad(eb, "fill_value is not a number of the array's dtype");
	}
	if (m->dtype == DSV_F64) {
		memcpy(m->fill, &d, 8);
	} else if (m->dtype == DSV_F32) {
		float f = (float)d;
		memcpy(m->fill, &f, 4);
	} else {
		uint16_t h = dsv_elem_f64_to_f16(d);
		memcpy(m->fill, &h, 2);
	}
	return 0;
}

/* Appends a bytes-to-bytes step; a compressor is at most one of them. */
static int add_step(dsv_zarr_meta *m, dsv_zarr_codec c, dsv_errbuf *eb)
{
	if (m->nsteps == DSV_ZARR_MAX_STEPS)
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "more than %d bytes codecs",
				DSV_ZARR_MAX_STEPS);
	m->step[m->nsteps++] = c;
	return 0;
}

static int set_codec(dsv_zarr_meta *m, const char *id, dsv_errbuf *eb)
{
	static const struct {
		const char *id;
		dsv_zarr_codec c;
	} codecs[] = { { "blosc", DSV_ZC_BLOSC },
		       { "zstd", DSV_ZC_ZSTD },
		       { "lz4", DSV_ZC_LZ4 },
		       { "zlib", DSV_ZC_ZLIB },
		       { "gzip", DSV_ZC_GZIP } };
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		if (!strcmp(id, codecs[i].id) &&
		    (m->version == 2 ||
		     (codecs[i].c != DSV_ZC_LZ4 && codecs[i].c != DSV_ZC_ZLIB))) {
			if (m->codec != DSV_ZC_NONE)
				return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
						"a second compressor ('%s' after '%s') is not "
						"supported",
						id, m->compressor);
			m->codec = codecs[i].c;
			snprintf(m->compressor, sizeof(m->compressor), "%s", id);
			return add_step(m, m->codec, eb);
		}
	return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
			"compressor '%.40s' is not supported (blosc, "
			"zstd, %sgzip or none)",
			id, m->version == 2 ? "lz4, zlib, " : "crc32c, ");
}

static int parse_v2(json_t *o, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	json_t *v;
	int err;
	m->ndim = -1;
	if ((err = dims(json_object_get(o, "shape"), "shape", 0, m->shape, &m->ndim, eb)) ||
	    (err = dims(json_object_get(o, "chunks"), "chunks", 1, m->chunks, &m->ndim, eb)))
		return err;
	if (!json_is_string(v = json_object_get(o, "dtype")))
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "dtype is %s (numeric types only)",
				v ? "structured" : "missing");
	if ((err = parse_dtype(json_string_value(v), 2, m, eb)))
		return err;
	v = json_object_get(o, "order");
	if (!json_is_string(v) ||
	    (strcmp(json_string_value(v), "C") && strcmp(json_string_value(v), "F")))
		return bad(eb, "order is not \"C\" or \"F\"");
	m->fortran = json_string_value(v)[0] == 'F';
	v = json_object_get(o, "filters");
	if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0)) {
		json_t *f = json_is_array(v) ? json_array_get(v, 0) : NULL;
		const char *id = json_string_value(json_object_get(f, "id"));
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
				"filter '%.40s' is not supported (a "
				"filter changes the stored bytes; only a compressor is)",
				id ? id : "?");
	}
	m->sep = '.';
	if ((v = json_object_get(o, "dimension_separator")) && !json_is_null(v)) {
		const char *s = json_string_value(v);
		if (!s || (strcmp(s, ".") && strcmp(s, "/")))
			return bad(eb, "dimension_separator is not \".\" or \"/\"");
		m->sep = s[0];
	}
	v = json_object_get(o, "compressor");
	snprintf(m->compressor, sizeof(m->compressor), "none");
	if (v && !json_is_null(v)) {
		const char *id = json_string_value(json_object_get(v, "id"));
		if (!id)
			return bad(eb, "compressor has no \"id\"");
		if ((err = set_codec(m, id, eb)))
			return err;
	}
	if (!json_object_get(o, "fill_value"))
		return bad(eb, "fill_value is missing");
	return parse_fill(json_object_get(o, "fill_value"), m, eb);
}

static int parse_codecs(json_t *a, dsv_zarr_meta *m, int outer, dsv_errbuf *eb);

/* v3 transpose: the identity or a full reversal (Fortran order). */
static int parse_transpose(json_t *cfg, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	json_t *ord = json_object_get(cfg, "order");
	int id = 1, rev = 1;
	if (!json_is_array(ord) || (int)json_array_size(ord) != m->ndim)
		return bad(eb, "transpose has no order of the array's rank");
	for (int k = 0; k < m->ndim; k++) {
		json_t *x = json_array_get(ord, (size_t)k);
		if (!json_is_integer(x))
			return bad(eb, "transpose order is not integers");
		id &= json_integer_value(x) == k;
		rev &= json_integer_value(x) == m->ndim - 1 - k;
	}
	if (!id && !rev)
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
				"transpose other than C or F order is not supported");
	m->fortran = !id;
	return 0;
}

/* v3 bytes: its endian into *big. The specification requires one for
 * multi-byte types; zarr-python reads a missing one as the host's order,
 * which is little on every host dsview runs on, and so does dsview. */
static int parse_bytes(json_t *cfg, int *big, dsv_errbuf *eb)
{
	const char *e = json_string_value(json_object_get(cfg, "endian"));
	if (e && strcmp(e, "little") && strcmp(e, "big"))
		return bad(eb, "bytes endian is not \"little\" or \"big\"");
	*big = e && !strcmp(e, "big");
	return 0;
}

/* A shard index's codecs: bytes (an endian), then crc32c or nothing, as
 * zarr-python, TensorStore and the specification's default write it. */
static int parse_index_codecs(json_t *a, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	size_t n = json_array_size(a);
	json_t *c0 = json_array_get(a, 0), *c1 = json_array_get(a, 1);
	const char *n0 = json_string_value(json_object_get(c0, "name"));
	const char *n1 = json_string_value(json_object_get(c1, "name"));
	if (!json_is_array(a) || n < 1 || n > 2 || !n0 || strcmp(n0, "bytes") ||
	    (n == 2 && (!n1 || strcmp(n1, "crc32c"))))
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
				"sharding index_codecs other than bytes (and crc32c) are not "
				"supported");
	m->index_crc = n == 2;
	return parse_bytes(json_object_get(c0, "configuration"), &m->index_big_endian, eb);
}

/* v3 sharding_indexed: the outer chunk is a shard of inner chunks. */
static int parse_sharding(json_t *cfg, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	int nd = m->ndim, err;
	const char *loc = json_string_value(json_object_get(cfg, "index_location"));
	memcpy(m->shard, m->chunks, sizeof(m->shard));
	if ((err = dims(json_object_get(cfg, "chunk_shape"), "sharding chunk_shape", 1, m->chunks,
			&nd, eb)))
		return err;
	m->shard_chunks = 1;
	for (int k = 0; k < m->ndim; k++) {
		if (m->shard[k] % m->chunks[k])
			return dsv_errf(eb, DSV_ERR_FORMAT,
					"shard shape[%d] %llu is not a multiple of the inner "
					"chunk's %llu",
					k, (unsigned long long)m->shard[k],
					(unsigned long long)m->chunks[k]);
		m->per_shard[k] = m->shard[k] / m->chunks[k];
		if (dsv_mul_u64(m->shard_chunks, m->per_shard[k], &m->shard_chunks) ||
		    m->shard_chunks > DSV_ZARR_MAX_SHARD_CHUNKS)
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
					"a shard of more than %u inner chunks",
					DSV_ZARR_MAX_SHARD_CHUNKS);
	}
	if (loc && strcmp(loc, "start") && strcmp(loc, "end"))
		return bad(eb, "sharding index_location is not \"start\" or \"end\"");
	m->index_at_start = loc && !strcmp(loc, "start");
	m->sharded = 1;
	if ((err = parse_index_codecs(json_object_get(cfg, "index_codecs"), m, eb)))
		return err;
	return parse_codecs(json_object_get(cfg, "codecs"), m, 0, eb);
}

/* v3 "codecs": [transpose?] (bytes | sharding_indexed, outer only)
 * [compressor, crc32c ...]. */
static int parse_codecs(json_t *a, dsv_zarr_meta *m, int outer, dsv_errbuf *eb)
{
	size_t n = json_array_size(a);
	int seen_bytes = 0, err = 0;
	if (!json_is_array(a) || n == 0)
		return bad(eb, "codecs is missing or empty");
	snprintf(m->compressor, sizeof(m->compressor), "none");
	for (size_t i = 0; i < n && !err; i++) {
		json_t *c = json_array_get(a, i), *cfg = json_object_get(c, "configuration");
		const char *name = json_string_value(json_object_get(c, "name"));
		if (!name)
			return bad(eb, "a codec has no \"name\"");
		if (m->sharded && outer)
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
					"codec '%.40s' after sharding_indexed is not supported",
					name);
		if (!strcmp(name, "sharding_indexed") && !seen_bytes) {
			if (!outer)
				return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
						"sharding inside a shard is not supported");
			if (m->fortran)
				return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
						"transpose before sharding_indexed is not "
						"supported");
			err = parse_sharding(cfg, m, eb);
			seen_bytes = 1;
		} else if (!strcmp(name, "transpose") && !seen_bytes) {
			err = parse_transpose(cfg, m, eb);
		} else if (!strcmp(name, "bytes") && !seen_bytes) {
			err = parse_bytes(cfg, &m->big_endian, eb);
			seen_bytes = 1;
		} else if (seen_bytes && !strcmp(name, "crc32c")) {
			err = add_step(m, DSV_ZC_CRC32C, eb);
		} else if (seen_bytes && strcmp(name, "bytes") && strcmp(name, "transpose") &&
			   strcmp(name, "sharding_indexed")) {
			err = set_codec(m, name, eb);
		} else {
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
					"codec '%.40s' at position %zu is not supported", name, i);
		}
	}
	if (!err && !seen_bytes)
		return bad(eb, "codecs has no \"bytes\" codec");
	return err;
}

static int parse_v3(json_t *o, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	json_t *v, *g;
	int err;
	const char *s = json_string_value(json_object_get(o, "node_type"));
	if (!s || strcmp(s, "array"))
		return bad(eb, "node_type is not \"array\"");
	m->ndim = -1;
	if ((err = dims(json_object_get(o, "shape"), "shape", 0, m->shape, &m->ndim, eb)))
		return err;
	if (!(s = json_string_value(json_object_get(o, "data_type"))))
		return bad(eb, "data_type is missing or not a name");
	if ((err = parse_dtype(s, 3, m, eb)))
		return err;
	g = json_object_get(o, "chunk_grid");
	s = json_string_value(json_object_get(g, "name"));
	if (!s || strcmp(s, "regular"))
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
				"chunk_grid '%.40s' is not supported "
				"(regular only)",
				s ? s : "?");
	if ((err = dims(json_object_get(json_object_get(g, "configuration"), "chunk_shape"),
			"chunk_shape", 1, m->chunks, &m->ndim, eb)))
		return err;
	v = json_object_get(o, "chunk_key_encoding");
	s = json_string_value(json_object_get(v, "name"));
	if (!s || (strcmp(s, "default") && strcmp(s, "v2")))
		return bad(eb, "chunk_key_encoding is not \"default\" or \"v2\"");
	m->key_prefix = !strcmp(s, "default");
	m->sep = m->key_prefix ? '/' : '.';
	if ((v = json_object_get(json_object_get(v, "configuration"), "separator"))) {
		const char *sep = json_string_value(v);
		if (!sep || (strcmp(sep, ".") && strcmp(sep, "/")))
			return bad(eb, "chunk key separator is not \".\" or \"/\"");
		m->sep = sep[0];
	}
	if ((v = json_object_get(o, "storage_transformers")) && json_array_size(v))
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "storage_transformers are not supported");
	if ((err = parse_codecs(json_object_get(o, "codecs"), m, 1, eb)))
		return err;
	if (!(v = json_object_get(o, "fill_value")) || json_is_null(v))
		return bad(eb, "fill_value is missing (v3 requires one)");
	return parse_fill(v, m, eb);
}

/* grid, nchunks, chunk_elems, and the size caps. */
static int derive(dsv_zarr_meta *m, dsv_errbuf *eb)
{
	uint64_t esize = dsv_dtype_size(m->dtype), total = esize, chunk = esize;
	m->nchunks = 1;
	m->chunk_elems = 1;
	for (int k = 0; k < m->ndim; k++) {
		m->grid[k] = m->shape[k] / m->chunks[k] + (m->shape[k] % m->chunks[k] != 0);
		if (dsv_mul_u64(m->nchunks, m->grid[k], &m->nchunks) ||
		    dsv_mul_u64(total, m->shape[k], &total) || total > INT64_MAX ||
		    dsv_mul_u64(chunk, m->chunks[k], &chunk) || chunk > DSV_ZARR_MAX_CHUNK_BYTES)
			return dsv_errf(eb, DSV_ERR_OVERFLOW, "%s is too large",
					chunk > DSV_ZARR_MAX_CHUNK_BYTES ? "a chunk" : "the array");
		m->chunk_elems *= m->chunks[k];
		m->kgrid[k] = m->grid[k];
		if (m->sharded)
			m->kgrid[k] = m->shape[k] / m->shard[k] + (m->shape[k] % m->shard[k] != 0);
	}
	return 0;
}

int dsv_zarr_parse(const char *text, size_t len, int version, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	json_error_t je;
	json_t *o;
	int err;
	memset(m, 0, sizeof(*m));
	m->version = version;
	if (version != 2 && version != 3)
		return dsv_errf(eb, DSV_ERR_INVALID, "zarr format %d", version);
	if (!(o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)))
		return dsv_errf(eb, DSV_ERR_FORMAT, "not JSON: %s (line %d)", je.text, je.line);
	if (!json_is_object(o))
		err = bad(eb, "not a JSON object");
	else if (json_integer_value(json_object_get(o, "zarr_format")) != version)
		err = dsv_errf(eb, DSV_ERR_FORMAT, "zarr_format is not %d", version);
	else
		err = version == 2 ? parse_v2(o, m, eb) : parse_v3(o, m, eb);
	json_decref(o);
	return err ? err : derive(m, eb);
}

/* *dims from names (v3 dimension_names, v2 _ARRAY_DIMENSIONS; absent or
 * null: none): ndim strings, and in v3 nulls too (an axis without a name).
 * In v3 anything else is refused; in v2 it is an attribute like any other,
 * which xarray wrote or did not, and is passed over. */
static int dim_names(json_t *names, int version, int ndim, char **dims, dsv_errbuf *eb)
{
	const char *what = version == 3 ? "dimension_names" : "_ARRAY_DIMENSIONS";
	size_t n = json_array_size(names);
	if (!names || json_is_null(names))
		return 0;
	if (!json_is_array(names) || n != (size_t)ndim) {
		if (version == 2)
			return 0;
		if (!json_is_array(names))
			return dsv_errf(eb, DSV_ERR_FORMAT, "%s is not an array", what);
		return dsv_errf(eb, DSV_ERR_FORMAT, "%s has %zu names for %d dimensions", what, n,
				ndim);
	}
	for (size_t k = 0; k < n; k++) {
		json_t *v = json_array_get(names, k);
		if (json_is_string(v) || (version == 3 && json_is_null(v)))
			continue;
		if (version == 2)
			return 0;
		return dsv_errf(eb, DSV_ERR_FORMAT, "%s[%zu] is not a string or null", what, k);
	}
	if (!(*dims = json_dumps(names, JSON_COMPACT | JSON_ENCODE_ANY)))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	return 0;
}

int dsv_zarr_attrs(const char *text, size_t len, int version, int ndim, char **out, char **dims,
		   dsv_errbuf *eb)
{
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *a;
	*out = *dims = NULL;
	if (!o)
		return dsv_errf(eb, DSV_ERR_FORMAT, "not JSON: %s (line %d)", je.text, je.line);
	a = version == 2 ? o : json_object_get(o, "attributes");
	int err = 0;
	if (a && !json_is_object(a))
		err = bad(eb, "attributes are not a JSON object");
	else if (a && json_object_size(a) &&
		 !(*out = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)))
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	else
		err = dim_names(
			json_object_get(o, version == 3 ? "dimension_names" : "_ARRAY_DIMENSIONS"),
			version, ndim, dims, eb);
	json_decref(o);
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

int dsv_zarr_chunk_key(const dsv_zarr_meta *m, const uint64_t *idx, char *out, size_t cap)
{
	size_t at = 0;
	int n;
	if (cap == 0)
		return DSV_ERR_INVALID;
	out[0] = '\0';
	if (m->key_prefix) {
		if ((n = snprintf(out, cap, "c")) < 0 || (size_t)n >= cap)
			return DSV_ERR_INVALID;
		at = 1;
	} else if (m->ndim == 0) { /* v2: a 0-d array's one chunk is "0" */
		return snprintf(out, cap, "0") >= (int)cap ? DSV_ERR_INVALID : 0;
	}
	for (int k = 0; k < m->ndim; k++) {
		if (idx[k] >= m->kgrid[k])
			return DSV_ERR_INVALID;
		n = snprintf(out + at, cap - at, "%s%llu", at ? (m->sep == '/' ? "/" : ".") : "",
			     (unsigned long long)idx[k]);
		if (n < 0 || (size_t)n >= cap - at)
			return DSV_ERR_INVALID;
		at += (size_t)n;
	}
	return 0;
}

int dsv_zarr_is_chunk_key(const dsv_zarr_meta *m, const char *rel)
{
	uint64_t idx[DSV_MAX_DIMS] = { 0 };
	char key[1024];
	const char *p = rel;
	if (m->key_prefix && *p++ != 'c')
		return 0;
	for (int k = 0; k < m->ndim; k++) {
		char *end;
		if ((k || m->key_prefix) && *p++ != m->sep)
			return 0;
		if (*p < '0' || *p > '9')
			return 0;
		unsigned long long v = strtoull(p, &end, 10); /* too big: ULLONG_MAX */
		if (v >= m->kgrid[k])
			return 0;
		idx[k] = v;
		p = end;
	}
	/* anything after, a leading zero ("01"), v2's 0-d "0": the key the
	 * reader opens for idx is the judge */
	return dsv_zarr_chunk_key(m, idx, key, sizeof(key)) == 0 && !strcmp(key, rel);
}
