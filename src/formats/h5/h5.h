/*
 * The HDF5 layer: what every user of the HDF5 library in dsview (sources,
 * `dsview info`, pack) shares. It sits below src/source/ and src/pack/ and
 * includes neither.
 *
 *   lib.c     the one global lock and the library's set-up
 *   driver.c  the read-only file driver; where a chunk's bytes are
 *   probe.c   the fork probe: the library reads a file first in a child
 *   guard.c   stored-chunk checks before the library decodes a chunk
 *   decode.c  size limits on the decoders the library runs (zlib's
 *             inflate, szip, our LZ4 filter)
 *   links.c   the link walk that refuses external and user-defined links
 *   attr.c    attributes and scalar datasets as plain values
 *
 * Thread safety: Debian's HDF5 1.10 is built thread-safe (H5_HAVE_THREADSAFE,
 * "Threadsafety: yes" in libhdf5.settings), so the library serialises its own
 * API calls. dsview still runs every HDF5 call between dsv_h5_lock() and
 * dsv_h5_unlock(): its own state spans several library calls (the armed
 * driver, the decoders' expected sizes, the probe's fork), and a build
 * without thread safety must work too. No other dsview lock is taken while
 * it is held. Everything below except dsv_h5_probe and dsv_h5_check_input
 * is to be called with the lock held.
 */
#ifndef DSV_H5_H5_H
#define DSV_H5_H5_H

#include <hdf5.h>
#include <stdint.h>

#include "dsview/dsview.h"
#include "dsview/h5info.h"

/* lib.c */

/* Takes the lock; the first caller also sets the library up: plugin
 * loading off, automatic error printing off, dsview's LZ4 filter (32004)
 * registered, the read-only driver registered. @return 0, or -1 (lock
 * still taken) if the driver could not be set up; plain HDF5 calls still
 * work then. */
int dsv_h5_lock(void);
void dsv_h5_unlock(void);
/* 1 if the calling thread holds the lock. */
int dsv_h5_lock_held(void);
/* A file access property list for H5Fopen of untrusted files through the
 * read-only driver; valid while the lock is held and dsv_h5_lock gave 0. */
hid_t dsv_h5_ro_fapl(void);
/* The innermost description on this thread's HDF5 error stack (what the
 * library said went wrong in the call that just failed: "bad symbol table
 * node signature"), into buf; "no reason given by the HDF5 library" when
 * the stack is empty; *truncated (may be NULL) says whether the library
 * found the file shorter than it should be. Call right after the failed
 * call. @return buf. */
const char *dsv_h5_error_reason(char *buf, size_t cap, int *truncated);
/* The error for an H5Fopen of path that just failed, from the library's
 * error stack: DSV_ERR_TRUNCATED for a file shorter than its superblock
 * says (a cut copy: its chunks would lie past the end), else
 * DSV_ERR_FORMAT, "not an HDF5 file, or damaged (reason)". Every opener
 * (sources, listing, info) says the same. @return the error. */
int dsv_h5_open_failed(const char *path, dsv_errbuf *eb);
/* A new little-endian HDF5 type for dt (IEEE binary16 for DSV_F16), or -1;
 * the caller closes it. */
hid_t dsv_h5_type(dsv_dtype dt);
/* The memory type the library reads a dataset of file type ftype into, as
 * the bytes of dt (the dtype dsv_h5_classify_type gave it): dsv_h5_type(dt),
 * but a little-endian bitfield of the same size for a bitfield, which HDF5
 * 1.10 cannot convert to an integer. A new type, or -1; the caller closes it. */
hid_t dsv_h5_mem_type(hid_t ftype, dsv_dtype dt);

/* driver.c */

/* Registers the read-only driver. @return a file access list selecting
 * it, or -1. Called once, by dsv_h5_lock's set-up. */
hid_t dsv_h5_ro_register(void);
/* Whether file, opened through dsv_h5_ro_fapl, is the file open as fd
 * (same device and inode), or, when net is not NULL, the same version of
 * the object net (the same URL and ETag). @return 1 yes, 0 no, or a
 * dsv_err. */
struct dsv_net_obj;
int dsv_h5_same_file(hid_t file, int fd, const struct dsv_net_obj *net);
/* Where the stored bytes of the chunk at element offsets coord are:
 * H5Dread_chunk does one index lookup and one raw-data read, which the
 * armed driver records instead of doing. buf must hold size bytes
 * (H5Dget_chunk_storage_size); it is not written. @return 0 with the
 * absolute file offset in *addr and the chunk's filter mask in *mask, or
 * -1 if the library did anything else. */
int dsv_h5_locate_chunk(hid_t dset, const hsize_t *coord, hsize_t size, void *buf, haddr_t *addr,
			unsigned *mask);

/* driver.c: errno of this thread's last open of a file by the read-only
 * driver that failed, 0 when the last did not fail. */
int dsv_h5_ro_open_errno(void);

/* probe.c */

/* The work of a probe child: read path with the library as a mount or
 * `info` would. It runs in a child process and need not clean up. */
typedef void (*dsv_h5_probe_fn)(const char *path);
/* Runs work(path) first in a child process. If the child dies (HDF5 1.10
 * crashes on some damaged files), so would we: @return DSV_ERR_FORMAT
 * with eb "path: damaged HDF5 file: ...". Each file (device, inode, size,
 * mtime) is probed once per process; errors the library reports are left
 * for the caller to meet itself. A missing file returns 0 (the caller
 * reports it). Call without the lock. */
int dsv_h5_probe(const char *path, dsv_h5_probe_fn work, dsv_errbuf *eb);
/* Around any fork of this process (lib.c's pthread_atfork handlers):
 * before (1), the probe's lock taken unless this thread holds it; after
 * (0), in parent and child, given back if it was taken then. */
