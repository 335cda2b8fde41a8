/*
 * What the manifest room offers the rooms above beyond the installed
 * dsview/view.h (dsv_manifest_load, dsv_manifest_from_file). Not installed.
 */
#ifndef DSV_MANIFEST_MANIFEST_H
#define DSV_MANIFEST_MANIFEST_H

#include <stddef.h>

#include "dsview/view.h"

/* For the mount's log line, "4 string, 2 compound": m->skipped counted by kind, most first, into
 * buf as snprintf. @return buf */
const char *dsv_manifest_skipped_kinds(const dsv_manifest *m, char *buf, size_t cap);

#endif
