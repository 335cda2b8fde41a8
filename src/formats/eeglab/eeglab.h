/*
 * EEGLAB datasets (.set, the data embedded or in a .fdt beside it), read
 * through the MAT-file walk of mat5.h.
 */
#ifndef DSV_FORMATS_EEGLAB_H
#define DSV_FORMATS_EEGLAB_H

#include "dsview/dsview.h"
#include "source/format.h"

/* EEGLAB .set files: one source of shape (trials, nbchan, pnts). */
extern const dsv_format dsv_format_eeglab;

/* Opens path as a source (the format's open). */
int dsv_source_open_eeglab(const char *path, dsv_source **out, dsv_errbuf *eb);

#endif
