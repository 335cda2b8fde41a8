/* NumPy's formats: .npy (versions 1 to 3), one array, a header then the
 * elements, served in place (npy.c); .npz, a zip of .npy members
 * (npz.c, its zip directory read by zip.c). */
#ifndef DSV_FORMATS_NPY_H
#define DSV_FORMATS_NPY_H

#include <stdint.h>

#include "source/format.h"

extern const dsv_format dsv_format_npy;
extern const dsv_format dsv_format_npz;

/* Reads the .npy that is bytes [base, base + len) of s's open file (a
 * whole .npy file: 0 and its size; a member of a .npz) into s: dtype,
 * shape, data_offset, kind and chunks, every field checked against len.
 * @return 0 or a dsv_err with eb set (s->path and s->dataset named). */
int dsv_npy_read_header(dsv_source *s, uint64_t base, uint64_t len, dsv_errbuf *eb);

#endif