void dsv_h5_probe_fork(int before);
/* Probes the local files paths[0 .. n) not probed yet in as few child
 * processes as it can: one runs through them all, and after a crash the
 * next starts past the file that crashed (remembered as damaged, its
 * open then refused as dsv_h5_probe's). Their opens then find them
 * probed: a view of thousands of HDF5 files forks a few times, not once
 * a file. Call without the lock. */
void dsv_h5_probe_many(char *const *paths, size_t n, dsv_h5_probe_fn work);
/* Before the library opens path: our own stat, which gives the clearest
 * message, then the probe. @return 0, or DSV_ERR_NOTFOUND/IO/INVALID/FORMAT
 * with eb "path: reason". Call without the lock. */
int dsv_h5_check_input(const char *path, dsv_h5_probe_fn work, dsv_errbuf *eb);

/* guard.c */

/* What the library will do with each stored chunk of one chunked dataset
 * read through it; owned by the caller (dsv_h5_chunk_check_free). */
typedef struct dsv_h5_chunk_check dsv_h5_chunk_check;
/* ndim, dims, cdims: the dataset's and its chunks' shapes; type_size: the
 * stored element size; elems: elements in a chunk (UINT64_MAX: too many);
 * ids, cds, ncds: the nf filters of the pipeline, in encoding order, with
 * their first DSV_H5_MAX_CD parameters (nf at most DSV_H5_MAX_FILTERS);
 * opts: H5Pget_chunk_opts. @return NULL when out of memory. */
dsv_h5_chunk_check *dsv_h5_chunk_check_new(int ndim, const hsize_t *dims, const hsize_t *cdims,
					   size_t type_size, uint64_t elems, int nf,
					   const H5Z_filter_t *ids,
					   const unsigned (*cds)[DSV_H5_MAX_CD], const size_t *ncds,
					   unsigned opts);
void dsv_h5_chunk_check_free(dsv_h5_chunk_check *c); /* accepts NULL */
/* Checks every chunk a read of n elements from flat element start (rows
 * of row_elems elements) may touch, and arms the decoders' size checks for
 * the read that follows (dsv_h5_decode_disarm after it). s is the source
 * of the same file, for the few bytes a check reads itself.
 * @return 0, DSV_ERR_CORRUPT or DSV_ERR_NOMEM. */
struct dsv_source;
int dsv_h5_check_read_chunks(dsv_h5_chunk_check *c, hid_t dset, const struct dsv_source *s,
			     uint64_t row_elems, uint64_t start, uint64_t n);
/* nbit and scaleoffset size their output from parameters stored in the
 * file; @return 1 if filter id's parameters describe a chunk of elems
 * elements of type_size bytes (and for any other filter), else 0. */
int dsv_h5_filter_params_ok(H5Z_filter_t id, const unsigned *cd, size_t ncd, uint64_t elems,
			    size_t type_size);

/* decode.c */

/* Registers dsview's own filters with the library: LZ4 (32004), and the
 * decoders of Zstandard (32015), LZF (32000), Blosc (32001) and
 * bitshuffle (32008), so that chunks the library must read for us (rows
 * split across chunks, shuffle in front) are decoded by dsview's
 * bounds-checked codecs, never by a plugin.
 * @return as H5Zregister. Called once, by dsv_h5_lock's set-up. */
herr_t dsv_h5_decode_init(void);
/* The decoders whose output sizes are checked, indexes of the expected
 * sizes below. */
enum {
	DSV_H5_DEC_DEFLATE,
	DSV_H5_DEC_LZ4,
	DSV_H5_DEC_SZIP,
	DSV_H5_DEC_ZSTD,
	DSV_H5_DEC_LZF,
	DSV_H5_DEC_BLOSC,
	DSV_H5_DEC_BSHUF,
	DSV_H5_NDEC
};
/* The decoder (DSV_H5_DEC_*) of HDF5 filter id, or -1 for one whose size
 * is not checked (shuffle, Fletcher32, nbit, scaleoffset, ...). */
int dsv_h5_decoder_of(H5Z_filter_t id);
/* The exact decoded sizes the next library read must see from each
 * decoder (0: not checked). Cleared by disarm. */
void dsv_h5_decode_arm(const size_t expect[DSV_H5_NDEC]);
void dsv_h5_decode_disarm(void);

/* attr.c */

#define DSV_H5_ATTRS_MAX 256       /* attributes read from one object */
#define DSV_H5_ATTR_MAX_ELEMS 1024 /* numbers read from one attribute */
/* The one string attr (an attribute or a dataset) holds, variable or fixed
 * length, NUL-terminated in a new buffer, or NULL when it is not one
 * string of at most max bytes. */
char *dsv_h5_attr_string(hid_t attr, size_t max);
/* The value of obj (an attribute or a small dataset) as JSON text: a
 * number, a string, or an array of numbers; NULL for anything else. */
char *dsv_h5_value_json(hid_t obj);
/* The attributes of obj (a dataset or group) as the text of a JSON object,
 * {name: value}, in name order: numbers, arrays of numbers (C order,
 * flattened; NaN and infinities as null), strings. Others, and names that
 * are not UTF-8, are passed over. @return a new string (free it), or NULL
 * when there is none to give. */
char *dsv_h5_attrs_json(hid_t obj);

/* links.c */

/* A link access property list whose external-link callback refuses to
 * open another file; the caller closes it. */
hid_t dsv_h5_make_lapl(hid_t cls);
/* Walks every component of dname (and of soft-link targets, recursively)
 * in file, refusing external and user-defined links by name. path is for
 * messages. @return 0 or a dsv_err with eb about path, where dname. */
int dsv_h5_check_links(hid_t file, hid_t lapl, const char *path, const char *dname, dsv_errbuf *eb);

#endif
