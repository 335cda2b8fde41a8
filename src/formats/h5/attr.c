/*
 * Attributes, and scalar datasets: the metadata users keep beside their
 * arrays (units, sampling rates, subject ids, the dsview store's JSON),
 * read as plain values. Sizes
 * come from the file, so every read is capped before it allocates: at most
 * DSV_H5_ATTRS_MAX attributes an object, DSV_H5_ATTR_MAX_ELEMS numbers an
 * attribute, DSV_H5_MAX_ATTR bytes a string. What is not a number, an
 * array of numbers or one string (compound, references, vlen sequences)
 * is passed over.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/h5/h5.h"

/* An attribute and a dataset are read alike: these pick the call. */
static int is_attr(hid_t obj)
{
	return H5Iget_type(obj) == H5I_ATTR;
}

static hid_t type_of(hid_t obj)
{
	return is_attr(obj) ? H5Aget_type(obj) : H5Dget_type(obj);
}

static hid_t space_of(hid_t obj)
{
	return is_attr(obj) ? H5Aget_space(obj) : H5Dget_space(obj);
}

static herr_t read_all(hid_t obj, hid_t mtype, void *buf)
{
	return is_attr(obj) ? H5Aread(obj, mtype, buf)
			    : H5Dread(obj, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
}

char *dsv_h5_attr_string(hid_t attr, size_t max)
{
	hid_t ftype = type_of(attr), space = space_of(attr), mtype = -1;
	char *out = NULL;

	if (ftype < 0 || space < 0 || H5Tget_class(ftype) != H5T_STRING ||
	    H5Sget_simple_extent_npoints(space) != 1 || (mtype = H5Tcopy(H5T_C_S1)) < 0 ||
	    H5Tset_cset(mtype, H5Tget_cset(ftype)) < 0)
		goto out;
	if (H5Tis_variable_str(ftype) > 0) {
		char *p = NULL;
		if (H5Tset_size(mtype, H5T_VARIABLE) >= 0 && read_all(attr, mtype, &p) >= 0 && p) {
			size_t n = strnlen(p, max + 1);
			if (n <= max)
				out = strndup(p, n);
		}
		if (p)
			H5free_memory(p);
	} else {
		size_t n = H5Tget_size(ftype);
		/* One byte more in memory so the library NUL-terminates. */
		if (n == 0 || n > max || H5Tset_size(mtype, n + 1) < 0 ||
		    H5Tset_strpad(mtype, H5T_STR_NULLTERM) < 0 || !(out = calloc(1, n + 2)))
			goto out;
		if (read_all(attr, mtype, out) < 0) {
			free(out);
			out = NULL;
		}
	}
out:
	if (mtype >= 0)
		H5Tclose(mtype);
	if (space >= 0)
		H5Sclose(space);
	if (ftype >= 0)
		H5Tclose(ftype);
	return out;
}

static json_t *number(double d)
{
	return isfinite(d) ? json_real(d) : json_null(); /* JSON has no NaN or infinity */
}

/* One attribute's (or small dataset's) value: a number or a string for one
 * element, an array of numbers (flattened, C order) for more; NULL to pass
 * it over. */
static json_t *attr_value(hid_t attr)
{
	hid_t ftype = type_of(attr), space = space_of(attr);
	hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
	H5T_class_t cls = ftype >= 0 ? H5Tget_class(ftype) : H5T_NO_CLASS;
	json_t *v = NULL;

	if (cls == H5T_STRING) {
		char *s = dsv_h5_attr_string(attr, DSV_H5_MAX_ATTR);
		v = s ? json_string(s) : NULL; /* NULL too for bytes that are not UTF-8 */
		free(s);
	} else if ((cls == H5T_INTEGER || cls == H5T_FLOAT || cls == H5T_ENUM) && n >= 1 &&
		   n <= DSV_H5_ATTR_MAX_ELEMS) {
		int sgn = cls != H5T_INTEGER || H5Tget_sign(ftype) == H5T_SGN_2;
		hid_t mtype = cls == H5T_FLOAT ? H5T_NATIVE_DOUBLE
			      : sgn            ? H5T_NATIVE_INT64
					       : H5T_NATIVE_UINT64;
		union {
			double d;
			int64_t i;
			uint64_t u;
		} *buf = calloc((size_t)n, sizeof(*buf));
		if (cls == H5T_ENUM)
			mtype = H5T_NATIVE_INT64; /* its integer, as h5py reads it */
		if (buf && read_all(attr, mtype, buf) >= 0) {
			json_t *arr = n > 1 ? json_array() : NULL;
			for (hssize_t k = 0; k < n; k++) {
				json_t *x = mtype == H5T_NATIVE_DOUBLE  ? number(buf[k].d)
					    : mtype == H5T_NATIVE_INT64 ? json_integer(buf[k].i)
					    : buf[k].u <= INT64_MAX
						    ? json_integer((json_int_t)buf[k].u)
						    : json_real((double)buf[k].u);
				if (!arr) {
					v = x;
					break;
				}
				json_array_append_new(arr, x);
			}
			if (arr)
				v = arr;
		}
		free(buf);
	}
	if (space >= 0)
		H5Sclose(space);
	if (ftype >= 0)
		H5Tclose(ftype);
	return v;
}

typedef struct attrs_ctx {
	json_t *obj;
	int seen;
} attrs_ctx;

static herr_t each_attr(hid_t obj, const char *name, const H5A_info_t *info, void *arg)
{
	attrs_ctx *c = arg;
	hid_t attr;
	(void)info;
	if (++c->seen > DSV_H5_ATTRS_MAX)
		return 1; /* stop: enough */
	if ((attr = H5Aopen(obj, name, H5P_DEFAULT)) < 0)
		return 0;
	json_t *v = attr_value(attr);
	H5Aclose(attr);
	if (v && json_object_set_new(c->obj, name, v) < 0)
		return 0; /* a name that is not UTF-8: jansson took v and freed it */
	return 0;
}

char *dsv_h5_attrs_json(hid_t obj)
{
	attrs_ctx c = { json_object(), 0 };
	hsize_t idx = 0;
	char *text = NULL;

	if (!c.obj)
		return NULL;
	(void)H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, each_attr, &c);
	if (json_object_size(c.obj))
		text = json_dumps(c.obj,
				  JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(c.obj);
	return text;
}

char *dsv_h5_value_json(hid_t obj)
{
	json_t *v = attr_value(obj);
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))
		       : NULL;
	json_decref(v);
	return text;
}
