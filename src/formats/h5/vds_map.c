/*
 * The mappings of an HDF5 virtual dataset laid out along axis 0 (h5_vds.h):
 * pure arithmetic on the selections the library reports, no HDF5 calls.
 *
 * Taken: a virtual selection of a block of whole rows (every other axis
 * whole) from a whole source dataset of the same row shape, as h5py's
 * VirtualLayout writes `layout[a:b] = VirtualSource(...)`. Refused, naming
 * the form: points or irregular hyperslabs, strided or unlimited
 * hyperslabs, selections of a part of a row, a part of the source's rows,
 * mappings past the dataset's rows or over another's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/h5/h5_vds.h"

/* A hyperslab's extent along axis k as one run [*lo, *lo + *len), or the
 * form that is not one. */
static const char *axis_run(const dsv_vds_sel *s, int k, uint64_t *lo, uint64_t *len)
{
	uint64_t c = s->count[k], b = s->block[k];

	if (c == DSV_VDS_UNLIMITED || b == DSV_VDS_UNLIMITED)
		return "an unlimited selection";
	*lo = s->start[k];
	if (c == 1)
		*len = b;
	else if (b == 1 && s->stride[k] == 1)
		*len = c;
	else if (s->stride[k] == b && b && c <= UINT64_MAX / b)
		*len = c * b;
	else
		return "a strided selection";
	if (*len > UINT64_MAX - *lo)
		return "a selection past the extent";
	return NULL;
}

/* One run along every axis of sel into lo and len; an ALL selection is
 * every element of dims (*all set). @return NULL, or the form that is
 * not runs. */
static const char *runs(const dsv_vds_sel *s, int ndim, const uint64_t *dims, uint64_t *lo,
			uint64_t *len, int *all)
{
	*all = s->kind == DSV_VDS_SEL_ALL;
	for (int k = 0; *all && k < ndim; k++) {
		lo[k] = 0;
		len[k] = dims[k];
	}
	if (*all)
		return NULL;
	if (s->kind != DSV_VDS_SEL_HYPER || s->ndim != ndim)
		return "a point or irregular selection";
	for (int k = 0; k < ndim; k++) {
		const char *bad = axis_run(s, k, &lo[k], &len[k]);
		if (bad)
			return bad;
	}
	return NULL;
}

/* Mapping m's virtual rows: a block of whole rows, and a source selection
 * of one run along each axis. */
static const char *map_rows(int ndim, const uint64_t *dims, const dsv_vds_map *m, uint64_t *r0,
			    uint64_t *nr, char *buf, size_t cap)
{
	uint64_t lo[DSV_MAX_DIMS], len[DSV_MAX_DIMS];
	const char *bad;
	int all;

	if (m->vsel.kind != DSV_VDS_SEL_ALL && m->vsel.ndim != ndim)
		return "a virtual selection of another rank";
	if ((bad = runs(&m->vsel, ndim, dims, lo, len, &all)))
		return bad;
	for (int k = 0; k < ndim; k++)
		if (lo[k] > dims[k] || len[k] > dims[k] - lo[k])
			return "a selection past the dataset's extent";
	for (int k = 1; k < ndim; k++)
		if (lo[k] != 0 || len[k] != dims[k]) {
			snprintf(buf, cap, "a selection of part of axis %d (not whole rows)", k);
			return buf;
		}
	*r0 = lo[0];
	*nr = len[0];
	if (m->ssel.kind != DSV_VDS_SEL_ALL && (bad = runs(&m->ssel, ndim, dims, lo, len, &all))) {
		snprintf(buf, cap, "%s in the source",
			 m->ssel.ndim != ndim && m->ssel.kind == DSV_VDS_SEL_HYPER
				 ? "a selection of another rank"
				 : bad);
		return buf;
	}
	return NULL;
}

