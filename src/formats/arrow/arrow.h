/* Arrow IPC files (stream and file forms: Hugging Face datasets' cache
 * and save_to_disk files, pyarrow's writers), each column a dataset
 * (arrow.c; the messages read by ipc.c, their FlatBuffers by fb.c). */
#ifndef DSV_FORMATS_ARROW_H
#define DSV_FORMATS_ARROW_H

#include "source/format.h"

extern const dsv_format dsv_format_arrow;

#endif
