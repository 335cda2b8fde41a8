/*
 * Views: sources concatenated along axis 0, their checks, the byte range to
 * chunk mapping, and the .npy header and .json description of each view.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/str.h"
#include "view/view_i.h"

int dsv_view_name_ok(const char *name)
{
	_Static_assert(DSV_NAME_MAX == DSV_VIEW_NAME_MAX, "one limit for view names");
	return dsv_name_ok(name);
}

void dsv_view_get_info(const dsv_view *v, dsv_view_info *out)
{
	dsv_view_get_fields(v, out);
	out->json = dsv_view_json(v, NULL);
}

void dsv_view_get_fields(const dsv_view *v, dsv_view_info *out)
{
	const struct dsv_view_decl *d = v->decl;
	*out = (dsv_view_info){
		.name = v->name,
		.dtype = v->dtype,
		.ndim = v->ndim,
		.nelems = v->nelems,
		.row_bytes = v->row_bytes,
		.nbytes = v->nbytes,
		.nsources = v->nsources,
		.sources = v->sources,
		.elem_base = v->elem_base,
		.nchunks = v->nchunks,
		.scale = d->scale,
		.offset = d->offset,
		.nchan = d->nchan,
		.channel_axis = d->channel_axis,
		.has_clip = d->has_clip,
		.mean = d->mean,
		.std = d->std,
		.clip_lo = d->clip_lo,
		.clip_hi = d->clip_hi,
		.mtime = v->mtime,
	};
	memcpy(out->shape, v->shape, sizeof(out->shape));
}

dsv_view *dsv_view_new(const char *name)
{
	/* the view and its decl, in one allocation: freeing v frees both */
	struct view_and_decl {
		dsv_view v;
		struct dsv_view_decl d;
	} *both = calloc(1, sizeof(*both));
	if (!both)
		return NULL;
	dsv_view *v = &both->v;
	v->decl = &both->d;
	v->name = strdup(name);
	v->dtype = DSV_F32;
	v->decl->scale = 1.0;
	v->decl->channel_axis = -1;
	if (!v->name) {
		free(v);
		return NULL;
	}
	return v;
}

void dsv_view_free(dsv_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nsources; i++) {
		dsv_source_close(v->sources[i]);
		if (v->xf && v->decl->xf_own[i])
			dsv_xform_destroy(v->xf[i]);
	}
	free(v->sources);
	free(v->src_key);
	free(v->elem_base);
	free(v->chunk_base);
	free(v->nwin);
	free(v->lrow_base);
	free(v->rows_index);
	free(v->decl->rows_file);
	free(v->decl->mean);
	free(v->decl->std);
	free(v->decl->mean_file);
	free(v->decl->std_file);
	free(v->xf);
	free(v->decl->xf_own);
	free(v->json);
	free(v->decl->hdf5_path);
	free(v->npy_header);
	free(v->name);
	free(v);
}

/* Two opens of the same data, read the same way. */
static int same_source(const dsv_source_info *a, const dsv_source_info *b)
{
	if (!dsv_source_same_file(a, b) || a->kind != b->kind || a->dtype != b->dtype ||
	    a->ndim != b->ndim || a->chunk_elems != b->chunk_elems || a->nchunks != b->nchunks ||
	    a->stored_bytes != b->stored_bytes)
		return 0;
	return !memcmp(a->shape, b->shape, sizeof(a->shape));
}

static uint64_t file_hash(const dsv_source_info *a)
{
	uint64_t h = dsv_hash_bytes(DSV_HASH_SEED, a->path, strlen(a->path) + 1);
	return a->dataset ? dsv_hash_bytes(h, a->dataset, strlen(a->dataset)) : h;
}

/* The first open of each data, found by its file's hash: open addressing
 * with linear probing, at most half full. */
typedef struct {
	dsv_source **slot;
	uint32_t *key;
	size_t mask;
} share_table;

/* The source already in t that s is another open of (its key in *key),
 * or NULL after s was put in t with key. */
static dsv_source *share_find(share_table *t, dsv_source *s, uint32_t *key)
{
	const dsv_source_info *a = dsv_source_get_info(s);
	size_t i = (size_t)file_hash(a) & t->mask;
	for (; t->slot[i]; i = (i + 1) & t->mask)
		if (same_source(dsv_source_get_info(t->slot[i]), a)) {
			*key = t->key[i];
			return t->slot[i];
		}
	t->slot[i] = s;
	t->key[i] = *key;
	return NULL;
}

void dsv_manifest_share(dsv_manifest *m)
{
	size_t n = 0, cap = 2;
	for (size_t i = 0; i < m->nviews; i++)
		n += m->views[i]->nsources;
	while (cap < 2 * n)
		cap *= 2;
	share_table t = { calloc(cap, sizeof(*t.slot)), calloc(cap, sizeof(*t.key)), cap - 1 };
	for (size_t i = 0; t.slot && t.key && i < m->nviews; i++) {
		dsv_view *v = m->views[i];
		for (size_t k = 0; k < v->nsources; k++) {
			dsv_source *first = share_find(&t, v->sources[k], &v->src_key[k]);
			if (first) {
				dsv_source_close(v->sources[k]);
				v->sources[k] = dsv_source_ref(first);
			}
		}
	}
	free(t.slot);
	free(t.key);
}

