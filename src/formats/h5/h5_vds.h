/*
 * HDF5 virtual datasets (VDS): what a mount serves of one, and the pure
 * analysis of its mappings behind it.
 *
 * A VDS is served as the concatenation along axis 0 of its source
 * datasets, each opened as any other HDF5 source (its own fork probe,
 * read-only driver and fast path), with rows no mapping covers, and rows
 * of a source that is missing, as sources of the VDS's fill value. The
 * HDF5 library's own VDS reading is never used. Only mappings of whole
 * rows are taken; every other form is refused at open with the mapping
 * named (vds_map.c).
 */
#ifndef DSV_H5_H5_VDS_H
#define DSV_H5_H5_VDS_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/source.h"

/* Most mappings one virtual dataset may have. */
#define DSV_VDS_MAX_MAPS 4096
/* A count or block of H5S_UNLIMITED. */
#define DSV_VDS_UNLIMITED UINT64_MAX

/* One selection of a mapping as the library describes it: all of its
 * extent, a regular hyperslab, or anything else (points, an irregular
 * hyperslab, none). */
typedef enum { DSV_VDS_SEL_ALL, DSV_VDS_SEL_HYPER, DSV_VDS_SEL_OTHER } dsv_vds_sel_kind;

typedef struct dsv_vds_sel {
	dsv_vds_sel_kind kind;
	int ndim;
	uint64_t dims[DSV_MAX_DIMS]; /* the extent it selects in */
	uint64_t start[DSV_MAX_DIMS], stride[DSV_MAX_DIMS];
	uint64_t count[DSV_MAX_DIMS], block[DSV_MAX_DIMS];
} dsv_vds_sel;

/* A mapping: virtual selection vsel takes the elements of source
 * selection ssel. The file keeps no extent of the source: ssel's dims
 * are not its shape (the source's own open says that). */
typedef struct dsv_vds_map {
	dsv_vds_sel vsel, ssel;
} dsv_vds_map;

/* Rows [row0, row0 + rows) of the VDS: from mapping map, or fill rows
 * (map == -1). */
typedef struct dsv_vds_piece {
	uint64_t row0, rows;
	long map;
} dsv_vds_piece;

/* Lays the n mappings of a VDS of ndim axes of dims out along axis 0
 * into out (room for 2 * n + 1 pieces), in row order, gaps as fill rows,
 * *npieces of them. @return 0; or DSV_ERR_UNSUPPORTED with *bad the
 * mapping at fault and why its form ("a strided selection", "overlaps
 * mapping 2", ...). */
int dsv_vds_plan(int ndim, const uint64_t *dims, const dsv_vds_map *maps, size_t n,
		 dsv_vds_piece *out, size_t *npieces, size_t *bad, char *why, size_t cap);

/* Whether mapping m (rows rows of a VDS of ndim axes of dims, as
 * dsv_vds_plan laid it out) takes all of its source, of src_ndim axes of
 * src_shape, as the library found it at open (the file keeps no source
 * extent). @return NULL, or why not (in buf, or a constant). */
const char *dsv_vds_check_source(const dsv_vds_map *m, int ndim, const uint64_t *dims,
				 uint64_t rows, int src_ndim, const uint64_t *src_shape, char *buf,
				 size_t cap);

/* The file a mapping's source lies in, as dsview resolves it: "." is the
 * VDS's own file (vds_path); an absolute name is itself when it exists,
 * else its last component beside the VDS, as the library looks for it;
 * a relative one is beside the VDS (its directory). HDF5_VDS_PREFIX, the
 * virtual prefix of an access list and the working directory are not
 * looked in. @return a new string, or NULL when out of memory. */
char *dsv_vds_source_file(const char *vds_path, const char *name);

/* Opens path's dataset as the sources a view concatenates: the dataset
 * itself (*n = 1), or for a virtual dataset its parts, in row order.
 * @return 0 with *out (free with dsv_h5_close_parts), or a dsv_err with
 * eb set: a VDS whose mappings take other forms, whose source is itself
 * virtual, disagrees with it in type or shape, or cannot be opened. */
int dsv_h5_open_parts(const char *path, const char *dataset, dsv_source ***out, size_t *n,
		      dsv_errbuf *eb);
void dsv_h5_close_parts(dsv_source **parts, size_t n);

#endif
