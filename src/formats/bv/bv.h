/*
 * BrainVision recordings (.vhdr header, .eeg data beside it).
 */
#ifndef DSV_FORMATS_BV_H
#define DSV_FORMATS_BV_H

#include "dsview/dsview.h"
#include "source/format.h"

/* BrainVision .vhdr files: one source of shape (1, channels, time) in
 * physical units. */
extern const dsv_format dsv_format_bv;

/* Opens path (the .vhdr) as a source (the format's open). */
int dsv_source_open_bv(const char *path, dsv_source **out, dsv_errbuf *eb);

#endif
