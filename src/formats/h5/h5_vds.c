/*
 * HDF5 virtual datasets as the sources a view concatenates (h5_vds.h).
 *
 * The open of the virtual dataset itself (h5_source.c, with its fork
 * probe and read-only driver) reads the mappings from its creation
 * property list: the file and dataset each names, its selections, the
 * fill value. vds_map.c lays them out along axis 0. Each source is then
 * opened as its own HDF5 source, through every check a manifest's would
 * get; rows no mapping covers, and those of a source file or dataset that
 * does not exist (the library reads those as the fill value too), become
 * fill sources: a grid of one-row chunks, none ever written (grid.c fills
 * them). The library never reads through the mappings itself.
 */
#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/str.h"
#include "formats/h5/h5.h"
#include "formats/h5/h5_src.h"
#include "formats/h5/h5_vds.h"
#include "source/source_i.h"

/* A selection of the library's into sel. */
static int read_sel(hid_t space, dsv_vds_sel *sel)
{
	hsize_t dims[DSV_MAX_DIMS], st[DSV_MAX_DIMS], sd[DSV_MAX_DIMS], c[DSV_MAX_DIMS],
		b[DSV_MAX_DIMS];
	int nd = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);

	memset(sel, 0, sizeof(*sel));
	sel->kind = DSV_VDS_SEL_OTHER;
	if (nd < 0 || nd > DSV_MAX_DIMS || H5Sget_simple_extent_dims(space, dims, NULL) != nd)
		return -1;
	sel->ndim = nd;
	for (int k = 0; k < nd; k++)
		sel->dims[k] = dims[k];
	H5S_sel_type t = H5Sget_select_type(space);
	if (t == H5S_SEL_ALL)
		sel->kind = DSV_VDS_SEL_ALL;
	if (t != H5S_SEL_HYPERSLABS || H5Sis_regular_hyperslab(space) <= 0 ||
	    H5Sget_regular_hyperslab(space, st, sd, c, b) < 0)
		return 0;
	sel->kind = DSV_VDS_SEL_HYPER;
	for (int k = 0; k < nd; k++) {
		sel->start[k] = st[k];
		sel->stride[k] = sd[k];
		sel->count[k] = c[k] == H5S_UNLIMITED ? DSV_VDS_UNLIMITED : c[k];
		sel->block[k] = b[k] == H5S_UNLIMITED ? DSV_VDS_UNLIMITED : b[k];
	}
	return 0;
}

/* A name the library keeps for mapping i (get: H5Pget_virtual_filename
 * or _dsetname), in a new string; NULL when it cannot be read. */
static char *read_name(hid_t dcpl, size_t i, ssize_t (*get)(hid_t, size_t, char *, size_t))
{
	ssize_t len = get(dcpl, i, NULL, 0);
	char *s = len >= 0 && len < 4096 ? malloc((size_t)len + 1) : NULL;
	if (s && get(dcpl, i, s, (size_t)len + 1) != len) {
		free(s);
		s = NULL;
	}
	return s;
}

void dsv_h5_vds_free(dsv_h5_vds *v)
{
	for (size_t i = 0; v->files && i < v->n; i++)
		free(v->files[i]);
	for (size_t i = 0; v->dsets && i < v->n; i++)
		free(v->dsets[i]);
	free(v->files);
	free(v->dsets);
	free(v->maps);
	memset(v, 0, sizeof(*v));
}

