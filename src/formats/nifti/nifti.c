/*
 * NIfTI-1 and NIfTI-2 single-file images (.nii) as flat sources.
 *
 * A .nii is a fixed header (348 bytes for NIfTI-1, 540 for NIfTI-2), an
 * optional extension, and from vox_offset the voxels, x fastest: an image
 * of dim (X, Y, Z, T) is the C-order array (T, Z, Y, X). The source's
 * shape is dim reversed, so each volume of a 4-D image is one row, the
 * fourth axis (time, trials) axis 0; nothing is copied or reordered, and
 * the read path preads runs of the file as it does a .npy's.
 *
 * scl_slope and scl_inter become the source's own scale and offset
 * (info.has_scale), which the view folds into its transform: the values
 * served are those nibabel's get_fdata() reads. A slope of 0 (or one not
 * finite) means none, as the standard says.
 *
 * Refused: the two-file form (.hdr/.img, magic "ni1"/"ni2"), types that
 * are not one number a voxel (binary, complex, RGB, float128), big-endian
 * data (the header is parsed so the message can say so), and .nii.gz,
 * which is not random-access (its open says to pack it; gunzip.c unpacks it
 * once for `dsview pack`).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/str.h"
#include "dsview/source.h"
#include "formats/nifti/nifti.h"
#include "source/source_i.h"

/* NIfTI datatype codes of one number a voxel, and their dsview dtype. */
static const struct {
	int code;
	dsv_dtype dtype;
} nifti_types[] = {
	{ 2, DSV_U8 },   { 4, DSV_I16 },   { 8, DSV_I32 },   { 16, DSV_F32 },   { 64, DSV_F64 },
	{ 256, DSV_I8 }, { 512, DSV_U16 }, { 768, DSV_U32 }, { 1024, DSV_I64 }, { 1280, DSV_U64 },
};

static const char *nifti_type_name(int code)
{
	switch (code) {
	case 1: return "binary";
	case 32: return "complex64";
	case 128: return "RGB24";
	case 1536: return "float128";
	case 1792: return "complex128";
	case 2048: return "complex256";
	case 2304: return "RGBA32";
	default: return NULL;
	}
}

/* The header's fields, where each version keeps them. */
typedef struct nifti_layout {
	size_t hdr, magic, datatype, bitpix, dim, vox_offset, slope, inter;
	int dim_bytes; /* 2 (NIfTI-1 shorts) or 8 */
} nifti_layout;

static const nifti_layout layout1 = { DSV_NIFTI1_HDR, 344, 70, 72, 40, 108, 112, 116, 2 };
static const nifti_layout layout2 = { DSV_NIFTI2_HDR, 4, 12, 14, 16, 168, 176, 184, 8 };

static int64_t load_int(const uint8_t *p, int n, int be)
{
	uint64_t v = dsv_load_uint(p, n, be);
	if (n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ull << (8 * n); /* sign-extend */
	return (int64_t)v;
}

static double load_float(const uint8_t *p, int n, int be)
{
	uint64_t v = dsv_load_uint(p, n, be);
	if (n == 8) {
		double d;
		memcpy(&d, &v, sizeof(d));
		return d;
	}
	uint32_t w = (uint32_t)v;
	float f;
	memcpy(&f, &w, sizeof(f));
	return f;
}

/* Which version and byte order sizeof_hdr says; 0 if neither. */
static const nifti_layout *find_layout(const uint8_t *buf, size_t len, int *be)
{
	if (len < 4)
		return NULL;
	for (*be = 0; *be < 2; ++*be) {
		uint64_t n = dsv_load_uint(buf, 4, *be);
		if (n == DSV_NIFTI1_HDR)
			return &layout1;
		if (n == DSV_NIFTI2_HDR)
			return &layout2;
	}
	return NULL;
}

static int check_magic(const uint8_t *m, int version, dsv_errbuf *eb)
{
	char want = (char)('0' + version);
	if (m[0] == 'n' && m[1] == '+' && m[2] == want && m[3] == 0)
		return 0;
	if (m[0] == 'n' && m[1] == 'i' && m[2] == want && m[3] == 0)
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
				"a NIfTI header of the two-file form (.hdr/.img): only "
				"single-file .nii images are served");
	return dsv_errf(eb, DSV_ERR_FORMAT, "not a NIfTI-%d file (bad magic)", version);
}

