/*
 * A format's table of operations: what each folder of src/formats/
 * defines once (dsv_format_npy, ...) and the registry (src/formats/
 * formats.h) holds. Every question "which format is this?" and every
 * open of a spec goes through the registry, which asks these in turn; a
 * format's own state stays in its folder.
 *
 * Thread safety: every operation may be called from any number of
 * threads (an open as dsview/source.h says of opens).
 */
#ifndef DSV_SOURCE_FORMAT_H
#define DSV_SOURCE_FORMAT_H

#include <stddef.h>

#include "dsview/source.h"
#include "source/index.h"

/* What a format is like: dsv_format.traits. */
enum {
	/* a file of named datasets: "file:/dset" and "file:dset" name one,
	 * and a spec with none names its only dataset */
	DSV_FMT_DATASETS = 1u,
	/* a directory (or an object storage prefix) holding metadata, not a
	 * file: by_dir says whether a path is one */
	DSV_FMT_DIR = 2u,
	/* elements with no header at all: never detected, opened only where
	 * the caller gives the dtype and shape (dsv_source_open_raw) */
	DSV_FMT_RAW = 4u,
	/* found below a directory mount's top level too: the recordings of a
	 * BIDS tree (sub-01/eeg/sub-01_task-rest_eeg.bdf), each a view named
	 * for its path */
	DSV_FMT_TREE = 8u,
	/* by_name claims an extension another format claims too (.set: an
	 * EEGLAB MAT-file v6, or v7.3, HDF5): the registry takes this format
	 * for a file only where by_magic says so, the other one otherwise */
	DSV_FMT_SHARED_NAME = 16u,
};

/* What by_dir finds at a path. */
enum {
	DSV_FMT_ARRAY = 1, /* one array */
	DSV_FMT_GROUP = 2, /* a group of arrays (and groups) */
};

typedef struct dsv_format {
	const char *name; /* "npy", "nifti", "hdf5", "zarr", "raw": what info calls it */
	/* what a message listing the accepted inputs calls it ("a .npy") */
	const char *noun;
	unsigned traits; /* DSV_FMT_* */
	/* The bytes at the end of name (a file name, a path or an object's
	 * URL) that say this format (".npy": 4), 0 when none does. NULL: the
	 * format has no name of its own. */
	size_t (*by_name)(const char *name);
	/* 1 when the bytes of the open file fd say this format (its magic),
	 * for names no format claims. NULL: not looked for. */
	int (*by_magic)(int fd);
	/* DSV_FMT_ARRAY or DSV_FMT_GROUP when path is this directory format's
	 * array or group (its metadata is there), else 0. */
	int (*by_dir)(const char *path);
	/* Opens file (dataset: the named one of a DSV_FMT_DATASETS format,
	 * never NULL for one: the registry names a file's only dataset where
	 * a spec names none; NULL for others) as one source. @return 0 or a
	 * dsv_err with eb set. */
	int (*open)(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb);
	/* Optional: opens file's dataset as the sources it is made of, laid
	 * one after the other along axis 0 (an HDF5 virtual dataset's parts),
	 * *out[0 .. *n), each the caller's to close; the array of them too
	 * (free). NULL: the one source open gives. */
	int (*open_parts)(const char *file, const char *dataset, dsv_source ***out, size_t *n,
			  dsv_errbuf *eb);
	/* A format of datasets' (DSV_FMT_DATASETS): the paths of file's
	 * datasets, *names[0 .. *n), each the caller's to free, and the array.
	 * NULL for other formats. @return 0 or a dsv_err with eb set. */
	int (*list)(const char *file, char ***names, size_t *n, dsv_errbuf *eb);
	/* Optional, a format of datasets': the dataset a spec naming none
	 * opens where the file holds several and this one among them (an
	 * Arrow file's "/input_ids"). NULL: the file must hold exactly one. */
	const char *default_dataset;
	/* Optional: opens an input of `dsview pack` that cannot be read in
	 * place (a gzipped image, a deflated .npz member: dataset as for
	 * open, or NULL), unpacked once beside output. NULL: open. */
	int (*open_packed)(const char *input, const char *dataset, const char *output,
			   dsv_source **out, dsv_errbuf *eb);
	/* Optional: readies files[0 .. n), this format's by their names, for
	 * their opens soon after (the HDF5 library's probe of many files in
	 * one child process). NULL: nothing to ready. */
	void (*prepare)(char *const *files, size_t n);
	/* Optional, both or neither: the index cache (source/index.h). save
	 * appends to out what open learnt of s (a source open made) that
	 * load needs to make it again: DSV_ERR_UNSUPPORTED when s is not
	 * kept (it is opened again next time), DSV_ERR_NOMEM. load makes the
	 * source of file's dataset (as open was asked it) from blob[0 ..
	 * len), for the file as st stamps it, without reading the file now;
	 * the bytes are untrusted: every value is checked, and a failure
	 * (a dsv_err with eb set) has the source opened instead. NULL: this
	 * format's sources are always opened. */
	int (*save)(const dsv_source *s, dsv_index_buf *out);
	int (*load)(const char *file, const char *dataset, const void *blob, size_t len,
		    const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb);
} dsv_format;

#endif
