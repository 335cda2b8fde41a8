/*
 * The HDF5 format as the rooms above see it: its table of operations
 * (h5_format.c), and the listing of a file's datasets that zero-config
 * mounts and `info` walk. A virtual dataset's parts: h5_vds.h.
 */
#ifndef DSV_FORMATS_H5_FORMAT_H
#define DSV_FORMATS_H5_FORMAT_H

#include <stddef.h>

#include "source/format.h"

extern const dsv_format dsv_format_h5;
/* EEGLAB datasets saved by MATLAB -v7.3 (h5_mat73.c): (trials, channels,
 * time) as formats/eeglab serves the v5/v6 ones. */
extern const dsv_format dsv_format_mat73;

/* An object of an HDF5 file that could not be listed (a damaged object
 * header or group): its path in the file and the library's reason. */
typedef struct dsv_h5_unlisted {
	char *path;
	char reason[256];
} dsv_h5_unlisted;
/* As dsv_h5_list_datasets, and a damaged object or group does not end the
 * listing: it is passed over and put in *bad (*nbad entries; free them
 * with dsv_h5_unlisted_free), and the rest of the file is listed. Fails
 * only when the file cannot be opened, is out of memory, or nothing at
 * all could be listed (then eb says the library's reason). */
int dsv_h5_list_all(const char *path, char ***names, size_t *count, size_t skipped[2],
		    dsv_h5_unlisted **bad, size_t *nbad, dsv_errbuf *eb);
void dsv_h5_unlisted_free(dsv_h5_unlisted *bad, size_t n); /* accepts NULL */

#endif