static int parse_dims(const uint8_t *buf, const nifti_layout *l, dsv_nifti_hdr *h, dsv_errbuf *eb)
{
	int64_t n = load_int(buf + l->dim, l->dim_bytes, h->big_endian);
	if (n < 1 || n > DSV_NIFTI_MAX_DIMS)
		return dsv_errf(eb, DSV_ERR_FORMAT, "dim[0] is %lld (1 to 7 dimensions)",
				(long long)n);
	h->ndim = (int)n;
	for (int i = 1; i <= h->ndim; i++) {
		int64_t d = load_int(buf + l->dim + (size_t)i * l->dim_bytes, l->dim_bytes,
				     h->big_endian);
		if (d < 1)
			return dsv_errf(eb, DSV_ERR_FORMAT, "dim[%d] is %lld (must be positive)", i,
					(long long)d);
		h->dim[i - 1] = (uint64_t)d;
	}
	return 0;
}

static int parse_type(const uint8_t *buf, const nifti_layout *l, dsv_nifti_hdr *h, dsv_errbuf *eb)
{
	int64_t bitpix = load_int(buf + l->bitpix, 2, h->big_endian);
	const char *name;

	h->datatype = (int)load_int(buf + l->datatype, 2, h->big_endian);
	h->dtype = DSV_DTYPE_INVALID;
	for (size_t i = 0; i < sizeof(nifti_types) / sizeof(nifti_types[0]); i++)
		if (nifti_types[i].code == h->datatype)
			h->dtype = nifti_types[i].dtype;
	if (h->dtype == DSV_DTYPE_INVALID && (name = nifti_type_name(h->datatype)))
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
				"NIfTI datatype %s (%d) is not one number a voxel", name,
				h->datatype);
	if (h->dtype == DSV_DTYPE_INVALID)
		return dsv_errf(eb, DSV_ERR_FORMAT, "unknown NIfTI datatype %d", h->datatype);
	if (bitpix != (int64_t)(8 * dsv_dtype_size(h->dtype)))
		return dsv_errf(eb, DSV_ERR_FORMAT, "bitpix %lld does not match datatype %s",
				(long long)bitpix, dsv_dtype_name(h->dtype));
	return 0;
}

static int parse_offset_scale(const uint8_t *buf, const nifti_layout *l, dsv_nifti_hdr *h,
			      dsv_errbuf *eb)
{
	int fb = h->version == 1 ? 4 : 8;
	/* NIfTI-1 keeps it as a float, NIfTI-2 as an int64 */
	int64_t whole = h->version == 2 ? load_int(buf + l->vox_offset, 8, h->big_endian) : 0;
	double off = h->version == 1 ? load_float(buf + l->vox_offset, 4, h->big_endian)
				     : (double)whole;

	/* the data follows the header and the 4 bytes of the extension flag */
	if (!(off >= (double)(l->hdr + 4)) || off != floor(off) || off > 0x1p62)
		return dsv_errf(eb, DSV_ERR_FORMAT,
				"vox_offset %g is not a whole number of bytes past the header",
				off);
	h->vox_offset = h->version == 2 ? (uint64_t)whole : (uint64_t)off;
	h->slope = load_float(buf + l->slope, fb, h->big_endian);
	h->inter = load_float(buf + l->inter, fb, h->big_endian);
	/* 1 and 0 scale nothing: the values are the stored ones, as nibabel
	 * reads them (and a plain cast stays exact) */
	h->has_scale = h->slope != 0 && isfinite(h->slope) && !(h->slope == 1 && h->inter == 0);
	if (h->slope != 0 && isfinite(h->slope) && !isfinite(h->inter))
		return dsv_errf(eb, DSV_ERR_FORMAT, "scl_slope %g with scl_inter %g", h->slope,
				h->inter);
	if (!h->has_scale)
		h->slope = 1, h->inter = 0;
	return 0;
}

int dsv_nifti_parse(const uint8_t *buf, size_t len, dsv_nifti_hdr *h, dsv_errbuf *eb)
{
	const nifti_layout *l;
	int be, err;

	memset(h, 0, sizeof(*h));
	if (!(l = find_layout(buf, len, &be)))
		return dsv_errf(eb, DSV_ERR_FORMAT,
				"not a NIfTI file (sizeof_hdr is neither 348 nor 540)");
	if (len < l->hdr)
		return dsv_errf(eb, DSV_ERR_FORMAT, "truncated NIfTI header");
	h->version = l == &layout1 ? 1 : 2;
	h->big_endian = be;
	if ((err = check_magic(buf + l->magic, h->version, eb)) ||
	    (err = parse_dims(buf, l, h, eb)) || (err = parse_type(buf, l, h, eb)))
		return err;
	return parse_offset_scale(buf, l, h, eb);
}

