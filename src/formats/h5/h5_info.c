/*
 * HDF5 dataset descriptions for `dsview info` (see dsview/h5info.h).
 *
 * Everything here reads headers only: the dataset's type, dataspace and
 * creation property list, its storage size and one attribute. Serving
 * decisions (fast path, library fallback, refusal) stay in h5_source.c; info asks
 * dsv_source_open_h5 for those and this file for the rest.
 */
/* The 1.10 names of H5Lget_info's struct, as in h5_source.c. */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "dsview/codec.h"
#include "dsview/h5info.h"
#include "formats/h5/h5.h"
#include "formats/h5/h5_src.h"

#define INFO_MAX_PATH 4096

const char *dsv_h5_layout_name(dsv_h5_layout l)
{
	switch (l) {
	case DSV_H5_LAYOUT_CONTIGUOUS: return "contiguous";
	case DSV_H5_LAYOUT_CHUNKED: return "chunked";
	case DSV_H5_LAYOUT_COMPACT: return "compact";
	case DSV_H5_LAYOUT_VIRTUAL: return "virtual";
	case DSV_H5_LAYOUT_OTHER: break;
	}
	return "unknown";
}

const char *dsv_h5_filter_name(int id)
{
	switch (id) {
	case H5Z_FILTER_DEFLATE: return "deflate";
	case H5Z_FILTER_SHUFFLE: return "shuffle";
	case H5Z_FILTER_FLETCHER32: return "fletcher32";
	case H5Z_FILTER_SZIP: return "szip";
	case H5Z_FILTER_NBIT: return "nbit";
	case H5Z_FILTER_SCALEOFFSET: return "scaleoffset";
	case 307: return "bzip2";
	case 32000: return "lzf";
	case 32001: return "blosc";
	case DSV_H5Z_FILTER_LZ4: return "lz4";
	case 32008: return "bitshuffle";
	case 32013: return "zfp";
	case 32015: return "zstd";
	case 32017: return "sz";
	case 32026: return "blosc2";
	}
	return NULL;
}

void dsv_h5_desc_free(dsv_h5_desc *d)
{
	if (!d)
		return;
	free(d->store_attr);
	free(d->value_json);
	d->store_attr = d->value_json = NULL;
}

int dsv_h5_check_file(const char *path, dsv_errbuf *eb)
{
	hid_t file;
	int err = 0;

	if ((err = dsv_h5_check_input(path, dsv_h5_probe_all, eb)))
		return err;
	if (dsv_h5_lock() < 0) {
		err = dsv_errf_at(eb, DSV_ERR_INTERNAL, path, NULL, "HDF5 setup failed");
	} else if ((file = H5Fopen(path, H5F_ACC_RDONLY, dsv_h5_ro_fapl())) < 0) {
		err = dsv_h5_open_failed(path, eb);
	} else {
		H5Fclose(file);
	}
	dsv_h5_unlock();
	return err;
}

static const char *type_class_name(H5T_class_t cls)
{
	switch (cls) {
	case H5T_INTEGER: return "integer";
	case H5T_FLOAT: return "float";
	case H5T_STRING: return "string";
	case H5T_COMPOUND: return "compound";
	case H5T_ENUM: return "enum";
	case H5T_BITFIELD: return "bitfield";
	case H5T_OPAQUE: return "opaque";
	case H5T_REFERENCE: return "reference";
	case H5T_VLEN: return "variable-length";
	case H5T_ARRAY: return "array";
	case H5T_TIME: return "time";
	default: return "unknown";
	}
}

