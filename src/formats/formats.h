/*
 * The registry of formats: the one place that tells which format a path
 * or a source spec is, and opens it. Each format is a folder of its own
 * under src/formats/ with one table of operations (source/format.h);
 * registry.c lists the tables, and a new format is its folder and one line
 * there (docs/architecture.md shows how, with .npy as the example).
 *
 * How a path is told: a name a file format claims (".npy", ".h5", ...)
 * decides first, with no I/O; then a directory format's metadata (a Zarr
 * array's or group's, which for object storage costs a GET or two); then,
 * only where the caller asks, the file's first bytes (each format's magic).
 *
 * Thread safety: every function may be called from any number of threads.
 */
#ifndef DSV_FORMATS_FORMATS_H
#define DSV_FORMATS_FORMATS_H

#include <stddef.h>

#include "dsview/source.h"
#include "source/format.h"

/* How dsv_format_detect looks: also at a regular file's first bytes. */
enum { DSV_DETECT_MAGIC = 1u };

/* The format path is (a file, a directory, or an object storage URL), as
 * the note above says; *dir (may be NULL) gets a directory format's
 * DSV_FMT_ARRAY or DSV_FMT_GROUP, else 0. @return NULL when none. */
const dsv_format *dsv_format_detect(const char *path, unsigned how, int *dir);
/* Readies files[0 .. n) for their opens soon after: each format with a
 * prepare step gets the files its name says are its own (the HDF5
 * library's probe of them all in one child process). Best effort: what
 * it could not do is done at each open. */
void dsv_format_prepare(char *const *files, size_t n);
/* dsv_format_prepare of the files of a glob, each with dataset (NULL:
 * none named), less those the index cache holds as they are now (their
 * sources are not opened: dsv_format_use_index). */
void dsv_format_prepare_spec(char *const *files, size_t n, const char *dataset);
/* The format whose name name has (a file format's first, then a
 * directory format's: "x.zarr"), with no I/O; *ext (may be NULL) gets the
 * bytes of name that say so (".npy": 4, ".nii.gz": 7), 0 with NULL. */
const dsv_format *dsv_format_by_name(const char *name, size_t *ext);
/* The format to open the local file path with, f told by its name alone
 * (dsv_format_by_name): f, or the format that shares f's extension
 * (DSV_FMT_SHARED_NAME) whose magic the file holds (a .set saved by
 * MATLAB -v7.3). */
const dsv_format *dsv_format_refine(const dsv_format *f, const char *path);
/* The format named so ("npy", "hdf5", ...), or NULL. */
const dsv_format *dsv_format_named(const char *name);

/* Splits a source spec into its file and its dataset (NULL when it names
 * none, else with its leading '/'): "file.h5:/group/dset" at the last
 * ":/", or, as h5py users write it, "file.h5:group/dset" at the last ':'
 * whose left side a format of datasets claims by name. @return 0 or
 * DSV_ERR_NOMEM (both NULL). */
int dsv_spec_split(const char *spec, char **file, char **dataset);
/* The format of spec, split as dsv_spec_split does into *file and
 * *dataset (the caller's to free): a spec naming a dataset is a format of
 * datasets' (by its file's name, else by its magic, else the first such
 * format, whose open says why the file is not one); *dir as for
 * dsv_format_detect. @return NULL (no format: *file and *dataset still
 * set), or the format; DSV_ERR_NOMEM in *err. */
const dsv_format *dsv_format_of_spec(const char *spec, unsigned how, char **file, char **dataset,
				     int *dir, int *err);

/* Opens file[:dataset] of format f as one source; a format of datasets'
 * file with no dataset named must hold exactly one, which is opened.
 * @return 0 or a dsv_err with eb set. */
int dsv_format_open(const dsv_format *f, const char *file, const char *dataset, dsv_source **out,
		    dsv_errbuf *eb);
/* Opens the sources file[:dataset] of format f is made of (the dataset
 * named as dsv_format_open names it), laid along
 * axis 0 (one, or an HDF5 virtual dataset's parts): *out[0 .. *n), each
 * the caller's to close, and the array (free). */
int dsv_format_open_parts(const dsv_format *f, const char *file, const char *dataset,
			  dsv_source ***out, size_t *n, dsv_errbuf *eb);

/* dsv_source_open_raw_layout (dsview/source.h) through the index cache:
 * the entry is of file opened with this layout (dtype, shape, offset). */
int dsv_format_open_raw(const char *file, const dsv_raw_layout *l, dsv_source **out,
			dsv_errbuf *eb);

/* The index cache (source/index.h) dsv_format_open_parts looks sources
 * up in and keeps what it opens in, the formats with save and load
 * hooks; NULL: none (the default). Set it before the opens, from the
 * thread that then starts them; the index must outlive them. */
void dsv_format_use_index(dsv_index *ix);

/* What the formats with none of the traits in skip are, for a message
 * ("a .npy, a NIfTI image (.nii), ... or a Zarr array or group"), into
 * buf. @return buf */
const char *dsv_format_nouns(unsigned skip, char *buf, size_t cap);

#endif