/* The source's shape: dim reversed (C order, the last axis x). */
static int nifti_shape(dsv_source *s, const dsv_nifti_hdr *h, dsv_errbuf *eb)
{
	uint64_t shape[DSV_NIFTI_MAX_DIMS], nbytes;

	for (int i = 0; i < h->ndim; i++)
		shape[i] = h->dim[h->ndim - 1 - i];
	s->info.dtype = h->dtype;
	if (dsv_source_set_shape(s, h->ndim, shape))
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, s->path, NULL, "NIfTI dims overflow");
	nbytes = s->info.nelems * dsv_dtype_size(h->dtype); /* checked by set_shape */
	if (h->vox_offset > s->file_size || nbytes > s->file_size - h->vox_offset)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, s->path, NULL,
				   "file is %llu bytes but its header declares %llu bytes of data "
				   "from byte %llu",
				   (unsigned long long)s->file_size, (unsigned long long)nbytes,
				   (unsigned long long)h->vox_offset);
	s->data_offset = h->vox_offset;
	s->info.stored_bytes = nbytes;
	return 0;
}

int dsv_source_open_nifti(const char *path, dsv_source **out, dsv_errbuf *eb)
{
	uint8_t buf[DSV_NIFTI2_HDR];
	dsv_nifti_hdr h;
	dsv_errbuf sub;
	int err;
	dsv_source *s = dsv_source_alloc(path, NULL);

	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)))
		goto fail;
	size_t len = s->file_size < sizeof(buf) ? (size_t)s->file_size : sizeof(buf);
	if ((err = dsv_source_pread(s, buf, len, 0))) {
		err = dsv_errf_at(eb, err, path, NULL, "cannot read the NIfTI header");
		goto fail;
	}
	if ((err = dsv_nifti_parse(buf, len, &h, &sub))) {
		err = dsv_errf_at(eb, err, path, NULL, "%s", sub.reason);
		goto fail;
	}
	if (h.big_endian && dsv_dtype_size(h.dtype) > 1) {
		err = dsv_errf_at(
			eb, DSV_ERR_UNSUPPORTED, path, NULL,
			"big-endian NIfTI data is not served; rewrite it in little-endian "
			"order (nibabel writes the machine's order)");
		goto fail;
	}
	if ((err = nifti_shape(s, &h, eb)))
		goto fail;
	s->info.kind = DSV_SRC_NIFTI;
	s->info.has_scale = h.has_scale;
	s->info.scale = h.slope;
	s->info.offset = h.inter;
	dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	*out = s;
	return 0;
fail:
	dsv_source_close(s);
	return err;
}

/* ".nii" or ".nii.gz" */
static size_t nifti_by_name(const char *name)
{
	return dsv_has_ext(name, ".nii") ? 4 : dsv_has_ext(name, ".nii.gz") ? 7 : 0;
}

static int nifti_by_magic(int fd)
{
	uint8_t buf[DSV_NIFTI2_HDR];
	dsv_nifti_hdr h;
	dsv_errbuf eb;
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	return n >= DSV_NIFTI1_HDR && dsv_nifti_parse(buf, (size_t)n, &h, &eb) == 0;
}

static int nifti_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	*out = NULL;
	if (dsv_has_ext(file, ".nii.gz"))
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, file, NULL,
				   "a gzipped NIfTI image cannot be read in place; convert it once "
				   "with `dsview pack %s OUT.h5` and serve OUT.h5",
				   file);
	return dsv_source_open_nifti(file, out, eb);
}

static int nifti_open_packed(const char *input, const char *dataset, const char *output,
			     dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	if (dsv_has_ext(input, ".nii.gz"))
		return dsv_nifti_open_gz(input, output, out, eb);
	return dsv_source_open_nifti(input, out, eb);
}

const dsv_format dsv_format_nifti = {
	.name = "nifti",
	.noun = "a NIfTI image (.nii)",
	.by_name = nifti_by_name,
	.by_magic = nifti_by_magic,
	.open = nifti_open,
	.open_packed = nifti_open_packed,
};
