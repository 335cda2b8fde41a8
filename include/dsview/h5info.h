/*
 * What `dsview info` shows about one HDF5 dataset beyond what a source
 * records: the element type as stored, the layout, the chunk shape, the
 * filter pipeline, the bytes the data occupies in the file, and the dsview
 * store attribute (DSV_STORE_ATTR below) when the dataset has one.
 * Only the dataset's header is read, never its data, so a dataset dsview
 * refuses to serve (external storage, a plugin-only filter, a string
 * type) can still be described.
 *
 * Trust is as for HDF5 sources: the file is opened through dsview's
 * read-only driver, filter plugins are never loaded, and no external link
 * is ever traversed (the path walk refuses them by name and the link
 * access list denies any the walk did not foresee).
 *
 * Thread safety: any thread may call these; each call holds dsview's one
 * HDF5 lock, which every HDF5 call in the library runs under, for its whole
 * duration. Descriptions are plain data owned by the caller.
 */
#ifndef DSVIEW_H5INFO_H
#define DSVIEW_H5INFO_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"

typedef enum dsv_h5_layout {
	DSV_H5_LAYOUT_CONTIGUOUS,
	DSV_H5_LAYOUT_CHUNKED,
	DSV_H5_LAYOUT_COMPACT,
	DSV_H5_LAYOUT_VIRTUAL,
	DSV_H5_LAYOUT_OTHER,
} dsv_h5_layout;

/* The name of the string attribute that makes a dataset a dsview store
 * (written by pack, read by info and verify; see dsview/pack.h). */
#define DSV_STORE_ATTR "dsview"

/* Where `dsview pack` puts an LZ4 store's block table (its format:
 * src/codec/lz4_table.h): the dataset at this group's path followed by the
 * store dataset's own path ("/.dsview/images" for "/images"): uint32
 * little-endian, contiguous, shape (chunks, 2 x blocks per chunk). A mount
 * with no manifest does not serve this group. */
#define DSV_STORE_BLOCKS "/.dsview"

/* Filters in one pipeline: HDF5's own limit (H5Z_MAX_NFILTERS; the library
 * checks the two agree at build time), so any pipeline the library
 * accepts can be described. */
#define DSV_H5_MAX_FILTERS 32
/* Client data values kept per filter. */
#define DSV_H5_MAX_CD 8
/* The store attribute is a few hundred bytes; anything beyond this is
 * not one we print. */
#define DSV_H5_MAX_ATTR (64u << 10)

typedef struct dsv_h5_filter {
	int id;                     /* HDF5 filter id, e.g. 1 deflate, 32004 lz4 */
	char name[32];              /* "deflate", "lz4", ...; "filter-N" if unknown */
	unsigned flags;             /* H5Z_FLAG_OPTIONAL etc. */
	size_t ncd;                 /* client data values kept (at most DSV_H5_MAX_CD) */
	unsigned cd[DSV_H5_MAX_CD]; /* e.g. the deflate level in cd[0] */
} dsv_h5_filter;

typedef struct dsv_h5_desc {
	char type[48];       /* as stored: "uint8", "big-endian int16", "string", ... */
	char type_class[24]; /* one word: "integer", "float", "string", "compound",
			      * "enum", "bitfield", "opaque", "reference",
			      * "variable-length", "array", "time", "unknown" */
	size_t type_size;    /* bytes per element */
	int ndim;            /* 0 for a scalar or null dataspace */
	uint64_t shape[DSV_MAX_DIMS];
	uint64_t nelems;    /* saturates at UINT64_MAX */
	uint64_t raw_bytes; /* nelems * type_size, saturating */
	dsv_h5_layout layout;
	uint64_t chunk[DSV_MAX_DIMS]; /* chunked only: ndim entries */
	int64_t chunks_written;       /* chunked only: allocated chunks; -1 unknown */
	int nfilters;
	dsv_h5_filter filters[DSV_H5_MAX_FILTERS];
	int external_files;    /* external storage: how many files the data lives in */
	uint64_t stored_bytes; /* H5Dget_storage_size: bytes allocated for the data */
	/* The DSV_STORE_ATTR attribute: its string (NUL-terminated, owned),
	 * or NULL. store_attr_bad is set when the attribute exists but is not
	 * a single string of at most DSV_H5_MAX_ATTR bytes. */
	char *store_attr;
	int store_attr_bad;
	/* A scalar (0-d) dataset's value as JSON text (a number or a string;
	 * owned), or NULL: such a dataset is metadata, not a view. */
	char *value_json;
} dsv_h5_desc;

/*
 * Describes dataset (absolute or relative to the root) of the HDF5 file at
 * path. @return 0 with *d filled (free it with dsv_h5_desc_free), or a
 * dsv_err with eb naming the file (and dataset) and the reason:
 * DSV_ERR_NOTFOUND (no such file or dataset), DSV_ERR_FORMAT (not HDF5, or
 * damaged), DSV_ERR_TRUNCATED (see dsv_h5_check_file), DSV_ERR_UNSUPPORTED
 * (an external or user-defined link on the way), DSV_ERR_INVALID (not a
 * dataset). On error *d holds nothing to free.
 */
int dsv_h5_describe(const char *path, const char *dataset, dsv_h5_desc *d, dsv_errbuf *eb);
void dsv_h5_desc_free(dsv_h5_desc *d);

/*
 * Checks that the HDF5 library opens path. @return 0, or a dsv_err with eb
 * saying why not, in the library's words: DSV_ERR_TRUNCATED when the file
 * is shorter than its superblock records (a cut copy: its last chunks
 * would lie past the end), DSV_ERR_FORMAT for anything else, or
 * DSV_ERR_NOTFOUND / DSV_ERR_IO from stat.
 */
int dsv_h5_check_file(const char *path, dsv_errbuf *eb); /* accepts NULL; frees store_attr only */

const char *dsv_h5_layout_name(dsv_h5_layout l); /* "contiguous", ... */
/* A short name for a filter id ("deflate", "lz4", "fletcher32"), NULL if
 * dsview does not know it. */
const char *dsv_h5_filter_name(int id);

#endif
