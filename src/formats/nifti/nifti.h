/*
 * NIfTI-1 and NIfTI-2 single-file images (.nii): the header's parse, for
 * the source (nifti.c), its unit test and its fuzz target.
 */
#ifndef DSV_FORMATS_NIFTI_H
#define DSV_FORMATS_NIFTI_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"
#include "source/format.h"

/* NIfTI-1 and NIfTI-2 single-file images (.nii; a .nii.gz is read only
 * by `dsview pack`, unpacked once). */
extern const dsv_format dsv_format_nifti;

#define DSV_NIFTI1_HDR 348
#define DSV_NIFTI2_HDR 540
#define DSV_NIFTI_MAX_DIMS 7

/* What a NIfTI header says about its data. */
typedef struct dsv_nifti_hdr {
	int version;    /* 1 or 2 */
	int big_endian; /* the header's (and the data's) byte order */
	int datatype;   /* NIfTI's code, as stored */
	dsv_dtype dtype;
	int ndim;                         /* dim[0]: 1 to 7 */
	uint64_t dim[DSV_NIFTI_MAX_DIMS]; /* dim[1..ndim]: x first (the fastest axis) */
	uint64_t vox_offset;              /* the data's first byte */
	/* scl_slope and scl_inter: value = stored * slope + inter; has_scale
	 * is 0 where the slope is 0 or not finite (no scaling, as NIfTI and
	 * nibabel read it) or the pair is 1 and 0; slope and inter are then 1
	 * and 0 */
	int has_scale;
	double slope, inter;
} dsv_nifti_hdr;

/* Parses the first len bytes of a .nii (at least its header: 348 bytes
 * for NIfTI-1, 540 for NIfTI-2). The byte order is the one in which
 * sizeof_hdr reads 348 or 540. Checks the magic ("n+1"/"n+2"; the
 * two-file "ni1"/"ni2" is refused), dim, datatype against bitpix, and that
 * vox_offset is a whole number past the header. Big-endian headers are
 * parsed (the source refuses their data). @return 0, DSV_ERR_FORMAT (not
 * a NIfTI header, or a malformed one) or DSV_ERR_UNSUPPORTED (a valid one
 * dsview does not serve), eb saying why (file and where left empty). */
int dsv_nifti_parse(const uint8_t *buf, size_t len, dsv_nifti_hdr *h, dsv_errbuf *eb);

/* gunzip.c: a .nii.gz streamed once through zlib into an unlinked
 * temporary beside output, opened from there as a NIfTI source. */
int dsv_nifti_open_gz(const char *gz, const char *output, dsv_source **src, dsv_errbuf *eb);

#endif