/* The element type as a user would name it. */
static void describe_type(hid_t t, char *buf, size_t cap)
{
	H5T_class_t cls = H5Tget_class(t);
	size_t size = H5Tget_size(t);
	const char *be = size > 1 && H5Tget_order(t) == H5T_ORDER_BE ? "big-endian " : "";
	size_t spos, epos, esize, mpos, msize;

	switch (cls) {
	case H5T_INTEGER:
		snprintf(buf, cap, "%s%sint%zu", be, H5Tget_sign(t) == H5T_SGN_2 ? "" : "u",
			 size * 8);
		return;
	case H5T_FLOAT:
		if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0)
			esize = msize = 0;
		/* bfloat16 is a 2-byte float with float32's exponent. */
		if (size == 2 && esize == 8 && msize == 7)
			snprintf(buf, cap, "%sbfloat16", be);
		else if ((size == 2 && esize == 5 && msize == 10) ||
			 (size == 4 && esize == 8 && msize == 23) ||
			 (size == 8 && esize == 11 && msize == 52))
			snprintf(buf, cap, "%sfloat%zu", be, size * 8);
		else if (size > 8)
			snprintf(buf, cap, "%zu-byte float (long double or quad)", size);
		else
			snprintf(buf, cap, "%zu-byte float (non-IEEE)", size);
		return;
	case H5T_STRING:
		if (H5Tis_variable_str(t) > 0)
			snprintf(buf, cap, "string (variable length)");
		else
			snprintf(buf, cap, "string (%zu bytes)", size);
		return;
	case H5T_COMPOUND: snprintf(buf, cap, "compound (%zu bytes)", size); return;
	case H5T_ENUM: {
		/* served as its base integer: say which */
		char base[64] = "?";
		hid_t sup = H5Tget_super(t);
		if (sup >= 0) {
			describe_type(sup, base, sizeof(base));
			H5Tclose(sup);
		}
		snprintf(buf, cap, "enum of %s", base);
		return;
	}
	case H5T_BITFIELD: snprintf(buf, cap, "%sbitfield (%zu bytes)", be, size); return;
	case H5T_OPAQUE: snprintf(buf, cap, "opaque (%zu bytes)", size); return;
	case H5T_REFERENCE: snprintf(buf, cap, "reference"); return;
	case H5T_VLEN: snprintf(buf, cap, "variable-length sequence"); return;
	case H5T_ARRAY: snprintf(buf, cap, "array (%zu bytes)", size); return;
	case H5T_TIME: snprintf(buf, cap, "time"); return;
	default: snprintf(buf, cap, "unknown type"); return;
	}
}

/*
 * Reads the store attribute when the dataset has one. It must be a single
 * string (variable or fixed length, as pack and h5py write it); anything
 * else sets store_attr_bad rather than failing the description.
 */
static void read_store_attr(hid_t dset, dsv_h5_desc *d)
{
	hid_t attr;

	if (H5Aexists(dset, DSV_STORE_ATTR) <= 0)
		return;
	if ((attr = H5Aopen(dset, DSV_STORE_ATTR, H5P_DEFAULT)) >= 0) {
		d->store_attr = dsv_h5_attr_string(attr, DSV_H5_MAX_ATTR);
		H5Aclose(attr);
	}
	d->store_attr_bad = !d->store_attr;
}

/* Fills the pipeline; a filter the library cannot name is still listed. */
static int read_filters(hid_t dcpl, dsv_h5_desc *d)
{
	int nf = H5Pget_nfilters(dcpl);

	if (nf < 0 || nf > DSV_H5_MAX_FILTERS)
		return -1;
	for (int i = 0; i < nf; i++) {
		dsv_h5_filter *f = &d->filters[i];
		size_t ncd = DSV_H5_MAX_CD;
		char lib_name[64] = "";
		H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &f->flags, &ncd, f->cd,
						 sizeof(lib_name), lib_name, NULL);
		if (id < 0)
			return -1;
		const char *name = dsv_h5_filter_name((int)id);
		f->id = (int)id;
		f->ncd = ncd < DSV_H5_MAX_CD ? ncd : DSV_H5_MAX_CD;
		if (name)
			snprintf(f->name, sizeof(f->name), "%s", name);
		else
			snprintf(f->name, sizeof(f->name), "filter-%d", f->id);
	}
	d->nfilters = nf;
	return 0;
}