int dsv_h5_read_vds(dsv_h5_open *o, const char *path, const char *dname, dsv_h5_vds *v,
		    dsv_errbuf *eb)
{
	hsize_t dims[DSV_MAX_DIMS];
	size_t n = 0;

	v->found = 1;
	v->dtype = o->s->info.dtype;
	if (o->conv)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "virtual dataset of %s elements refused (its sources are "
				   "read as stored)",
				   o->conv_why);
	v->ndim = H5Sget_simple_extent_ndims(o->space);
	if (v->ndim < 1 || v->ndim > DSV_MAX_DIMS ||
	    H5Sget_simple_extent_dims(o->space, dims, NULL) != v->ndim)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "virtual dataset of rank %d refused", v->ndim);
	for (int k = 0; k < v->ndim; k++)
		v->dims[k] = dims[k];
	if (H5Pget_virtual_count(o->dcpl, &n) < 0)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "unreadable virtual mappings");
	if (n > DSV_VDS_MAX_MAPS)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "virtual dataset of %zu mappings refused (at most %d)", n,
				   DSV_VDS_MAX_MAPS);
	hid_t mtype = dsv_h5_mem_type(o->ftype, v->dtype);
	if (mtype < 0 || H5Tget_size(mtype) > sizeof(v->fill) ||
	    H5Pget_fill_value(o->dcpl, mtype, v->fill) < 0)
		memset(v->fill, 0, sizeof(v->fill));
	if (mtype >= 0)
		H5Tclose(mtype);
	v->maps = calloc(n ? n : 1, sizeof(*v->maps));
	v->files = calloc(n ? n : 1, sizeof(*v->files));
	v->dsets = calloc(n ? n : 1, sizeof(*v->dsets));
	if (!v->maps || !v->files || !v->dsets)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	v->n = n;
	for (size_t i = 0; i < n; i++) {
		hid_t vs = H5Pget_virtual_vspace(o->dcpl, i),
		      ss = H5Pget_virtual_srcspace(o->dcpl, i);
		int bad = read_sel(vs, &v->maps[i].vsel) || read_sel(ss, &v->maps[i].ssel);
		if (vs >= 0)
			H5Sclose(vs);
		if (ss >= 0)
			H5Sclose(ss);
		v->files[i] = read_name(o->dcpl, i, H5Pget_virtual_filename);
		v->dsets[i] = read_name(o->dcpl, i, H5Pget_virtual_dsetname);
		if (bad || !v->files[i] || !v->dsets[i])
			return dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname,
					   "unreadable virtual mapping %zu", i);
	}
	return 0;
}

/* Every grid chunk of a fill source is one never written. */
static int fill_chunk(const dsv_source *s, dsv_grid_io *io, const uint64_t *idx, void *dst,
		      size_t size)
{
	(void)s, (void)io, (void)idx, (void)dst, (void)size;
	return DSV_ERR_NOTFOUND;
}

/* rows rows of v's fill value, a source of path's dataset dname (why:
 * what they stand for, for info). */
static int fill_source(const char *path, const char *dname, const dsv_h5_vds *v, uint64_t rows,
		       const char *why, dsv_source **out, dsv_errbuf *eb)
{
	uint64_t shape[DSV_MAX_DIMS];
	dsv_source *s = dsv_source_alloc(path, dname);
	struct stat st;

	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	memcpy(shape, v->dims, sizeof(shape));
	shape[0] = rows;
	s->info.kind = DSV_SRC_FILL;
	s->info.dtype = v->dtype;
	if (dsv_source_set_shape(s, v->ndim, shape)) {
		dsv_source_close(s);
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, dname, "shape too large");
	}
	s->grid = s->chunked = 1;
	if (dsv_source_dims(s)) {
		dsv_source_close(s);
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	}
	for (int k = 0; k < v->ndim; k++) {
		s->more->gshape[k] = k ? shape[k] : 1;
		s->more->gcount[k] = k ? 1 : rows;
	}
	memcpy(s->more->g_fill, v->fill, sizeof(s->more->g_fill));
	s->more->grid_chunk = fill_chunk;
	dsv_grid_set_bands(s);
	dsv_source_why(s, "%s", why);
	if (stat(path, &st) == 0)
		s->info.mtime = st.st_mtim;
	*out = s;
	return 0;
}

/* The source of mapping i (rows of it), opened as any HDF5 source, or
 * fill rows where its file or dataset does not exist. */
