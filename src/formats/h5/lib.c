/*
 * The one HDF5 lock and the library's set-up (see h5.h for why a lock at
 * all, when Debian's library is thread-safe).
 *
 * The first dsv_h5_lock() sets the library up before anything can read a
 * file: no teardown at exit, dynamic filter plugins never loaded (a file
 * must not choose code to run), the library's own error printing off (we
 * report through dsv_errf), dsview's LZ4 filter registered in-process
 * (decode.c), and the read-only driver registered (driver.c). h5_ready and
 * ro_fapl are written once, under the lock, and read under it.
 */
#include <hdf5.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "formats/h5/h5.h"
#include "source/source_i.h"
#include "source/source.h"

static pthread_mutex_t h5_lock = PTHREAD_MUTEX_INITIALIZER;
static int h5_ready;       /* under h5_lock */
static hid_t ro_fapl = -1; /* file access list selecting the driver */
/* Set while this thread holds h5_lock: the decoders decode.c interposes
 * for the library check sizes only for the lock holder (the library's
 * own calls); every other caller gets zlib's and libaec's functions. */
static __thread int h5_held;
/* h5_lock was taken for a fork by this thread (before_fork). */
static __thread int fork_took;

/* A fork while another thread is inside the library would leave the
 * child a library state half changed and h5_lock held for ever: every
 * fork waits for the locks (the probe's first, as everywhere), so the
 * child of a reader's process may use HDF5 (src/reader). A thread that
 * forks holding them (the probe) keeps them. */
static void before_fork(void)
{
	dsv_h5_probe_fork(1);
	if (!h5_held) {
		pthread_mutex_lock(&h5_lock);
		fork_took = 1;
	}
}

static void after_fork(void)
{
	if (fork_took) {
		fork_took = 0;
		pthread_mutex_unlock(&h5_lock);
	}
	dsv_h5_probe_fork(0);
}

int dsv_h5_lock(void)
{
	pthread_mutex_lock(&h5_lock);
	h5_held = 1;
	if (!h5_ready) {
		/* No teardown at exit: after a failed flush (a full disk while
		 * packing) HDF5 1.10 keeps the file open and crashes closing it
		 * again from its atexit handler. The kernel cleans up anyway. */
		H5dont_atexit();
		H5open();
		H5PLset_loading_state(0);
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		dsv_h5_decode_init();
		ro_fapl = dsv_h5_ro_register();
		dsv_source_fds_atfork(); /* its lock after ours in a fork (source_i.h) */
		pthread_atfork(before_fork, after_fork, after_fork);
		h5_ready = 1;
	}
	/* Debian's library is built thread-safe, so error printing is a
	 * setting of each thread's own error stack: off again for this one
	 * (verify and the daemon read from worker threads). */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return ro_fapl >= 0 ? 0 : -1;
}

void dsv_h5_unlock(void)
{
	h5_held = 0;
	pthread_mutex_unlock(&h5_lock);
}

int dsv_h5_lock_held(void)
{
	return h5_held;
}

typedef struct reason_ctx {
	char *buf;
	size_t cap;
	int truncated;
} reason_ctx;

static herr_t innermost_cb(unsigned n, const H5E_error2_t *e, void *arg)
{
	reason_ctx *r = arg;
	if (n == 0 && e->desc)
		snprintf(r->buf, r->cap, "%s", e->desc);
	if (e->min_num == H5E_TRUNCATED)
		r->truncated = 1;
	return 0;
}

const char *dsv_h5_error_reason(char *buf, size_t cap, int *truncated)
{
	reason_ctx r = { buf, cap, 0 };
	if (!cap)
		return buf;
	buf[0] = '\0';
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_cb, &r);
	if (truncated)
		*truncated = r.truncated;
	if (!buf[0])
		snprintf(buf, cap, "no reason given by the HDF5 library");
	return buf;
}

int dsv_h5_open_failed(const char *path, dsv_errbuf *eb)
{
	char why[256];
	int truncated, e = dsv_h5_ro_open_errno();
	if (e == EMFILE || e == ENFILE) /* the file was never read */
		return dsv_errf_at(eb, DSV_ERR_IO, path, NULL, "%s%s", strerror(e),
				   dsv_source_open_hint(e));
	dsv_h5_error_reason(why, sizeof(why), &truncated);
	if (truncated)
		return dsv_errf_at(
			eb, DSV_ERR_TRUNCATED, path, NULL,
			"truncated: the file is shorter than its HDF5 superblock says (%s)", why);
	return dsv_errf_at(eb, DSV_ERR_FORMAT, path, NULL, "not an HDF5 file, or damaged (%s)",
			   why);
}

hid_t dsv_h5_ro_fapl(void)
{
	return ro_fapl;
}

hid_t dsv_h5_type(dsv_dtype dt)
{
	hid_t t;
	switch (dt) {
	case DSV_U8: return H5Tcopy(H5T_STD_U8LE);
	case DSV_I8: return H5Tcopy(H5T_STD_I8LE);
	case DSV_U16: return H5Tcopy(H5T_STD_U16LE);
	case DSV_I16: return H5Tcopy(H5T_STD_I16LE);
	case DSV_U32: return H5Tcopy(H5T_STD_U32LE);
	case DSV_I32: return H5Tcopy(H5T_STD_I32LE);
	case DSV_U64: return H5Tcopy(H5T_STD_U64LE);
	case DSV_I64: return H5Tcopy(H5T_STD_I64LE);
	case DSV_F32: return H5Tcopy(H5T_IEEE_F32LE);
	case DSV_F64: return H5Tcopy(H5T_IEEE_F64LE);
	case DSV_F16:
		/* HDF5 1.10 predefines no half type: derive IEEE binary16. */
		t = H5Tcopy(H5T_IEEE_F32LE);
		if (t < 0)
			return t;
		if (H5Tset_fields(t, 15, 10, 5, 0, 10) < 0 || H5Tset_precision(t, 16) < 0 ||
		    H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, 15) < 0) {
			H5Tclose(t);
			return -1;
		}
		return t;
	default: return -1;
	}
}

hid_t dsv_h5_mem_type(hid_t ftype, dsv_dtype dt)
{
	if (H5Tget_class(ftype) == H5T_BITFIELD) {
		switch (dsv_dtype_size(dt)) {
		case 1: return H5Tcopy(H5T_STD_B8LE);
		case 2: return H5Tcopy(H5T_STD_B16LE);
		case 4: return H5Tcopy(H5T_STD_B32LE);
		case 8: return H5Tcopy(H5T_STD_B64LE);
		default: return -1;
		}
	}
	return dsv_h5_type(dt);
}