int dsv_h5_describe(const char *path, const char *dataset, dsv_h5_desc *d, dsv_errbuf *eb)
{
	char dname[INFO_MAX_PATH];
	hid_t lapl = -1, file = -1, dset = -1, dcpl = -1, ftype = -1, space = -1;
	hsize_t dims[DSV_MAX_DIMS];
	int err = 0, ndim;

	memset(d, 0, sizeof(*d));
	d->chunks_written = -1;
	if (!dataset || !*dataset)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "no dataset given");
	if ((size_t)snprintf(dname, sizeof(dname), "%s%s", dataset[0] == '/' ? "" : "/", dataset) >=
	    sizeof(dname))
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "dataset path too long");
	/* Our own stat first: it gives the clearest "no such file". */
	if ((err = dsv_h5_check_input(path, dsv_h5_probe_all, eb)))
		return err;

	if (dsv_h5_lock() < 0 || (lapl = dsv_h5_make_lapl(H5P_LINK_ACCESS)) < 0) {
		err = dsv_errf_at(eb, DSV_ERR_INTERNAL, path, NULL, "HDF5 setup failed");
		goto out;
	}
	file = H5Fopen(path, H5F_ACC_RDONLY, dsv_h5_ro_fapl());
	if (file < 0) {
		err = dsv_h5_open_failed(path, eb);
		goto out;
	}
	if ((err = dsv_h5_check_links(file, lapl, path, dname, eb)))
		goto out;
	dset = H5Oopen(file, dname, lapl);
	if (dset < 0) {
		err = dsv_errf_at(eb, DSV_ERR_NOTFOUND, path, dname, "cannot open");
		goto out;
	}
	if (H5Iget_type(dset) != H5I_DATASET) {
		err = dsv_errf_at(eb, DSV_ERR_INVALID, path, dname, "not a dataset");
		goto out;
	}
	if ((dcpl = H5Dget_create_plist(dset)) < 0 || (ftype = H5Dget_type(dset)) < 0 ||
	    (space = H5Dget_space(dset)) < 0) {
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "unreadable dataset header");
		goto out;
	}

	describe_type(ftype, d->type, sizeof(d->type));
	snprintf(d->type_class, sizeof(d->type_class), "%s", type_class_name(H5Tget_class(ftype)));
	d->type_size = H5Tget_size(ftype);
	ndim = H5Sget_simple_extent_ndims(space);
	if (ndim < 0 || ndim > DSV_MAX_DIMS ||
	    (ndim > 0 && H5Sget_simple_extent_dims(space, dims, NULL) != ndim)) {
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "bad rank");
		goto out;
	}
	d->ndim = ndim;
	d->nelems = H5Sget_simple_extent_type(space) == H5S_NULL ? 0 : 1;
	for (int k = 0; k < ndim; k++) {
		d->shape[k] = dims[k];
		if (dsv_mul_u64(d->nelems, dims[k], &d->nelems))
			d->nelems = UINT64_MAX;
	}
	if (dsv_mul_u64(d->nelems, d->type_size, &d->raw_bytes))
		d->raw_bytes = UINT64_MAX;

	switch (H5Pget_layout(dcpl)) {
	case H5D_CONTIGUOUS: d->layout = DSV_H5_LAYOUT_CONTIGUOUS; break;
	case H5D_CHUNKED: d->layout = DSV_H5_LAYOUT_CHUNKED; break;
	case H5D_COMPACT: d->layout = DSV_H5_LAYOUT_COMPACT; break;
	case H5D_VIRTUAL: d->layout = DSV_H5_LAYOUT_VIRTUAL; break;
	default: d->layout = DSV_H5_LAYOUT_OTHER; break;
	}
	if (d->layout == DSV_H5_LAYOUT_CHUNKED) {
		hsize_t cdims[DSV_MAX_DIMS], n = 0;
		if (H5Pget_chunk(dcpl, DSV_MAX_DIMS, cdims) != ndim) {
			err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "bad chunk dimensions");
			goto out;
		}
		for (int k = 0; k < ndim; k++)
			d->chunk[k] = cdims[k];
		/* Walks the chunk index; fine for info, too slow for a mount. */
		if (H5Dget_num_chunks(dset, space, &n) >= 0)
			d->chunks_written = (int64_t)n;
	}
	if (read_filters(dcpl, d) < 0) {
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "unreadable filter pipeline");
		goto out;
	}
	d->external_files = H5Pget_external_count(dcpl);
	if (d->external_files < 0)
		d->external_files = 0;
	d->stored_bytes = H5Dget_storage_size(dset);
	read_store_attr(dset, d);
	if (d->ndim == 0)
		d->value_json = dsv_h5_value_json(dset);

out:
	if (space >= 0)
		H5Sclose(space);
	if (ftype >= 0)
		H5Tclose(ftype);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (dset >= 0)
		H5Oclose(dset);
	if (file >= 0)
		H5Fclose(file);
	if (lapl >= 0)
		H5Pclose(lapl);
	dsv_h5_unlock();
	if (err)
		dsv_h5_desc_free(d);
	return err;
}
