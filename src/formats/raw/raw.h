/* Raw elements: no header, the dtype and shape given by the caller
 * (source_dtype and source_shape, --dtype and --shape); raw.c. */
#ifndef DSV_FORMATS_RAW_H
#define DSV_FORMATS_RAW_H

#include "source/format.h"

extern const dsv_format dsv_format_raw;

#endif
