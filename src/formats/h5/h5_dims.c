/*
 * A dataset's axis names from HDF5 dimension scales (the H5DS convention:
 * DIMENSION_LIST, REFERENCE_LIST, CLASS, NAME, DIMENSION_LABELS; h5py's
 * dims[i].label, make_scale and attach_scale, netCDF-4 and xarray write
 * them), read with the HDF5 high-level library's own H5DS calls, into
 * info.dim_names as Zarr's dimension_names are.
 *
 * An axis's name is, first found: its label (dims[i].label = "time"); the
 * NAME of the first scale attached to it (make_scale("time")); that
 * scale's own name in the file when its NAME is netCDF-4's placeholder
 * for a dimension without a variable ("This is a netCDF dimension but not
 * a netCDF variable"), or when it has none; else null. A dataset without
 * labels or scales has no names (NULL), and a damaged or odd convention
 * passes over the axis rather than failing the open.
 */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "formats/h5/h5_src.h"

#define DIM_NAME_MAX 256
#define NETCDF_PLACEHOLDER "This is a netCDF dimension but not a netCDF variable"

typedef struct scale_name {
	char name[DIM_NAME_MAX];
} scale_name;

/* H5DSiterate_scales' visitor: the first scale's name, then stop. */
static herr_t first_scale(hid_t dset, unsigned dim, hid_t scale, void *arg)
{
	scale_name *out = arg;
	char path[DIM_NAME_MAX];
	ssize_t n = H5DSget_scale_name(scale, out->name, sizeof(out->name));
	(void)dset;
	(void)dim;
	if (n > 0 && (size_t)n < sizeof(out->name) &&
	    strncmp(out->name, NETCDF_PLACEHOLDER, strlen(NETCDF_PLACEHOLDER)))
		return 1;
	out->name[0] = '\0';
	n = H5Iget_name(scale, path, sizeof(path));
	if (n > 0 && (size_t)n < sizeof(path)) {
		const char *base = strrchr(path, '/');
		snprintf(out->name, sizeof(out->name), "%s", base ? base + 1 : path);
	}
	return 1;
}

/* Axis k's name into name (cap bytes), or "" for none. */
static void axis_name(hid_t dset, unsigned k, char *name, size_t cap, int has_list)
{
	ssize_t n = H5DSget_label(dset, k, name, cap);
	scale_name sn = { { 0 } };
	int idx = 0;

	if (n > 0 && (size_t)n < cap)
		return;
	name[0] = '\0';
	if (!has_list || H5DSget_num_scales(dset, k) <= 0)
		return;
	if (H5DSiterate_scales(dset, k, &idx, first_scale, &sn) > 0)
		snprintf(name, cap, "%s", sn.name);
}

void dsv_h5_dim_names(dsv_source *s, hid_t dset)
{
	int has_list = H5Aexists(dset, "DIMENSION_LIST") > 0;
	int has_labels = H5Aexists(dset, "DIMENSION_LABELS") > 0;
	json_t *names;
	int named = 0;

	if ((!has_list && !has_labels) || !(names = json_array()))
		return;
	for (int k = 0; k < s->info.ndim; k++) {
		char name[DIM_NAME_MAX];
		axis_name(dset, (unsigned)k, name, sizeof(name), has_list);
		json_t *v = name[0] ? json_string(name) : json_null();
		if (!v) /* not UTF-8: the axis stays unnamed */
			v = json_null();
		named += !json_is_null(v);
		json_array_append_new(names, v);
	}
	if (named)
		s->info.dim_names = s->dims_json = json_dumps(names, JSON_COMPACT);
	json_decref(names);
}