int dsv_view_add_source(dsv_view *v, dsv_source *s)
{
	size_t k = v->nsources;
	if (!(k & (k - 1))) { /* 0, 1, 2, 4, ...: full, doubled */
		dsv_source **n = realloc(v->sources, (k ? 2 * k : 1) * sizeof(*n));
		if (!n)
			return DSV_ERR_NOMEM;
		v->sources = n;
	}
	dsv_source_settle(s);
	v->sources[v->nsources++] = s;
	return 0;
}

/* Checks that source i matches source 0: the shape after axis 0, but for
 * the window axis (recordings of different lengths give windows of one
 * shape). Dtypes may differ: each source converts from its own. */
int dsv_view_check_source(const dsv_view *v, size_t i, dsv_errbuf *eb)
{
	const dsv_source_info *a = dsv_source_get_info(v->sources[0]);
	const dsv_source_info *b = dsv_source_get_info(v->sources[i]);
	int wk = !v->has_window ? -1 : v->win_axis < 0 ? v->win_axis + a->ndim : v->win_axis;
	char sa[256], sb[256];
	int same = a->ndim == b->ndim;
	if (v->has_window && (wk < 0 || wk >= a->ndim))
		return 0; /* dsv_view_finish names the window_axis at fault */
	for (int k = 1; same && k < a->ndim; k++)
		same = a->shape[k] == b->shape[k] || k == wk;
	if (same)
		return 0;
	dsv_shape_str(sa, sizeof(sa), a->ndim, a->shape);
	dsv_shape_str(sb, sizeof(sb), b->ndim, b->shape);
	return dsv_errf(eb, DSV_ERR_INVALID,
			"source shape %s does not match the first source's %s after axis 0%s", sb,
			sa, wk > 0 ? " (but for the window axis)" : "");
}

void dsv_shape_str(char *buf, size_t cap, int ndim, const uint64_t *shape)
{
	size_t n = 0;
	n += (size_t)snprintf(buf + n, cap - n, "(");
	for (int k = 0; k < ndim && n < cap; k++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", k ? ", " : "",
				      (unsigned long long)shape[k]);
	if (n < cap)
		snprintf(buf + n, cap - n, "%s)", ndim == 1 ? "," : "");
}

static int build_npy_header(dsv_view *v)
{
	char shape[DSV_MAX_DIMS * 24 + 8];
	char dict[sizeof(shape) + 128];
	dsv_shape_str(shape, sizeof(shape), v->ndim, v->shape);
	int n = snprintf(dict, sizeof(dict),
			 "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
			 dsv_dtype_npy_descr(v->dtype), shape);
	/* magic(6) + version(2) + len(2) + dict + spaces + '\n' = multiple of 64 */
	size_t total = 10 + (size_t)n + 1;
	total = (total + 63) & ~(size_t)63;
	if (total - 10 > 65535)
		return DSV_ERR_OVERFLOW;
	char *h = malloc(total);
	if (!h)
		return DSV_ERR_NOMEM;
	memcpy(h, "\x93NUMPY\x01\x00", 8);
	h[8] = (char)((total - 10) & 0xff);
	h[9] = (char)((total - 10) >> 8);
	memcpy(h + 10, dict, (size_t)n);
	memset(h + 10 + n, ' ', total - 10 - (size_t)n - 1);
	h[total - 1] = '\n';
	v->npy_header = h;
	v->npy_header_len = total;
	return 0;
}

/* A view of token streams alone, no dtype asked for and no transform:
 * served as the token ids they are, int64. */
static int tokens_as_int64(const dsv_view *v)
{
	const struct dsv_view_decl *d = v->decl;
	if (d->dtype_given || d->scale != 1.0 || d->offset != 0.0 || d->nchan || d->mean_file ||
	    d->std_file || d->has_clip)
		return 0;
	for (size_t i = 0; i < v->nsources; i++)
		if (!dsv_source_get_info(v->sources[i])->tokens)
			return 0;
	return 1;
}

