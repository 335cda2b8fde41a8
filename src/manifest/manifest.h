/*
 * What the manifest room offers the rooms above beyond the installed
 * dsview/view.h (dsv_manifest_load, dsv_manifest_from_file): one call for
 * whatever a mount takes, and the mount log's words. Not installed.
 */
#ifndef DSV_MANIFEST_MANIFEST_H
#define DSV_MANIFEST_MANIFEST_H

#include <stddef.h>

#include "dsview/view.h"

/* What `dsview mount SOURCE` serves: a manifest (.ini), or any other
 * source as a zero-config mount makes it (dsv_manifest_from_file, with
 * dtype and flags, which a manifest's own settings replace). @return 0
 * or a dsv_err with eb set. */
int dsv_manifest_open(const char *source, dsv_dtype dtype, unsigned flags, dsv_manifest **out,
		      dsv_errbuf *eb);

/* For the mount's log line, "4 string, 2 compound": m->skipped counted by kind, most first, into
 * buf as snprintf. @return buf */
const char *dsv_manifest_skipped_kinds(const dsv_manifest *m, char *buf, size_t cap);

#endif
