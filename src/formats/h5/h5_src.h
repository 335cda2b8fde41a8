/*
 * Shared by the HDF5 source files (h5_source.c opens, h5_chunks.c decides how a
 * chunked dataset is served and locates its chunks, h5_type.c classifies
 * element types, h5_read.c reads, h5_list.c lists, h5_grid.c reads chunks
 * that split rows) and h5_info.c. Not thread-safe by itself: as every HDF5 call,
 * these run under the global HDF5 lock unless said otherwise.
 */
#ifndef DSV_H5_H5_SRC_H
#define DSV_H5_H5_SRC_H

#include <hdf5.h>

#include "formats/h5/h5.h"
#include "formats/h5/h5_vds.h"
#include "source/index.h"
#include "source/source_i.h"

/* One dataset being opened (h5_source.c; h5_chunks.c and h5_grid.c for a chunked
 * one): the handles, released before the open returns unless kept
 * (dsv_h5_keep). */
typedef struct dsv_h5_open {
	dsv_source *s;
	dsv_errbuf *eb;
	hid_t lapl, file, dset, dcpl, ftype, space;
	hsize_t dims[DSV_MAX_DIMS];
	int conv; /* element type needs library conversion */
	char conv_why[64];
	dsv_h5_chunk_check *cc; /* for the fallback's h5_state */
} dsv_h5_open;

/* A virtual dataset as its open found it (h5_vds.c): its element type,
 * shape and fill value, and its n mappings, each a selection pair with
 * the source's file and dataset names as stored. */
typedef struct dsv_h5_vds {
	int found; /* the dataset opened was virtual */
	dsv_dtype dtype;
	int ndim;
	uint64_t dims[DSV_MAX_DIMS];
	unsigned char fill[8]; /* one element, little-endian */
	size_t n;
	dsv_vds_map *maps;
	char **files, **dsets;
} dsv_h5_vds;

/* As dsv_source_open_h5; a virtual dataset is not refused when vds is not
 * NULL: its mappings are read into *vds (found set; *out stays NULL). */
int dsv_h5_open_any(const char *path, const char *dataset, dsv_source **out, dsv_h5_vds *vds,
		    dsv_errbuf *eb);
/* Reads the open virtual dataset's mappings into v (its dtype from
 * o->s->info.dtype). @return 0, or a dsv_err with eb set (v may hold part:
 * dsv_h5_vds_free it either way). */
int dsv_h5_read_vds(dsv_h5_open *o, const char *path, const char *dname, dsv_h5_vds *v,
		    dsv_errbuf *eb);
void dsv_h5_vds_free(dsv_h5_vds *v);

/* h5_index.c: the table's index cache hooks (source/format.h's save and
 * load): a contiguous dataset read with pread alone is kept, and a
 * chunked one of whole-row chunks read with pread alone; no other. */
int dsv_h5_index_save(const dsv_source *s, dsv_index_buf *out);
int dsv_h5_index_load(const char *file, const char *dataset, const void *blob, size_t len,
		      const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb);

/* The fork probe's work for every HDF5 file dsview reads (src/formats/h5/probe.c):
 * lists the file's datasets, opens and describes each as a mount or `info`
 * would. Runs in the probe's child process, without the lock. */
void dsv_h5_probe_all(const char *path);

/* Keeps an open source's file and dataset handles and its chunk check
 * (cc, may be NULL) for fallback reads, with the memory type of its
 * dtype, and sets s->fmt and s->fmt_close. @return 0 with *file, *dset and
 * *cc taken (-1, -1, NULL); DSV_ERR_NOMEM with nothing taken; or
 * DSV_ERR_INTERNAL (no memory type) with all three taken and closed. */
int dsv_h5_keep(dsv_source *s, hid_t *file, hid_t *dset, dsv_h5_chunk_check **cc);

/* Maps an HDF5 element type to a dsv_dtype (h5_type.c). *conv is set when
 * the stored layout is not plain little-endian (the library must convert:
 * fallback), and conv_why names it (for info: "big-endian float32").
 * @return 0, or DSV_ERR_UNSUPPORTED with the type named in eb's reason
 * ("string", "enum of uint128", ...). */
