/*
 * The one HDF5 lock. Debian's HDF5 is built without thread safety, so every
 * HDF5 call anywhere in dsview (sources, pack, info) runs between
 * dsv_h5_lock() and dsv_h5_unlock(). The first lock also sets the library
 * up: plugin loading off, automatic error printing off, dsview's LZ4 filter
 * (32004) registered, and the read-only file driver behind dsv_h5_ro_fapl().
 */
#ifndef DSV_H5_I_H
#define DSV_H5_I_H

#include <hdf5.h>

#include "dsview/dsview.h"

/* Takes the lock. @return 0, or -1 (lock still taken) if the read-only
 * driver could not be set up; plain HDF5 calls still work then. */
int dsv_h5_lock(void);
void dsv_h5_unlock(void);
/* A file access property list for H5Fopen of untrusted files through the
 * read-only driver; valid while the lock is held and dsv_h5_lock gave 0. */
hid_t dsv_h5_ro_fapl(void);
/* A new little-endian HDF5 type for dt (IEEE binary16 for DSV_F16), or -1;
 * the caller closes it. Call with the lock held. */
hid_t dsv_h5_type(dsv_dtype dt);

/* Before HDF5 opens path: our own stat, which gives the clearest message,
 * then dsv_h5_probe. @return 0, or DSV_ERR_NOTFOUND/IO/INVALID/FORMAT with
 * eb "path: reason". */
int dsv_h5_check_input(const char *path, dsv_errbuf *eb);
/* Runs the HDF5 library over path first in a child process: it lists the
 * file's datasets, opens and describes each as a mount or `info` would,
 * and exits. If the child dies (HDF5 1.10 crashes on some damaged files),
 * so would we: @return DSV_ERR_FORMAT with eb "path: ... damaged". Each
 * file (device, inode, size, mtime) is probed once per process; errors
 * the library reports are left for the caller to meet itself. Call
 * without the lock. */
int dsv_h5_probe(const char *path, dsv_errbuf *eb);
/* A link access property list whose external-link callback refuses to
 * open another file; the caller closes it. */
hid_t dsv_h5_make_lapl(hid_t cls);
/* Walks every component of dname (and of soft-link targets, recursively)
 * in file, refusing external and user-defined links by name. path is for
 * messages. @return 0 or a dsv_err with eb "path:dname: reason". */
int dsv_h5_check_links(hid_t file, hid_t lapl, const char *path, const char *dname,
		       dsv_errbuf *eb);

#endif
