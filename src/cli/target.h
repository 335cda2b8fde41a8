/*
 * What a PATH argument of info and verify names: a .npy, a .nii, a raw file, an
 * HDF5 file (all its datasets, or one as "file.h5:/path/dset"), a Zarr
 * array or group (a directory or an s3:// prefix) or a manifest. The
 * registry of formats decides, from the name, a directory's metadata, and
 * for other names the file's first bytes, so that "data.bin" holding HDF5
 * is not taken for raw bytes.
 */
#ifndef DSV_CLI_TARGET_H
#define DSV_CLI_TARGET_H

#include <stdint.h>

#include "dsview/dsview.h"

typedef enum dsv_target_kind {
	DSV_TARGET_ARRAY,    /* one array: a .npy, a .nii, a Zarr array, a raw file */
	DSV_TARGET_DATASETS, /* a file of datasets (HDF5): all, or the one named */
	DSV_TARGET_GROUP,    /* a directory format's group (Zarr): its arrays */
	DSV_TARGET_MANIFEST,
} dsv_target_kind;

typedef struct dsv_target {
	dsv_target_kind kind;
	const struct dsv_format *format; /* the registry's word; NULL for a manifest */
	char *file;                      /* the file to open (spec without ":/dataset") */
	char *dataset;                   /* HDF5: the one dataset named, or NULL for all */
	uint64_t file_bytes;
} dsv_target;

/*
 * Classifies spec. raw: the caller has --source-dtype/--source-shape, so a file that is
 * not .npy/.ini/HDF5 is raw; without, such a file is an error.
 * @return 0, or a dsv_err with eb holding "<file>: <reason>".
 */
int dsv_target_parse(const char *spec, int raw, dsv_target *t, dsv_errbuf *eb);
void dsv_target_free(dsv_target *t);

/* "<file>:<dataset>" or "<file>" into buf. */
const char *dsv_target_label(char *buf, size_t cap, const char *file, const char *dataset);

#endif