static int open_part(const char *path, const char *dname, const dsv_h5_vds *v, size_t i,
		     uint64_t rows, dsv_source **out, dsv_errbuf *eb)
{
	char *file = dsv_vds_source_file(path, v->files[i]), why[160];
	dsv_h5_vds inner = { 0 };
	dsv_errbuf sub;
	int err;

	if (!file)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if (dsv_url_scheme_len(v->files[i])) {
		free(file);
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "virtual mapping %zu: a source in object storage (%s)", i,
				   v->files[i]);
	}
	err = dsv_h5_open_any(file, v->dsets[i], out, &inner, &sub);
	if (!err && inner.found)
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				  "virtual mapping %zu: its source %s:%s is itself a "
				  "virtual dataset",
				  i, file, v->dsets[i]);
	else if (err == DSV_ERR_NOTFOUND) {
		snprintf(why, sizeof(why), "fill value: %.80s", sub.msg);
		err = fill_source(path, dname, v, rows, why, out, eb);
	} else if (err)
		err = dsv_errf_at(eb, err, path, dname, "virtual mapping %zu: %s", i, sub.msg);
	dsv_h5_vds_free(&inner);
	if (err || (*out)->info.kind == DSV_SRC_FILL) {
		free(file);
		return err;
	}
	const dsv_source_info *in = dsv_source_get_info(*out);
	const char *bad = in->dtype != v->dtype
				  ? "a source of another element type"
				  : dsv_vds_check_source(&v->maps[i], v->ndim, v->dims, rows,
							 in->ndim, in->shape, why, sizeof(why));
	if (bad) {
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				  "virtual mapping %zu: %s (%s:%s is %s, the virtual "
				  "dataset %s)",
				  i, bad, file, v->dsets[i], dsv_dtype_name(in->dtype),
				  dsv_dtype_name(v->dtype));
		dsv_source_close(*out);
		*out = NULL;
	}
	free(file);
	return err;
}

void dsv_h5_close_parts(dsv_source **parts, size_t n)
{
	for (size_t i = 0; parts && i < n; i++)
		dsv_source_close(parts[i]);
	free(parts);
}

/* The parts of virtual dataset v of path, as its mappings lay it out. */
static int expand(const char *path, const char *dname, const dsv_h5_vds *v, dsv_source ***out,
		  size_t *n, dsv_errbuf *eb)
{
	dsv_vds_piece *pc = calloc(2 * v->n + 1, sizeof(*pc));
	size_t np = 0, bad = 0;
	char why[192];
	int err;

	if (!pc)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	err = dsv_vds_plan(v->ndim, v->dims, v->maps, v->n, pc, &np, &bad, why, sizeof(why));
	if (err)
		err = dsv_errf_at(eb, err, path, dname,
				  "virtual mapping %zu: %s (dsview serves only mappings of "
				  "whole rows, in blocks along axis 0, of whole source datasets)",
				  bad, why);
	if (!err && np == 0) /* no rows at all */
		pc[np++] = (dsv_vds_piece){ 0, 0, -1 };
	dsv_source **parts = err ? NULL : calloc(np, sizeof(*parts));
	if (!err && !parts)
		err = dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	for (size_t k = 0; !err && k < np; k++)
		err = pc[k].map < 0
			      ? fill_source(path, dname, v, pc[k].rows,
					    "fill value: rows no mapping covers", &parts[k], eb)
			      : open_part(path, dname, v, (size_t)pc[k].map, pc[k].rows, &parts[k],
					  eb);
	free(pc);
	if (err) {
		dsv_h5_close_parts(parts, np);
		return err;
	}
	*out = parts;
	*n = np;
	return 0;
}

int dsv_h5_open_parts(const char *path, const char *dataset, dsv_source ***out, size_t *n,
		      dsv_errbuf *eb)
{
	dsv_h5_vds v = { 0 };
	dsv_source *one = NULL;
	int err = dsv_h5_open_any(path, dataset, &one, &v, eb);

	*out = NULL;
	*n = 0;
	if (!err && !v.found) {
		*out = malloc(sizeof(**out));
		if (!*out) {
			dsv_source_close(one);
			return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
		}
		(*out)[0] = one;
		*n = 1;
	} else if (!err && dsv_url_scheme_len(path))
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dataset,
				  "virtual dataset in object storage refused (its sources would "
				  "be other objects)");
	else if (!err)
		err = expand(path, dataset, &v, out, n, eb);
	dsv_h5_vds_free(&v);
	return err;
}