int dsv_view_finish(dsv_view *v, dsv_errbuf *eb)
{
	static uint32_t next_key; /* loading is single-threaded */
	uint64_t max_chunk = 0, nindex = 0;
	int err;

	if (v->nsources == 0)
		return dsv_errf(eb, DSV_ERR_INVALID, "view '%s' has no source", v->name);
	v->elem_base = calloc(v->nsources + 1, sizeof(uint64_t));
	v->chunk_base = calloc(v->nsources + 1, sizeof(uint64_t));
	v->src_key = calloc(v->nsources, sizeof(uint32_t));
	if (!v->elem_base || !v->chunk_base || !v->src_key)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < v->nsources; i++) {
		const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
		uint64_t raw;
		v->src_key[i] = next_key++; /* dsv_manifest_share merges shared ones */
		if (dsv_add_u64(v->elem_base[i], si->nelems, &v->elem_base[i + 1]) ||
		    dsv_add_u64(v->chunk_base[i], si->nchunks, &v->chunk_base[i + 1]) ||
		    dsv_mul_u64(si->chunk_elems, dsv_dtype_size(si->dtype), &raw))
			return dsv_errf(eb, DSV_ERR_OVERFLOW, "view '%s' is too large", v->name);
		if (raw > max_chunk)
			max_chunk = raw;
		if (timespec_newer(&si->mtime, &v->mtime))
			v->mtime = si->mtime;
	}
	v->nchunks = v->chunk_base[v->nsources];
	v->decl->max_chunk_raw = max_chunk;
	if (tokens_as_int64(v))
		v->dtype = DSV_I64;
	v->out_esize = dsv_dtype_size(v->dtype);
	if (v->rows_kind == DSV_ROWS_INDEX && (err = dsv_view_load_index(v, &nindex, eb)))
		return err;
	if ((err = dsv_view_geometry(v, nindex, eb)))
		return err;
	v->tile_key = next_key;
	next_key += (uint32_t)v->nsources;
	if (dsv_mul_u64(v->row_elems, v->out_esize, &v->row_bytes) ||
	    dsv_mul_u64(v->nelems, v->out_esize, &v->nbytes) || v->nbytes > INT64_MAX / 2)
		return dsv_errf(eb, DSV_ERR_OVERFLOW, "view '%s' is too large", v->name);
	if ((err = dsv_view_plans(v, eb)))
		return err;
	if ((err = build_npy_header(v)))
		return dsv_errf(eb, err, "view '%s': .npy header too large", v->name);
	return 0;
}

int dsv_view_chunk_ref(const dsv_view *v, uint64_t g, size_t *src, dsv_chunk_ref *ref)
{
	if (g >= v->nchunks)
		return DSV_ERR_INVALID;
	size_t i = dsv_view_source_of(v, v->chunk_base, g);
	*src = i;
	return dsv_source_chunk(v->sources[i], g - v->chunk_base[i], ref);
}

/* The last chunk failure of this thread's reads (dsv_view_take_error). */
static __thread char last_error[5120]; /* a path, a dataset and the words */

/* Logs chunk ref of source src with err, then then (a sentence's end);
 * what: what failed inside a grid's band. A failure (then "") is also
 * kept as this thread's last. */
static void log_chunk(const dsv_view *v, size_t src, const dsv_chunk_ref *ref, int err,
		      const char *what, const char *then)
{
	const dsv_source_info *info = dsv_source_get_info(v->sources[src]);
	uint64_t row = info->row_elems ? info->row_elems : 1;
	/* the last row, as verify and pack name them */
	unsigned long long first = ref->elem_start / row,
			   last = (ref->elem_start + (ref->nelems ? ref->nelems : 1) + row - 1) /
					  row -
				  1;
	char msg[sizeof(last_error)];
	/* the kernel retries a failed read: once a minute per chunk and reason */
	unsigned long long key = (unsigned long long)(uintptr_t)v * 31 + src;
	key = (key * 1000003 + ref->index) * 131 + (unsigned)err + (*then ? 64 : 0);
	if (ref->grid) /* a band of a grid's chunks: name the one that failed */
		snprintf(msg, sizeof(msg), "view %s: source %s%s%s rows %llu-%llu: %s: %s", v->name,
			 info->path, info->dataset ? ":" : "", info->dataset ? info->dataset : "",
			 first, last, what, dsv_strerror(err));
	else
		snprintf(msg, sizeof(msg),
			 "view %s: source %s%s%s chunk %llu (rows %llu-%llu, file offset %llu, "
			 "%llu bytes): %s%s",
			 v->name, info->path, info->dataset ? ":" : "",
			 info->dataset ? info->dataset : "", (unsigned long long)ref->index, first,
			 last, (unsigned long long)ref->offset,
			 (unsigned long long)ref->stored_size, dsv_strerror(err), then);
	dsv_log_limited(key, DSV_LOG_ERROR, "%s", msg);
	if (!*then)
		memcpy(last_error, msg, sizeof(msg));
}

const char *dsv_view_take_error(void)
{
	static __thread char taken[sizeof(last_error)];
	memcpy(taken, last_error, sizeof(taken));
	last_error[0] = '\0';
	return taken;
}

void dsv_view_log_chunk_error(const dsv_view *v, size_t src, const dsv_chunk_ref *ref, int err,
			      const dsv_errbuf *eb)
{
	log_chunk(v, src, ref, err, eb && eb->code ? eb->msg : "", "");
}

void dsv_view_log_block_error(const dsv_view *v, size_t src, const dsv_chunk_ref *ref, int err)
{
	log_chunk(v, src, ref, err, "", " in a block or the block table; reading the chunk whole");
}
