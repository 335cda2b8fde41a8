/* The .npy format (NumPy's, versions 1 to 3): one array, a header then the
 * elements, served in place (npy.c). */
#ifndef DSV_FORMATS_NPY_H
#define DSV_FORMATS_NPY_H

#include "source/format.h"

extern const dsv_format dsv_format_npy;

#endif