const char *dsv_vds_check_source(const dsv_vds_map *m, int ndim, const uint64_t *dims,
				 uint64_t rows, int src_ndim, const uint64_t *src_shape, char *buf,
				 size_t cap)
{
	uint64_t lo[DSV_MAX_DIMS], len[DSV_MAX_DIMS];
	int all;

	if (src_ndim != ndim) {
		snprintf(buf, cap, "a source of %d axes for a dataset of %d", src_ndim, ndim);
		return buf;
	}
	for (int k = 1; k < ndim; k++)
		if (src_shape[k] != dims[k]) {
			snprintf(buf, cap, "a source whose axis %d is %llu long, not %llu", k,
				 (unsigned long long)src_shape[k], (unsigned long long)dims[k]);
			return buf;
		}
	if (runs(&m->ssel, ndim, src_shape, lo, len, &all))
		return "a point or irregular selection in the source";
	for (int k = 0; k < ndim; k++)
		if (lo[k] != 0 || len[k] != src_shape[k]) {
			snprintf(buf, cap,
				 "%s [%llu, %llu) of a source of %llu along axis %d (not the whole "
				 "source)",
				 k ? "a part" : "rows", (unsigned long long)lo[k],
				 (unsigned long long)(lo[k] + len[k]),
				 (unsigned long long)src_shape[k], k);
			return buf;
		}
	if (src_shape[0] != rows) {
		snprintf(buf, cap, "a source of %llu rows for %llu rows",
			 (unsigned long long)src_shape[0], (unsigned long long)rows);
		return buf;
	}
	return NULL;
}

static int by_row(const void *a, const void *b)
{
	const dsv_vds_piece *x = a, *y = b;
	return x->row0 < y->row0 ? -1 : x->row0 > y->row0;
}

int dsv_vds_plan(int ndim, const uint64_t *dims, const dsv_vds_map *maps, size_t n,
		 dsv_vds_piece *out, size_t *npieces, size_t *bad, char *why, size_t cap)
{
	uint64_t end = 0, nrows = ndim ? dims[0] : 1;
	size_t np = 0, taken = 0;
	char buf[160];

	for (size_t i = 0; i < n; i++) {
		uint64_t r0 = 0, nr = 0;
		const char *form = map_rows(ndim, dims, &maps[i], &r0, &nr, buf, sizeof(buf));
		if (form) {
			*bad = i;
			snprintf(why, cap, "%s", form);
			return DSV_ERR_UNSUPPORTED;
		}
		if (nr) /* an empty mapping maps nothing */
			out[n + taken++] = (dsv_vds_piece){ r0, nr, (long)i };
	}
	qsort(out + n, taken, sizeof(*out), by_row);
	for (size_t i = 0; i < taken; i++) {
		dsv_vds_piece p = out[n + i];
		if (p.row0 < end) {
			*bad = (size_t)p.map;
			snprintf(why, cap, "rows %llu to %llu, which overlap mapping %ld's",
				 (unsigned long long)p.row0, (unsigned long long)(p.row0 + p.rows),
				 out[np - 1].map);
			return DSV_ERR_UNSUPPORTED;
		}
		if (p.row0 > end)
			out[np++] = (dsv_vds_piece){ end, p.row0 - end, -1 };
		out[np++] = p;
		end = p.row0 + p.rows;
	}
	if (end < nrows)
		out[np++] = (dsv_vds_piece){ end, nrows - end, -1 };
	*npieces = np;
	return 0;
}

char *dsv_vds_source_file(const char *vds_path, const char *name)
{
	const char *slash = strrchr(vds_path, '/'), *base = name;
	struct stat st;
	char *out;

	if (!strcmp(name, "."))
		return strdup(vds_path);
	if (name[0] == '/') {
		if (stat(name, &st) == 0)
			return strdup(name);
		base = strrchr(name, '/') + 1;
	}
	if (!slash)
		return strdup(base);
	if (asprintf(&out, "%.*s/%s", (int)(slash - vds_path), vds_path, base) < 0)
		return NULL;
	return out;
}