int dsv_h5_classify_type(hid_t t, dsv_dtype *dt, int *conv, char *conv_why, size_t conv_cap,
			 dsv_errbuf *eb);

/* A chunked dataset (h5_chunks.c): the fast path (a chunk map of whole
 * rows), the N-d grid (chunks that split rows), or the library (sets
 * *fallback, with o->cc and the reason in info.why), or refused; sets
 * *band_rows (the file's chunk rows) and *unwritten (row chunks never
 * written: the library serves them). @return 0 or a dsv_err, eb set. */
int dsv_h5_open_chunked(dsv_h5_open *o, int *fallback, hsize_t *band_rows, uint64_t *unwritten);

/* A chunk dsv_h5_locate_chunks could not take: its index, its stored size,
 * and whether it was the library that would not locate it; or how many
 * chunks the library's index holds beyond those the extent's lookups
 * found. */
typedef struct dsv_h5_bad_chunk {
	uint64_t index, size;
	int unlocated;
	uint64_t beyond;
} dsv_h5_bad_chunk;

/* Locates the n chunks of dset, boxes of cdims on a grid of gcount chunks
 * along each axis (chunks of whole rows: one along every axis but the
 * first), in C order of their grid positions, into s->more->chunk_off,
 * chunk_size and chunk_mask (allocated here; s->close frees them), adding
 * their sizes to info.stored_bytes: raw bytes a chunk, codec and fl32 the
 * pipeline (s->more->codec_filter_bit and fl32_filter_bit set). A chunk never
 * written is DSV_SRC_UNALLOCATED and counts in *unwritten when
 * unwritten_ok. @return 0; DSV_ERR_NOTFOUND at the first chunk never
 * written when not unwritten_ok; DSV_ERR_CORRUPT (eb not set; *bad says
 * which) for a chunk whose stored size no encoding of it has or that the
 * library will not locate; DSV_ERR_UNSUPPORTED (eb not set; bad->beyond
 * says how many) when the library's index holds more chunks than the
 * extent's lookups found (chunks outside the extent: the library's to
 * read); DSV_ERR_FORMAT when it holds fewer, or DSV_ERR_NOMEM, eb set. */
int dsv_h5_locate_chunks(dsv_source *s, hid_t dset, hid_t space, const hsize_t *cdims,
			 const uint64_t *gcount, uint64_t n, uint64_t raw, int codec, int fl32,
			 int unwritten_ok, uint64_t *unwritten, dsv_h5_bad_chunk *bad,
			 dsv_errbuf *eb);

/* Frees the chunk map dsv_h5_locate_chunks made and forgets its bytes. */
void dsv_h5_drop_chunk_map(dsv_source *s);

/* Opens a chunked dataset whose chunks split rows (chunks of cdims)
 * through the N-d grid (h5_grid.c), with s->codec and the filter bits
 * already set. @return 0; DSV_ERR_UNSUPPORTED with the reason in
 * info.why when it must stay on the library path (nothing kept); or
 * another error with eb set. */
int dsv_h5_open_grid(dsv_h5_open *o, const hsize_t *cdims, int codec, int fl32);

/* Finds and checks the block table `dsview pack` wrote for an LZ4 store
 * (h5_table.c) once info.lz4_block is known, and keeps its offset; a
 * missing or unfit table leaves the source without one. */
void dsv_h5_open_block_table(dsv_source *s, hid_t file, hid_t lapl);

/* h5_store.c: a dsview store's recorded scaling (pack of a NIfTI image)
 * into s->info.has_scale, scale and offset; needs s->attrs_json. */
void dsv_h5_store_scale(dsv_source *s);

/* h5_dims.c: the dataset's axis names from its dimension scales and
 * labels into s->info.dim_names (s->dims_json), or none; needs the shape. */
void dsv_h5_dim_names(dsv_source *s, hid_t dset);

#endif
