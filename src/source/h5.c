/*
 * HDF5 dataset sources.
 *
 * At open (mount) time we ask the HDF5 library where the bytes are, then
 * mostly stop using it: contiguous datasets become a flat run at
 * data_offset, and chunked datasets whose chunks are whole rows with no
 * filter, LZ4 (32004) and/or Fletcher32 become a chunk map (offset, size,
 * filter mask per chunk) that source.c reads with pread from any thread.
 * Everything else the library can decode (gzip, shuffle, big-endian types,
 * chunks that split rows, compact layout, never-written data) is read
 * through H5Dread: kind DSV_SRC_H5_FALLBACK, serialised.
 *
 * Locking: the serial HDF5 build is not thread-safe, so every HDF5 call in
 * this process goes through h5_enter()/h5_leave(), one global mutex; that
 * includes open, list and close, not just the fallback reads. No other lock
 * is taken while it is held.
 *
 * Trust: the file is untrusted. Dynamic filter plugins are never loaded
 * (a file must not choose code to run), external links are never followed
 * and external storage / virtual datasets are refused (either could point
 * at any file on the machine), and every chunk address and size the library
 * reports is checked before it is used.
 *
 * Damaged files: HDF5 1.10 trusts some sizes it reads (an allocation it
 * does not check, then a copy into it: `make fuzz` found H5Lvisit writing
 * through NULL). So every file is first read by the library in a child
 * process (dsv_h5_probe), and a crash there becomes "damaged file".
 *
 * Fork: sources are opened before the daemon forks; the child inherits the
 * library state and its file descriptors. That is fine for the serial
 * library as long as the parent leaves with _exit() and closes nothing.
 *
 * Chunk maps: HDF5 1.10 has no O(1) public way to learn where a chunk is.
 * H5Dget_chunk_info and H5Dget_chunk_info_by_coord both walk the whole
 * index from its start on every call (16000 chunks: 2 s with a v1 B-tree,
 * 15-30 s with the 1.10 array indexes; 100000 chunks: minutes), and both
 * report addresses relative to the HDF5 base address, which is wrong for
 * pread in a file with a user block. H5Dread_chunk, though, finds a chunk
 * with one index lookup and then reads exactly its stored bytes through the
 * file driver. So files are opened through a small read-only pread driver
 * of our own (also: no file locking, nothing ever written), and while a
 * chunk map is resolved the driver is armed to record, rather than perform,
 * the one raw-data read H5Dread_chunk makes: that read's absolute offset
 * and size are the chunk's.
 */
/* HDF5 1.12 renamed H5Lget_info/H5Lvisit's structs; ask for the 1.10
 * names so this file also builds against 1.12. */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#if H5_VERSION_GE(1, 13, 0)
/* 1.13 added version/value/ctl/vector members to H5FD_class_t; ro_class
 * below needs them filled in (and testing) before it can register there. */
#error "src/source/h5.c: the read-only file driver is written for HDF5 1.10/1.12"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "dsview/codec.h"
#include "dsview/h5info.h"
#include "source/h5_i.h"
#include "source/source_i.h"

#define H5_FILTER_FLETCHER32_ID 3
/* Sanity caps on what a file may ask of us before we allocate. */
#define H5_MAX_CHUNKS (1ull << 28)
#define H5_MAX_LINK_DEPTH 16
#define H5_MAX_PATH 4096
#define H5_MAX_DATASETS (1u << 20)
/* A fallback chunk is aligned to the file's own chunk bands when a band is
 * at most this big, so one dsview chunk never decodes an HDF5 chunk twice. */
#define H5_MAX_BAND_BYTES (16u << 20)

static pthread_mutex_t h5_lock = PTHREAD_MUTEX_INITIALIZER;
static int h5_ready;          /* under h5_lock */
static hid_t ro_fapl = -1;    /* file access list selecting ro_class */

/*
 * The read-only pread driver. Everything below runs inside HDF5 calls, so
 * under h5_lock; ro_probe is therefore safe as a plain static.
 */
typedef struct ro_file {
	H5FD_t pub; /* first: HDF5 fills it in and casts back */
	int fd;
	haddr_t eoa, eof;
	dev_t dev;
	ino_t ino;
} ro_file;

static struct {
	int armed;    /* record raw-data reads instead of doing them */
	int hits;
	haddr_t addr; /* absolute file offset of the last recorded read */
	size_t size;
} ro_probe;

/* Largest address a 64-bit off_t reaches. */
#define RO_MAXADDR ((haddr_t)INT64_MAX)

static H5FD_t *ro_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
	struct stat st;
	ro_file *f;
	int fd;

	(void)fapl;
	if ((flags & (H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_CREAT)) || maxaddr == 0 ||
	    maxaddr == HADDR_UNDEF || maxaddr > RO_MAXADDR)
		return NULL;
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f || fstat(fd, &st) < 0) {
		free(f);
		close(fd);
		return NULL;
	}
	f->fd = fd;
	f->eof = (haddr_t)st.st_size;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	return &f->pub;
}

static herr_t ro_close(H5FD_t *file)
{
	ro_file *f = (ro_file *)file;
	int r = close(f->fd);
	free(f);
	return r < 0 ? -1 : 0;
}

/* The library opens a file only once when cmp says two opens are the same. */
static int ro_cmp(const H5FD_t *a, const H5FD_t *b)
{
	const ro_file *x = (const ro_file *)a, *y = (const ro_file *)b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static herr_t ro_query(const H5FD_t *file, unsigned long *flags)
{
	(void)file;
	*flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
		 H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA;
	return 0;
}

static haddr_t ro_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
	(void)type;
	return ((const ro_file *)file)->eoa;
}

static herr_t ro_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
	(void)type;
	((ro_file *)file)->eoa = addr;
	return 0;
}

static haddr_t ro_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
	(void)type;
	return ((const ro_file *)file)->eof;
}

static herr_t ro_get_handle(H5FD_t *file, hid_t fapl, void **handle)
{
	(void)fapl;
	*handle = &((ro_file *)file)->fd;
	return 0;
}

static herr_t ro_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
		      void *buf)
{
	ro_file *f = (ro_file *)file;
	char *p = buf;

	(void)dxpl;
	if (addr == HADDR_UNDEF || addr > RO_MAXADDR || size > RO_MAXADDR - addr)
		return -1;
	if (ro_probe.armed && type == H5FD_MEM_DRAW) {
		ro_probe.hits++;
		ro_probe.addr = addr;
		ro_probe.size = size;
		return 0;
	}
	while (size) {
		ssize_t got = pread(f->fd, p, size, (off_t)addr);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (got == 0) {
			/* Raw data past the end: the file shrank after open,
			 * and zeros would be served as data. Metadata reads
			 * past the end are the library's speculative reads
			 * (superblock): zeros, as HDF5's POSIX driver gives. */
			if (type == H5FD_MEM_DRAW)
				return -1;
			memset(p, 0, size);
			break;
		}
		p += got;
		size -= (size_t)got;
		addr += (haddr_t)got;
	}
	return 0;
}

static herr_t ro_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
		       const void *buf)
{
	(void)file, (void)type, (void)dxpl, (void)addr, (void)size, (void)buf;
	return -1;
}

static const H5FD_class_t ro_class = {
	.name = "dsview_ro",
	.maxaddr = RO_MAXADDR,
	.fc_degree = H5F_CLOSE_WEAK,
	.open = ro_open,
	.close = ro_close,
	.cmp = ro_cmp,
	.query = ro_query,
	.get_eoa = ro_get_eoa,
	.set_eoa = ro_set_eoa,
	.get_eof = ro_get_eof,
	.get_handle = ro_get_handle,
	.read = ro_read,
	.write = ro_write,
	.fl_map = H5FD_FLMAP_DICHOTOMY,
};

/*
 * Filter output sizes. HDF5 1.10 copies a whole chunk out of whatever its
 * filter pipeline returned, without checking the size: a gzip chunk that
 * inflates to 24 bytes of a 48-byte chunk is read 24 bytes past the end of
 * a heap buffer (`make fuzz`), and `verify` said OK while the mount served
 * those bytes as data. So the decoders the library runs for us must make
 * exactly the size the dataset's chunk calls for: our LZ4 filter below, and
 * zlib's inflate, which the library's own (unreplaceable: H5Zregister
 * refuses predefined ids) deflate filter calls through the dynamic linker,
 * so this program's inflate() below is the one it gets. The sizes are set
 * per fallback read, under h5_lock; 0 means not checked.
 */
static size_t expect_deflate, expect_lz4, expect_szip;
static int (*real_inflate)(z_streamp, int); /* set in h5_enter() */

int inflate(z_streamp strm, int flush)
{
	int rc = real_inflate ? real_inflate(strm, flush) : Z_STREAM_ERROR;
	if (expect_deflate && (rc == Z_OK || rc == Z_STREAM_END) &&
	    (strm->total_out > expect_deflate ||
	     (rc == Z_STREAM_END && strm->total_out != expect_deflate)))
		return Z_DATA_ERROR;
	return rc;
}

/* szip: the library takes the decoded size from the chunk's first 4 bytes
 * and hands libsz (libaec) a buffer of that size; a chunk that claims less
 * than a chunk is copied out whole just the same. Interposed like inflate;
 * the parameter block is opaque here (libaec's SZ_com_t). */
int SZ_BufftoBuffDecompress(void *dest, size_t *destLen, const void *source, size_t sourceLen,
			    void *param);
int SZ_BufftoBuffDecompress(void *dest, size_t *destLen, const void *source, size_t sourceLen,
			    void *param)
{
	static int (*real)(void *, size_t *, const void *, size_t, void *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "SZ_BufftoBuffDecompress");
	if (!real || (expect_szip && *destLen != expect_szip))
		return -1; /* SZ_PARAM_ERROR: the library fails the read */
	int rc = real(dest, destLen, source, sourceLen, param);
	if (rc == 0 && expect_szip && *destLen != expect_szip)
		return -1;
	return rc;
}

/* The LZ4 filter (32004) registered in-process, so that the library
 * fallback (chunks that split rows, shuffle in front, big-endian data)
 * decodes LZ4 with our bounds-checked codec instead of a plugin. Called by
 * the library under h5_lock. Returns the new size, 0 on failure. */
static size_t lz4_filter(unsigned flags, size_t ncd, const unsigned cd[],
			 size_t nbytes, size_t *buf_size, void **buf)
{
	uint64_t raw;
	void *out;
	int64_t n;

	if (flags & H5Z_FLAG_REVERSE) {
		/* An LZ4 block expands at most 255 times; a header claiming
		 * more is hostile, and we refuse it before allocating. */
		if (dsv_lz4_raw_size(*buf, nbytes, &raw) != 0 || raw == 0 ||
		    raw / 256 > nbytes || raw > SIZE_MAX / 2 ||
		    (expect_lz4 && raw != expect_lz4))
			return 0;
		out = H5allocate_memory((size_t)raw, 0);
		if (!out)
			return 0;
		n = dsv_lz4_decode(out, (size_t)raw, *buf, nbytes);
	} else {
		size_t block = ncd > 0 && cd[0] > 0 ? cd[0] : DSV_LZ4_DEFAULT_BLOCK;
		size_t cap = dsv_lz4_bound(nbytes, block);
		out = cap ? H5allocate_memory(cap, 0) : NULL;
		if (!out)
			return 0;
		n = dsv_lz4_encode(out, cap, *buf, nbytes, block, 0);
	}
	if (n <= 0) {
		H5free_memory(out);
		return 0;
	}
	H5free_memory(*buf);
	*buf = out;
	*buf_size = (size_t)n;
	return (size_t)n;
}

static const H5Z_class2_t lz4_class = {
	.version = H5Z_CLASS_T_VERS,
	.id = DSV_H5Z_FILTER_LZ4,
	.encoder_present = 1,
	.decoder_present = 1,
	.name = "lz4 (dsview)",
	.filter = lz4_filter,
};

/* Takes the global HDF5 lock; the first caller also sets the library up:
 * before anything can read a file, plugin loading goes off, the library's
 * own error printing too (we report through dsv_errf), and our driver is
 * registered. @return 0, or -1 (lock still taken) if the driver is not. */
static int h5_enter(void)
{
	pthread_mutex_lock(&h5_lock);
	if (!h5_ready) {
		/* No teardown at exit: after a failed flush (a full disk while
		 * packing) HDF5 1.10 keeps the file open and crashes closing it
		 * again from its atexit handler. The kernel cleans up anyway. */
		H5dont_atexit();
		H5open();
		H5PLset_loading_state(0);
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		H5Zregister(&lz4_class);
		real_inflate = (int (*)(z_streamp, int))dlsym(RTLD_NEXT, "inflate");
		hid_t drv = H5FDregister(&ro_class);
		ro_fapl = H5Pcreate(H5P_FILE_ACCESS);
		if (drv < 0 || ro_fapl < 0 || H5Pset_driver(ro_fapl, drv, NULL) < 0) {
			if (ro_fapl >= 0)
				H5Pclose(ro_fapl);
			ro_fapl = -1;
		}
		h5_ready = 1;
	}
	/* Debian's library is built thread-safe, so error printing is a
	 * setting of each thread's own stack: off again for this one (verify
	 * and the daemon read from worker threads). */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return ro_fapl >= 0 ? 0 : -1;
}

static void h5_leave(void)
{
	pthread_mutex_unlock(&h5_lock);
}

int dsv_h5_lock(void)
{
	return h5_enter();
}

void dsv_h5_unlock(void)
{
	h5_leave();
}

hid_t dsv_h5_ro_fapl(void)
{
	return ro_fapl;
}

/*
 * Stored sizes of the chunks the library reads for a fallback. HDF5 1.10
 * trusts them: a chunk no decoder runs on (no filter, shuffle alone, every
 * filter skipped by its mask, an edge chunk stored unfiltered) is copied
 * out of a buffer of its stored size as if it held a whole chunk (`make
 * fuzz`: an 8-byte chunk of a 24-byte one, heap bytes served and verify
 * OK), and nbit and scaleoffset read as many input bits as their
 * parameters say, without bounds. So each chunk is checked the first time
 * a read needs it, then marked in `ok`: walking its filters from the
 * outside in, Fletcher32 strips 4 bytes, shuffle keeps the size, nbit and
 * scaleoffset need enough input and make a whole chunk; at the end, a
 * whole chunk. Outputs of gzip, LZ4 and szip are checked by their size
 * checks (inflate, lz4_filter, SZ_BufftoBuffDecompress); what lies inside
 * them is not checked here.
 */
typedef struct h5_chunk_check {
	int ndim, nf;
	hsize_t dims[DSV_MAX_DIMS], cdims[DSV_MAX_DIMS], grid[DSV_MAX_DIMS];
	uint64_t nchunks, raw;   /* chunks in the grid; bytes of one, file type */
	uint64_t elems;          /* elements in a chunk */
	struct {
		H5Z_filter_t id;
		size_t ncd;
		unsigned cd[8];
	} f[32];                 /* the pipeline, in encoding order */
	int edge_unfiltered;     /* H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS */
	/* what inflate, the LZ4 decoder and szip must make (see above); 0: unchecked */
	size_t expect_deflate, expect_lz4, expect_szip;
	uint8_t *ok;             /* a bit per chunk, or NULL: check every time */
	void *probe;             /* H5Dread_chunk's buffer; never written */
	size_t probe_cap;
} h5_chunk_check;

static void chunk_check_free(h5_chunk_check *c)
{
	if (!c)
		return;
	free(c->ok);
	free(c->probe);
	free(c);
}

/* What fallback reads need; owned by the source (s->h5). */
typedef struct h5_state {
	hid_t file;
	hid_t dset;
	hid_t mtype; /* native little-endian type of the source dtype */
	h5_chunk_check *cc; /* chunked fallbacks only */
} h5_state;

/* Call with h5_lock held. */
static void h5_state_free_locked(h5_state *h)
{
	if (!h)
		return;
	if (h->mtype >= 0)
		H5Tclose(h->mtype);
	if (h->dset >= 0)
		H5Dclose(h->dset);
	if (h->file >= 0)
		H5Fclose(h->file);
	chunk_check_free(h->cc);
	free(h);
}

static void h5_state_close(void *p)
{
	if (!p)
		return;
	(void)h5_enter(); /* closing needs no driver set-up */
	h5_state_free_locked(p);
	h5_leave();
}

/* Link access callback: refuse to traverse any external link, so that even
 * a path our walk did not foresee cannot open another file. */
static herr_t deny_elink(const char *parent_file, const char *parent_group,
			 const char *child_file, const char *child_object,
			 unsigned *acc_flags, hid_t fapl, void *op_data)
{
	(void)parent_file, (void)parent_group, (void)child_file;
	(void)child_object, (void)acc_flags, (void)fapl, (void)op_data;
	return -1;
}

hid_t dsv_h5_make_lapl(hid_t cls)
{
	hid_t p = H5Pcreate(cls);
	if (p >= 0 && H5Pset_elink_cb(p, deny_elink, NULL) < 0) {
		H5Pclose(p);
		return -1;
	}
	return p;
}

static const char *filter_name(H5Z_filter_t id)
{
	const char *name = dsv_h5_filter_name((int)id);
	return name ? name : "unknown";
}

/*
 * Walks every component of dpath and refuses external and user-defined
 * links; soft links are followed by checking their target the same way
 * (they stay inside the file, but may lead to an external link).
 */
static int check_links(hid_t file, hid_t lapl, const char *dpath, int depth,
		       const char *path, const char *dname, dsv_errbuf *eb)
{
	char buf[H5_MAX_PATH], target[H5_MAX_PATH], next[H5_MAX_PATH];
	size_t n = strlen(dpath);

	if (depth > H5_MAX_LINK_DEPTH)
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s:%s: too many nested soft links",
				path, dname);
	if (n >= sizeof(buf))
		return dsv_errf(eb, DSV_ERR_INVALID, "%s:%s: dataset path too long",
				path, dname);
	memcpy(buf, dpath, n + 1);

	for (size_t i = 0; i < n;) {
		H5L_info_t li;
		size_t end;

		while (i < n && buf[i] == '/')
			i++;
		if (i == n)
			break;
		for (end = i; end < n && buf[end] != '/'; end++)
			;
		char saved = buf[end];
		buf[end] = '\0';
		if (H5Lget_info(file, buf, &li, lapl) < 0)
			return dsv_errf(eb, DSV_ERR_NOTFOUND, "%s:%s: no such dataset (%s not found)",
					path, dname, buf);
		if (li.type == H5L_TYPE_EXTERNAL)
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
					"%s:%s: external link refused (%s)", path, dname, buf);
		if (li.type == H5L_TYPE_SOFT) {
			int len;
			if (li.u.val_size == 0 || li.u.val_size > sizeof(target) ||
			    H5Lget_val(file, buf, target, sizeof(target), lapl) < 0)
				return dsv_errf(eb, DSV_ERR_FORMAT, "%s:%s: unreadable soft link %s",
						path, dname, buf);
			target[sizeof(target) - 1] = '\0';
			if (target[0] == '/') {
				len = snprintf(next, sizeof(next), "%s", target);
			} else {
				/* Relative: resolved in the group holding the link. */
				char *slash = strrchr(buf, '/');
				int plen = slash ? (int)(slash - buf) : 0;
				len = snprintf(next, sizeof(next), "%.*s/%s", plen, buf, target);
			}
			if (len < 0 || (size_t)len >= sizeof(next))
				return dsv_errf(eb, DSV_ERR_INVALID, "%s:%s: soft link target too long",
						path, dname);
			int err = check_links(file, lapl, next, depth + 1, path, dname, eb);
			if (err)
				return err;
		} else if (li.type != H5L_TYPE_HARD) {
			return dsv_errf(eb, DSV_ERR_UNSUPPORTED,
					"%s:%s: user-defined link refused (%s)", path, dname, buf);
		}
		buf[end] = saved;
		i = end;
	}
	return 0;
}

int dsv_h5_check_links(hid_t file, hid_t lapl, const char *path, const char *dname,
		       dsv_errbuf *eb)
{
	return check_links(file, lapl, dname, 0, path, dname, eb);
}

/*
 * Maps an HDF5 element type to a dsv_dtype. *conv is set when the stored
 * layout is not plain little-endian (the library must convert: fallback);
 * why names it. @return 0 or DSV_ERR_UNSUPPORTED with the type in why.
 */
static int classify_type(hid_t t, dsv_dtype *dt, int *conv, char *why,
			 size_t why_cap)
{
	H5T_class_t cls = H5Tget_class(t);
	size_t size = H5Tget_size(t);
	H5T_order_t order = H5Tget_order(t);
	size_t prec = H5Tget_precision(t);
	int off = H5Tget_offset(t);

	*conv = 0;
	*dt = DSV_DTYPE_INVALID;
	if (cls == H5T_INTEGER) {
		int sgn = H5Tget_sign(t) == H5T_SGN_2;
		switch (size) {
		case 1: *dt = sgn ? DSV_I8 : DSV_U8; break;
		case 2: *dt = sgn ? DSV_I16 : DSV_U16; break;
		case 4: *dt = sgn ? DSV_I32 : DSV_U32; break;
		default:
			snprintf(why, why_cap, "%s%zu", sgn ? "int" : "uint", size * 8);
			return DSV_ERR_UNSUPPORTED;
		}
		if (prec != size * 8 || off != 0) {
			*conv = 1;
			snprintf(why, why_cap, "%zu-bit integer in %zu bytes", prec, size);
		}
	} else if (cls == H5T_FLOAT) {
		size_t spos, epos, esize, mpos, msize;
		static const size_t ieee[3][6] = {
			/* size, sign, exp pos, exp bits, mant bits, bias */
			{ 2, 15, 10, 5, 10, 15 },
			{ 4, 31, 23, 8, 23, 127 },
			{ 8, 63, 52, 11, 52, 1023 },
		};
		int k = size == 2 ? 0 : size == 4 ? 1 : size == 8 ? 2 : -1;
		if (k < 0) {
			snprintf(why, why_cap, "%zu-byte float", size);
			return DSV_ERR_UNSUPPORTED;
		}
		*dt = k == 0 ? DSV_F16 : k == 1 ? DSV_F32 : DSV_F64;
		if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0) {
			snprintf(why, why_cap, "unreadable float");
			return DSV_ERR_UNSUPPORTED;
		}
		int std = spos == ieee[k][1] && epos == ieee[k][2] && esize == ieee[k][3] &&
			  mpos == 0 && msize == ieee[k][4] && H5Tget_ebias(t) == ieee[k][5] &&
			  prec == size * 8 && off == 0 && H5Tget_norm(t) == H5T_NORM_IMPLIED;
		if (!std && k == 0) {
			/* We would have to pick a conversion for it; bfloat16
			 * stored this way must not silently become float16. */
			snprintf(why, why_cap, "2-byte float that is not IEEE half");
			return DSV_ERR_UNSUPPORTED;
		}
		if (!std) {
			*conv = 1;
			snprintf(why, why_cap, "non-IEEE %zu-byte float", size);
		}
	} else {
		const char *name;
		switch (cls) {
		case H5T_STRING: name = "string"; break;
		case H5T_COMPOUND: name = "compound"; break;
		case H5T_ENUM: name = "enum"; break;
		case H5T_BITFIELD: name = "bitfield"; break;
		case H5T_OPAQUE: name = "opaque"; break;
		case H5T_REFERENCE: name = "reference"; break;
		case H5T_VLEN: name = "variable-length"; break;
		case H5T_ARRAY: name = "array"; break;
		case H5T_TIME: name = "time"; break;
		default: name = "unknown"; break;
		}
		snprintf(why, why_cap, "%s", name);
		return DSV_ERR_UNSUPPORTED;
	}
	if (!*conv && size > 1 && order != H5T_ORDER_LE) {
		*conv = 1;
		snprintf(why, why_cap, "%s %s",
			 order == H5T_ORDER_BE ? "big-endian" : "mixed-endian",
			 dsv_dtype_name(*dt));
	}
	return 0;
}

/* The little-endian memory type fallback reads convert into. */
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
	default:
		return -1;
	}
}

/* Open-time working set; everything here is released before returning. */
typedef struct h5_open {
	dsv_source *s;
	dsv_errbuf *eb;
	hid_t lapl, file, dset, dcpl, ftype, space;
	hsize_t dims[DSV_MAX_DIMS];
	int conv;            /* element type needs library conversion */
	char conv_why[64];
	h5_chunk_check *cc;  /* for the fallback's h5_state */
} h5_open;

static void why_filters(h5_open *o, const H5Z_filter_t *ids, int nf)
{
	char *w = o->s->h5_why;
	size_t cap = sizeof(o->s->h5_why), len;
	len = (size_t)snprintf(w, cap, "filter%s ", nf > 1 ? "s" : "");
	for (int i = 0; i < nf && len < cap; i++)
		len += (size_t)snprintf(w + len, cap - len, "%s%s", i ? "+" : "",
					filter_name(ids[i]));
}

/* Flat element ranges for a fallback source, aligned to the file's chunk
 * bands along axis 0 when those are of reasonable size. */
static void fallback_chunks(dsv_source *s, hsize_t band_rows)
{
	uint64_t esize = dsv_dtype_size(s->info.dtype), band, band_bytes;

	dsv_source_flat_chunks(s, DSV_FALLBACK_CHUNK_BYTES);
	if (!band_rows || !s->info.row_elems || dsv_mul_u64(band_rows, s->info.row_elems, &band))
		return;
	s->band_elems = band;
	if (s->info.chunk_elems % s->info.row_elems ||
	    dsv_mul_u64(band, esize, &band_bytes) || band_bytes > H5_MAX_BAND_BYTES)
		return;
	uint64_t k = (s->info.chunk_elems + band / 2) / band;
	s->info.chunk_elems = (k ? k : 1) * band;
	s->info.nchunks = (s->info.nelems + s->info.chunk_elems - 1) / s->info.chunk_elems;
}

/*
 * Where chunk coord's stored bytes are: H5Dread_chunk does one index lookup
 * and one raw-data read, which the armed driver records instead of doing.
 * buf must hold size bytes (H5Dget_chunk_storage_size); it is not written.
 * @return 0, or -1 if the library did anything else.
 */
static int probe_chunk(hid_t dset, const hsize_t *coord, hsize_t size, void *buf,
		       haddr_t *addr, unsigned *mask)
{
	uint32_t filters = 0;
	herr_t r;

	ro_probe.armed = 1;
	ro_probe.hits = 0;
	r = H5Dread_chunk(dset, H5P_DEFAULT, coord, &filters, buf);
	ro_probe.armed = 0;
	if (r < 0 || ro_probe.hits != 1 || ro_probe.size != size)
		return -1;
	*addr = ro_probe.addr;
	*mask = filters;
	return 0;
}

/*
 * Resolves every chunk of a fast-path chunked dataset (see "Chunk maps" at
 * the top). @return 0, or a dsv_err with the message set; *unwritten counts
 * chunks the file never stored (fill values, through the library).
 */
static int resolve_chunks(h5_open *o, hsize_t chunk_rows, int lz4, int fl32,
			  uint64_t *unwritten)
{
	dsv_source *s = o->s;
	uint64_t esize = dsv_dtype_size(s->info.dtype), raw, nchunks, max_stored, allocated = 0;
	hsize_t coord[DSV_MAX_DIMS] = { 0 };
	void *probe = NULL;
	size_t probe_cap = 0;
	int err = 0;

	if (dsv_mul_u64(chunk_rows, s->info.row_elems, &s->info.chunk_elems) ||
	    dsv_mul_u64(s->info.chunk_elems, esize, &raw) || raw > UINT32_MAX)
		return dsv_errf(o->eb, DSV_ERR_FORMAT, "%s:%s: chunk size too large",
				s->path, s->dataset);
	s->chunked = 1;
	s->chunk_rows = chunk_rows;
	s->chunk_raw_size = raw;
	/* LZ4 frames are about raw + raw/255 + 16 bytes per block; anything
	 * far beyond that is not a chunk we should allocate scratch for. */
	max_stored = (lz4 ? 2 * raw + (64u << 10) : raw) + (fl32 ? 4 : 0);
	nchunks = s->info.nrows / chunk_rows + (s->info.nrows % chunk_rows != 0);
	if (s->info.nelems == 0)
		nchunks = 0;
	if (nchunks > H5_MAX_CHUNKS)
		return dsv_errf(o->eb, DSV_ERR_OVERFLOW, "%s:%s: too many chunks (%llu)",
				s->path, s->dataset, (unsigned long long)nchunks);
	s->info.nchunks = nchunks;
	*unwritten = 0;
	if (!nchunks)
		return 0;
	/* calloc checks nchunks * size for overflow. */
	s->chunk_off = calloc(nchunks, sizeof(*s->chunk_off));
	s->chunk_size = calloc(nchunks, sizeof(*s->chunk_size));
	s->chunk_mask = calloc(nchunks, sizeof(*s->chunk_mask));
	if (!s->chunk_off || !s->chunk_size || !s->chunk_mask)
		return dsv_errf(o->eb, DSV_ERR_NOMEM, "%s:%s: out of memory for %llu chunks",
				s->path, s->dataset, (unsigned long long)nchunks);

	for (uint64_t i = 0; i < nchunks; i++) {
		unsigned mask = 0;
		haddr_t addr = HADDR_UNDEF;
		hsize_t size = 0;
		uint64_t end;

		coord[0] = i * chunk_rows;
		/* HDF5 1.10 fails this call for a chunk never written (and
		 * says size 0); the count check below catches any chunk
		 * taken for unwritten that exists. */
		if (H5Dget_chunk_storage_size(o->dset, coord, &size) < 0 || size == 0) {
			s->chunk_off[i] = DSV_SRC_UNALLOCATED;
			(*unwritten)++;
			continue;
		}
		/* Checked before the probe buffer grows to it. */
		if (size > max_stored)
			goto bad_size;
		if (size > probe_cap) {
			/* Never written to (the probe skips the read), so
			 * these pages are never touched. */
			void *p = realloc(probe, (size_t)size);
			if (!p) {
				err = dsv_errf(o->eb, DSV_ERR_NOMEM, "%s: out of memory", s->path);
				goto out;
			}
			probe = p;
			probe_cap = (size_t)size;
		}
		if (probe_chunk(o->dset, coord, size, probe, &addr, &mask) < 0) {
			err = dsv_errf(o->eb, DSV_ERR_FORMAT, "%s:%s: cannot locate chunk %llu",
				       s->path, s->dataset, (unsigned long long)i);
			goto out;
		}
		int c_lz4 = lz4 && !(mask & (1u << s->lz4_filter_bit));
		int c_fl32 = fl32 && !(mask & (1u << s->fl32_filter_bit));
		uint64_t trailer = c_fl32 ? 4 : 0;
		/* Unfiltered chunks are exactly a chunk (a short one would
		 * make pread serve a neighbour's bytes). */
		if ((!c_lz4 && size != raw + trailer) || dsv_add_u64(addr, size, &end))
			goto bad_size;
		/* A chunk past the end of the file is recorded, not refused:
		 * source.c fails those reads with DSV_ERR_TRUNCATED. */
		s->chunk_off[i] = addr;
		s->chunk_size[i] = (uint32_t)size;
		s->chunk_mask[i] = mask;
		s->info.stored_bytes += size;
		allocated++;
		continue;
bad_size:
		err = dsv_errf(o->eb, DSV_ERR_FORMAT,
			       "%s:%s: chunk %llu has an impossible size (%llu bytes, raw %llu)",
			       s->path, s->dataset, (unsigned long long)i,
			       (unsigned long long)size, (unsigned long long)raw);
		goto out;
	}
	/* Serving fill values where the file has data would be silent
	 * corruption: the library's own count must agree with ours. */
	hsize_t counted = 0;
	if (H5Dget_num_chunks(o->dset, o->space, &counted) < 0 || counted != allocated)
		err = dsv_errf(o->eb, DSV_ERR_FORMAT,
			       "%s:%s: chunk index inconsistent (%llu chunks found, %llu counted)",
			       s->path, s->dataset, (unsigned long long)allocated,
			       (unsigned long long)counted);
out:
	free(probe);
	return err;
}

/* What inflate and the LZ4 decoder must make for this dataset: a filter's
 * output on read is its input on write, which is the chunk plus 4 bytes per
 * Fletcher32 applied before it (shuffle keeps the size). After any other
 * filter, or for a filter used twice, the size is not known: unchecked. */
static void filter_sizes(h5_chunk_check *c)
{
	uint64_t before = 0;
	int known = 1, n_deflate = 0, n_lz4 = 0, n_szip = 0;

	if (c->raw > SIZE_MAX / 2)
		return;
	for (int i = 0; i < c->nf; i++) {
		H5Z_filter_t id = c->f[i].id;
		size_t want = known ? (size_t)(c->raw + before) : 0;
		if (id == H5Z_FILTER_DEFLATE && n_deflate++ == 0)
			c->expect_deflate = want;
		else if (id == DSV_H5Z_FILTER_LZ4 && n_lz4++ == 0)
			c->expect_lz4 = want;
		else if (id == H5Z_FILTER_SZIP && n_szip++ == 0)
			c->expect_szip = want;
		if (id == H5_FILTER_FLETCHER32_ID)
			before += 4;
		else if (id != H5Z_FILTER_SHUFFLE)
			known = 0;
	}
	if (n_deflate > 1)
		c->expect_deflate = 0;
	if (n_lz4 > 1)
		c->expect_lz4 = 0;
	if (n_szip > 1)
		c->expect_szip = 0;
}

/* elems: elements in a chunk (UINT64_MAX: too many); ids, cds, ncds: the
 * pipeline as open_chunked read it. */
static h5_chunk_check *chunk_check_new(const h5_open *o, const hsize_t *cdims, uint64_t elems,
				       int nf, const H5Z_filter_t *ids, unsigned (*cds)[8],
				       const size_t *ncds, unsigned opts)
{
	h5_chunk_check *c = calloc(1, sizeof(*c));
	uint64_t n = 1;
	if (!c)
		return NULL;
	c->ndim = o->s->info.ndim;
	c->nf = nf;
	c->raw = H5Tget_size(o->ftype);
	c->elems = elems;
	for (int k = 0; k < c->ndim; k++) {
		c->dims[k] = o->dims[k];
		c->cdims[k] = cdims[k];
		c->grid[k] = o->dims[k] / cdims[k] + (o->dims[k] % cdims[k] != 0);
		/* overflow: the chunks are then checked, just never marked */
		if (dsv_mul_u64(n, c->grid[k], &n))
			n = UINT64_MAX;
	}
	if (dsv_mul_u64(c->raw, c->elems, &c->raw))
		c->raw = UINT64_MAX;
	for (int i = 0; i < nf; i++) {
		c->f[i].id = ids[i];
		c->f[i].ncd = ncds[i];
		memcpy(c->f[i].cd, cds[i], sizeof(c->f[i].cd));
	}
	c->edge_unfiltered = nf > 0 && (opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS);
	c->nchunks = n;
	if (n != UINT64_MAX && n <= (1ull << 34))
		c->ok = calloc((size_t)(n / 8 + 1), 1);
	filter_sizes(c);
	return c;
}

/* Bytes of input nbit (atomic types) or scaleoffset reads for one chunk;
 * minbits is scaleoffset's, from the chunk. */
static uint64_t bits_in(uint64_t elems, uint64_t bits)
{
	return bits && elems > UINT64_MAX / bits ? UINT64_MAX : (elems * bits + 7) / 8;
}

/* The stored size of the chunk at element offsets coord against what the
 * library will do with it (see h5_chunk_check). Under h5_lock.
 * @return 0, or DSV_ERR_CORRUPT */
static int check_stored_chunk(const dsv_source *s, hid_t dset, h5_chunk_check *c,
			      const hsize_t *coord)
{
	hsize_t size = 0;
	haddr_t addr = HADDR_UNDEF;
	unsigned mask = 0;
	uint64_t cur;
	int edge = 0, outermost = 1;

	/* HDF5 1.10 fails this for a chunk never written: fill values */
	if (H5Dget_chunk_storage_size(dset, coord, &size) < 0 || size == 0)
		return 0;
	if (c->raw == UINT64_MAX)
		return DSV_ERR_CORRUPT;
	for (int k = 0; k < c->ndim; k++)
		if (coord[k] + c->cdims[k] > c->dims[k])
			edge = 1;
	if (c->nf > 0 && edge && c->edge_unfiltered) {
		mask = ~0u;
	} else {
		/* no filter makes more than twice a chunk plus headers */
		if (c->raw > SIZE_MAX / 4 || size > 2 * c->raw + (64u << 10))
			return DSV_ERR_CORRUPT;
		if (size > c->probe_cap) {
			void *p = realloc(c->probe, (size_t)size);
			if (!p)
				return DSV_ERR_NOMEM;
			c->probe = p;
			c->probe_cap = (size_t)size;
		}
		/* also: the library reads the size it reports */
		if (probe_chunk(dset, coord, size, c->probe, &addr, &mask) < 0)
			return DSV_ERR_CORRUPT;
	}
	cur = size;
	for (int i = c->nf - 1; i >= 0; i--) {
		const unsigned *cd = c->f[i].cd;
		size_t ncd = c->f[i].ncd;
		if (mask >> i & 1)
			continue; /* skipped for this chunk */
		switch (c->f[i].id) {
		case H5_FILTER_FLETCHER32_ID:
			if (cur < 4)
				return DSV_ERR_CORRUPT;
			cur -= 4;
			break;
		case H5Z_FILTER_SHUFFLE:
			break;
		case H5Z_FILTER_NBIT:
			if (ncd > 1 && cd[1])
				break; /* stored as is */
			/* atomic types: precision bits per element */
			if (ncd >= 7 && cd[3] == 1 && cur < bits_in(c->elems, cd[6]))
				return DSV_ERR_CORRUPT;
			cur = c->raw; /* its parameters were checked at open */
			break;
		case H5Z_FILTER_SCALEOFFSET: {
			/* minbits leads the chunk's own bytes, which are these
			 * only while no filter outside has changed them */
			unsigned char b[4];
			if (outermost && addr != HADDR_UNDEF && ncd >= 5) {
				if (cur < 21 || dsv_source_pread(s, b, 4, addr) != 0)
					return DSV_ERR_CORRUPT;
				uint64_t minbits = b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 |
						   (uint64_t)b[3] << 24;
				uint64_t need = minbits == 8ull * cd[4] ? c->raw : bits_in(c->elems, minbits);
				if (need > cur - 21)
					return DSV_ERR_CORRUPT;
			}
			cur = c->raw;
			break;
		}
		default:
			return 0; /* a decoder runs: its size check, inflate's etc. */
		}
		if (c->f[i].id != H5_FILTER_FLETCHER32_ID)
			outermost = 0;
	}
	return cur == c->raw ? 0 : DSV_ERR_CORRUPT;
}

/* Checks every chunk a fallback read of n elements from flat element
 * start may touch: all those in the bands of rows it covers. Under h5_lock. */
static int check_read_chunks(const dsv_source *s, hid_t dset, h5_chunk_check *c,
			     uint64_t start, uint64_t n)
{
	uint64_t row = s->info.row_elems ? s->info.row_elems : 1;
	uint64_t b0 = start / row / c->cdims[0], b1 = (start + n - 1) / row / c->cdims[0];
	uint64_t inner = 1;
	hsize_t coord[DSV_MAX_DIMS];

	for (int k = 1; k < c->ndim; k++) {
		if (c->grid[k] == 0)
			return 0; /* no elements */
		inner *= c->grid[k]; /* c->ok is NULL when this overflows */
	}
	for (uint64_t b = b0; b <= b1 && b < c->grid[0]; b++) {
		uint64_t idx[DSV_MAX_DIMS] = { 0 }, id = b * inner; /* chunk (b, 0, ...) */
		for (;; id++) {
			if (!c->ok || !(c->ok[id / 8] >> (id % 8) & 1)) {
				coord[0] = b * c->cdims[0];
				for (int k = 1; k < c->ndim; k++)
					coord[k] = idx[k] * c->cdims[k];
				int err = check_stored_chunk(s, dset, c, coord);
				if (err)
					return err;
				if (c->ok)
					c->ok[id / 8] |= (uint8_t)(1u << (id % 8));
			}
			/* the band's next chunk, last axis fastest */
			int k = c->ndim - 1;
			while (k >= 1 && ++idx[k] == c->grid[k])
				idx[k--] = 0;
			if (k < 1)
				break;
		}
	}
	return 0;
}

/* nbit and scaleoffset size their output from parameters stored in the file
 * (elements per chunk, element size), and the library then copies a whole
 * chunk out of it: those must describe this dataset's chunk of elems
 * elements. @return 1 if so, or for any other filter. */
static int elem_params_ok(const h5_open *o, uint64_t elems, H5Z_filter_t id, const unsigned *cd,
			  size_t ncd)
{
	if (id != H5Z_FILTER_NBIT && id != H5Z_FILTER_SCALEOFFSET)
		return 1;
	if (id == H5Z_FILTER_NBIT && ncd > 1 && cd[1])
		return 1; /* stored as is */
	return ncd >= 5 && cd[2] == elems && cd[4] == H5Tget_size(o->ftype);
}

/*
 * Chunked layout: fast path when dsview can read the chunks itself, else
 * fallback if the library can, else refusal. Sets *fallback.
 */
static int open_chunked(h5_open *o, int *fallback, hsize_t *band_rows,
			uint64_t *unwritten)
{
	dsv_source *s = o->s;
	hsize_t cdims[DSV_MAX_DIMS];
	H5Z_filter_t ids[32];
	unsigned cds[32][8] = { { 0 } }; /* each filter's first parameters */
	size_t ncds[32];
	int ndim = s->info.ndim, nf, whole_rows = 1, lz4 = 0, fl32 = 0, fast_pipe;
	unsigned opts = 0;
	uint64_t celems = 1; /* elements in a chunk; UINT64_MAX: too many */

	if (H5Pget_chunk(o->dcpl, DSV_MAX_DIMS, cdims) != ndim || cdims[0] == 0)
		return dsv_errf(o->eb, DSV_ERR_FORMAT, "%s:%s: bad chunk dimensions",
				s->path, s->dataset);
	for (int k = 0; k < ndim; k++) {
		if (k > 0 && cdims[k] != o->dims[k])
			whole_rows = 0;
		if (celems != UINT64_MAX && dsv_mul_u64(celems, cdims[k], &celems))
			celems = UINT64_MAX;
	}
	/* A band of cdims[0] rows covers whole chunks on every axis, split
	 * rows or not: fallback reads aligned to bands decode each once. */
	*band_rows = cdims[0];

	nf = H5Pget_nfilters(o->dcpl);
	if (nf < 0 || nf > (int)(sizeof(ids) / sizeof(ids[0])))
		return dsv_errf(o->eb, DSV_ERR_FORMAT, "%s:%s: unreadable filter pipeline",
				s->path, s->dataset);
	for (int i = 0; i < nf; i++) {
		unsigned flags;
		char name[64];
		ncds[i] = 8;
		ids[i] = H5Pget_filter2(o->dcpl, (unsigned)i, &flags, &ncds[i], cds[i], sizeof(name),
					name, NULL);
		if (ids[i] < 0)
			return dsv_errf(o->eb, DSV_ERR_FORMAT, "%s:%s: unreadable filter %d",
					s->path, s->dataset, i);
		if (!elem_params_ok(o, celems, ids[i], cds[i], ncds[i]))
			return dsv_errf(o->eb, DSV_ERR_FORMAT, "%s:%s: filter %s parameters do not "
					"match the chunk (damaged file?)", s->path, s->dataset,
					filter_name(ids[i]));
	}
	fast_pipe = nf == 0 ||
		    (nf == 1 && (ids[0] == DSV_H5Z_FILTER_LZ4 || ids[0] == H5_FILTER_FLETCHER32_ID)) ||
		    (nf == 2 && ids[0] == DSV_H5Z_FILTER_LZ4 && ids[1] == H5_FILTER_FLETCHER32_ID);
	/* With this option HDF5 stores partial edge chunks unfiltered without
	 * saying so in the filter mask: only the library knows. */
	if (nf > 0 && H5Pget_chunk_opts(o->dcpl, &opts) >= 0 &&
	    (opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) && s->info.nrows % cdims[0])
		fast_pipe = 0;

	if (fast_pipe && whole_rows && !o->conv) {
		for (int i = 0; i < nf; i++) {
			if (ids[i] == DSV_H5Z_FILTER_LZ4) {
				lz4 = 1;
				s->lz4_filter_bit = (unsigned)i;
			} else {
				fl32 = 1;
				s->fl32_filter_bit = (unsigned)i;
			}
		}
		s->codec = lz4 ? DSV_CODEC_LZ4 : DSV_CODEC_NONE;
		s->fletcher32 = fl32;
		s->info.kind = DSV_SRC_H5_CHUNKED;
		*fallback = 0;
		return resolve_chunks(o, cdims[0], lz4, fl32, unwritten);
	}

	/* The library must decode it: every filter has to be one it has
	 * built in, since plugins are never loaded. */
	for (int i = 0; i < nf; i++) {
		unsigned cfg = 0;
		if (H5Zfilter_avail(ids[i]) <= 0 || H5Zget_filter_info(ids[i], &cfg) < 0 ||
		    !(cfg & H5Z_FILTER_CONFIG_DECODE_ENABLED))
			return dsv_errf(o->eb, DSV_ERR_UNSUPPORTED,
					"%s:%s: filter %d (%s) is not available (dsview never "
					"loads filter plugins)", s->path, s->dataset,
					(int)ids[i], filter_name(ids[i]));
	}
	if (o->conv)
		snprintf(s->h5_why, sizeof(s->h5_why), "%s", o->conv_why);
	else if (!whole_rows)
		snprintf(s->h5_why, sizeof(s->h5_why), "chunks split rows");
	else if (fast_pipe)
		snprintf(s->h5_why, sizeof(s->h5_why), "unfiltered partial edge chunks");
	else
		why_filters(o, ids, nf);
	if (!(o->cc = chunk_check_new(o, cdims, celems, nf, ids, cds, ncds, opts)))
		return dsv_errf(o->eb, DSV_ERR_NOMEM, "%s: out of memory", s->path);
	*fallback = 1;
	return 0;
}

/* Files probed in this process (a small ring: a manifest names few files). */
#define H5_PROBED_MAX 64
typedef struct h5_probed {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int sig; /* the signal that killed the child, or 0 */
} h5_probed;
static h5_probed probed[H5_PROBED_MAX];
static unsigned nprobed;
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static int in_probe; /* set in the child: no nested probes */

static void probe_child(const char *path)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	struct rlimit no_core = { 0, 0 };
	char **names = NULL;
	size_t n = 0;
	dsv_errbuf eb;

	/* Die of the signal itself, quietly: no core file, and no
	 * sanitizer's handler turning the death into an exit status. */
	setrlimit(RLIMIT_CORE, &no_core);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	in_probe = 1;
	if (dsv_h5_list_datasets(path, &names, &n, NULL, &eb) == 0) {
		for (size_t i = 0; i < n; i++) {
			dsv_source *s;
			dsv_h5_desc d;
			if (dsv_source_open_h5(path, names[i], &s, &eb) == 0)
				dsv_source_close(s);
			(void)dsv_h5_describe(path, names[i], &d, &eb);
		}
	}
	_exit(0); /* no atexit handlers, no stdio buffers flushed twice */
}

/* dsv_h5_probe of path, whose stat is st. */
static int probe_stat(const char *path, const struct stat *st, dsv_errbuf *eb)
{
	int status, sig = 0;
	pid_t pid;

	if (in_probe)
		return 0;
	pthread_mutex_lock(&probe_lock);
	for (unsigned i = 0; i < nprobed && i < H5_PROBED_MAX; i++) {
		h5_probed *p = &probed[i];
		if (p->dev == st->st_dev && p->ino == st->st_ino && p->size == st->st_size &&
		    p->mtime.tv_sec == st->st_mtim.tv_sec && p->mtime.tv_nsec == st->st_mtim.tv_nsec) {
			sig = p->sig;
			goto done;
		}
	}
	/* Fork with the HDF5 lock held, so no other thread is inside the
	 * library; the child's only thread takes the lock over. */
	h5_enter();
	pid = fork();
	if (pid == 0) {
		h5_leave();
		probe_child(path);
	}
	h5_leave();
	if (pid < 0) {
		pthread_mutex_unlock(&probe_lock);
		return 0; /* cannot probe: go on unprotected, as before */
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		sig = WTERMSIG(status);
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		sig = SIGABRT; /* a sanitizer's report exits instead */
	probed[nprobed++ % H5_PROBED_MAX] = (h5_probed){ st->st_dev, st->st_ino, st->st_size,
							 st->st_mtim, sig };
done:
	pthread_mutex_unlock(&probe_lock);
	if (sig)
		return dsv_errf(eb, DSV_ERR_FORMAT, "%s: damaged HDF5 file: the HDF5 library "
				"crashed reading it (%s)", path, strsignal(sig));
	return 0;
}

int dsv_h5_probe(const char *path, dsv_errbuf *eb)
{
	struct stat st;
	/* a missing file: the caller reports it itself */
	return stat(path, &st) < 0 ? 0 : probe_stat(path, &st, eb);
}

int dsv_source_open_h5(const char *path, const char *dataset, dsv_source **out,
		       dsv_errbuf *eb)
{
	char dname[H5_MAX_PATH];
	h5_open o = { .lapl = -1, .file = -1, .dset = -1, .dcpl = -1, .ftype = -1, .space = -1 };
	h5_state *st = NULL;
	dsv_source *s;
	int err, fallback = 0, ndim;
	hsize_t band_rows = 0;
	uint64_t unwritten = 0, shape[DSV_MAX_DIMS];
	H5D_layout_t layout;

	*out = NULL;
	if (!path || !dataset || !*dataset)
		return dsv_errf(eb, DSV_ERR_INVALID, "%s: no dataset given", path ? path : "");
	if ((size_t)snprintf(dname, sizeof(dname), "%s%s", dataset[0] == '/' ? "" : "/",
			     dataset) >= sizeof(dname))
		return dsv_errf(eb, DSV_ERR_INVALID, "%s: dataset path too long", path);
	s = dsv_source_alloc(path, dname);
	if (!s)
		return dsv_errf(eb, DSV_ERR_NOMEM, "%s: out of memory", path);
	o.s = s;
	o.eb = eb;
	/* Our own descriptor first: it gives the clearest "no such file". */
	err = dsv_source_open_file(s, eb);
	if (!err)
		err = dsv_h5_probe(path, eb);
	if (err)
		goto out_source;

	o.lapl = h5_enter() < 0 ? -1 : dsv_h5_make_lapl(H5P_LINK_ACCESS);
	if (o.lapl < 0) {
		err = dsv_errf(eb, DSV_ERR_INTERNAL, "%s: HDF5 setup failed", path);
		goto out_h5;
	}
	o.file = H5Fopen(path, H5F_ACC_RDONLY, ro_fapl);
	if (o.file < 0) {
		err = dsv_errf(eb, DSV_ERR_FORMAT, "%s: not an HDF5 file, or damaged", path);
		goto out_h5;
	}
	err = dsv_h5_check_links(o.file, o.lapl, s->path, dname, eb);
	if (err)
		goto out_h5;
	o.dset = H5Oopen(o.file, dname, o.lapl);
	if (o.dset < 0) {
		err = dsv_errf(eb, DSV_ERR_NOTFOUND, "%s:%s: cannot open", path, dname);
		goto out_h5;
	}
	if (H5Iget_type(o.dset) != H5I_DATASET) {
		err = dsv_errf(eb, DSV_ERR_INVALID, "%s:%s: not a dataset", path, dname);
		goto out_h5;
	}
	o.dcpl = H5Dget_create_plist(o.dset);
	o.ftype = H5Dget_type(o.dset);
	o.space = H5Dget_space(o.dset);
	if (o.dcpl < 0 || o.ftype < 0 || o.space < 0) {
		err = dsv_errf(eb, DSV_ERR_FORMAT, "%s:%s: unreadable dataset header", path, dname);
		goto out_h5;
	}

	/* Refusals come first: they hold whatever the type or layout. */
	layout = H5Pget_layout(o.dcpl);
	if (layout == H5D_VIRTUAL) {
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s:%s: virtual dataset refused", path, dname);
		goto out_h5;
	}
	if (H5Pget_external_count(o.dcpl) != 0) {
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED,
			       "%s:%s: external storage refused (the data lives in other files)",
			       path, dname);
		goto out_h5;
	}
	err = classify_type(o.ftype, &s->info.dtype, &o.conv, o.conv_why, sizeof(o.conv_why));
	if (err) {
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED,
			       "%s:%s: unsupported element type %s (dsview serves uint8, int8, "
			       "uint16, int16, uint32, int32, float16, float32, float64)",
			       path, dname, o.conv_why);
		goto out_h5;
	}
	switch (H5Sget_simple_extent_type(o.space)) {
	case H5S_SIMPLE:
		break;
	case H5S_SCALAR:
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s:%s: scalar datasets are not supported",
			       path, dname);
		goto out_h5;
	default:
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s:%s: dataset has no dataspace", path, dname);
		goto out_h5;
	}
	ndim = H5Sget_simple_extent_ndims(o.space);
	if (ndim < 1 || ndim > DSV_MAX_DIMS ||
	    H5Sget_simple_extent_dims(o.space, o.dims, NULL) != ndim) {
		err = dsv_errf(eb, DSV_ERR_FORMAT, "%s:%s: bad rank", path, dname);
		goto out_h5;
	}
	for (int k = 0; k < ndim; k++)
		shape[k] = o.dims[k];
	if (dsv_source_set_shape(s, ndim, shape)) {
		err = dsv_errf(eb, DSV_ERR_OVERFLOW, "%s:%s: shape too large (more than 2^63 bytes)",
			       path, dname);
		goto out_h5;
	}

	switch (layout) {
	case H5D_CONTIGUOUS: {
		uint64_t nbytes = s->info.nelems * dsv_dtype_size(s->info.dtype), end;
		haddr_t off = H5Dget_offset(o.dset);
		if (nbytes == 0) {
			s->info.kind = DSV_SRC_H5_CONTIGUOUS; /* nothing to read */
			dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
			break;
		}
		if (o.conv || off == HADDR_UNDEF) {
			/* Never written: the library supplies fill values. */
			fallback = 1;
			snprintf(s->h5_why, sizeof(s->h5_why), "%s",
				 o.conv ? o.conv_why : "never written");
			break;
		}
		if (dsv_add_u64(off, nbytes, &end) || end > s->file_size) {
			err = dsv_errf(eb, DSV_ERR_FORMAT, "%s:%s: data past end of file", path, dname);
			goto out_h5;
		}
		s->data_offset = off;
		s->info.kind = DSV_SRC_H5_CONTIGUOUS;
		s->info.stored_bytes = nbytes;
		dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
		break;
	}
	case H5D_CHUNKED:
		err = open_chunked(&o, &fallback, &band_rows, &unwritten);
		if (err)
			goto out_h5;
		break;
	case H5D_COMPACT:
		fallback = 1;
		snprintf(s->h5_why, sizeof(s->h5_why), "compact layout");
		break;
	default:
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s:%s: unknown layout", path, dname);
		goto out_h5;
	}

	if (fallback) {
		s->fallback = 1;
		s->chunked = 0;
		s->codec = DSV_CODEC_NONE;
		s->info.kind = DSV_SRC_H5_FALLBACK;
		s->info.stored_bytes = H5Dget_storage_size(o.dset);
		fallback_chunks(s, band_rows);
	} else if (unwritten) {
		snprintf(s->h5_why, sizeof(s->h5_why),
			 "%llu of %llu chunks never written (fill values via HDF5)",
			 (unsigned long long)unwritten, (unsigned long long)s->info.nchunks);
	}
	s->info.why = s->h5_why;

	if (fallback || unwritten) {
		/* Keep the handles: the read path will need the library. */
		st = calloc(1, sizeof(*st));
		if (!st) {
			err = dsv_errf(eb, DSV_ERR_NOMEM, "%s: out of memory", path);
			goto out_h5;
		}
		st->file = o.file;
		st->dset = o.dset;
		st->mtype = dsv_h5_type(s->info.dtype);
		st->cc = o.cc;
		o.cc = NULL;
		o.file = o.dset = -1;
		if (st->mtype < 0) {
			h5_state_free_locked(st);
			err = dsv_errf(eb, DSV_ERR_INTERNAL, "%s:%s: no memory type for %s", path,
				       dname, dsv_dtype_name(s->info.dtype));
			goto out_h5;
		}
		s->h5 = st;
		s->h5_close = h5_state_close;
	}
	err = 0;

out_h5:
	chunk_check_free(o.cc);
	if (o.space >= 0)
		H5Sclose(o.space);
	if (o.ftype >= 0)
		H5Tclose(o.ftype);
	if (o.dcpl >= 0)
		H5Pclose(o.dcpl);
	if (o.dset >= 0)
		H5Oclose(o.dset);
	if (o.file >= 0)
		H5Fclose(o.file);
	if (o.lapl >= 0)
		H5Pclose(o.lapl);
	h5_leave();
out_source:
	if (err) {
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}

/*
 * Selects the C-order element range [start, start + n) of a dataspace as a
 * union of at most 2 * ndim - 1 boxes: first partial runs up to the next
 * boundary of each axis, then the largest whole blocks, then the tail.
 * Hyperslab reads walk the selection in C order, so memory gets the range
 * in order. Call with h5_lock held.
 */
static int select_range(hid_t space, int ndim, const uint64_t *shape, uint64_t start,
			uint64_t n)
{
	uint64_t stride[DSV_MAX_DIMS], a = start, end = start + n;
	H5S_seloper_t op = H5S_SELECT_SET;

	stride[ndim - 1] = 1;
	for (int k = ndim - 2; k >= 0; k--)
		stride[k] = stride[k + 1] * shape[k + 1];
	while (a < end) {
		hsize_t off[DSV_MAX_DIMS], cnt[DSV_MAX_DIMS];
		int lvl = 0;
		/* Outermost axis whose blocks a is aligned to and that fits. */
		while (a % stride[lvl] || a + stride[lvl] > end)
			lvl++;
		uint64_t rem = a;
		for (int k = 0; k < ndim; k++) {
			off[k] = rem / stride[k];
			rem %= stride[k];
			cnt[k] = k < lvl ? 1 : shape[k];
		}
		uint64_t c = (end - a) / stride[lvl];
		if (lvl > 0 && c > shape[lvl] - off[lvl])
			c = shape[lvl] - off[lvl];
		cnt[lvl] = c;
		if (H5Sselect_hyperslab(space, op, off, NULL, cnt, NULL) < 0)
			return -1;
		op = H5S_SELECT_OR;
		a += c * stride[lvl];
	}
	return 0;
}

int dsv_h5_read_fallback(const dsv_source *s, const dsv_chunk_ref *ref, void *dst,
			 size_t dst_cap)
{
	const h5_state *h = s->h5;
	uint64_t esize = dsv_dtype_size(s->info.dtype);
	hsize_t n = ref->nelems;
	hid_t fspace, mspace;
	int err = DSV_ERR_IO;

	if (!h)
		return DSV_ERR_INTERNAL;
	if (ref->elem_start > s->info.nelems || ref->nelems > s->info.nelems - ref->elem_start ||
	    (uint64_t)dst_cap / esize < ref->nelems)
		return DSV_ERR_INVALID;
	if (n == 0)
		return 0;

	(void)h5_enter(); /* the file is open: set-up was done */
	fspace = H5Dget_space(h->dset);
	if (fspace < 0)
		goto out;
	mspace = H5Screate_simple(1, &n, NULL);
	if (mspace < 0)
		goto out_fspace;
	if (select_range(fspace, s->info.ndim, s->info.shape, ref->elem_start, ref->nelems) < 0)
		goto out_mspace;
	if (h->cc) {
		if ((err = check_read_chunks(s, h->dset, h->cc, ref->elem_start, ref->nelems)))
			goto out_mspace;
		expect_deflate = h->cc->expect_deflate;
		expect_lz4 = h->cc->expect_lz4;
		expect_szip = h->cc->expect_szip;
	}
	err = DSV_ERR_IO;
	if (H5Dread(h->dset, h->mtype, mspace, fspace, H5P_DEFAULT, dst) >= 0)
		err = 0;
	expect_deflate = expect_lz4 = expect_szip = 0;
out_mspace:
	H5Sclose(mspace);
out_fspace:
	H5Sclose(fspace);
out:
	h5_leave();
	return err;
}

typedef struct h5_list {
	char **names;
	size_t n, cap;
	size_t skipped[2]; /* soft; external and user-defined */
	int err;
} h5_list;

static herr_t list_cb(hid_t group, const char *name, const H5L_info_t *li, void *op)
{
	h5_list *l = op;
	hid_t obj;
	int is_dset;

	/* Hard links only: soft ones name objects we list anyway, and
	 * external ones lead out of the file. */
	if (li->type != H5L_TYPE_HARD) {
		l->skipped[li->type != H5L_TYPE_SOFT]++;
		return 0;
	}
	obj = H5Oopen(group, name, H5P_DEFAULT);
	if (obj < 0)
		return 0;
	is_dset = H5Iget_type(obj) == H5I_DATASET;
	H5Oclose(obj);
	if (!is_dset)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **p;
		if (cap > H5_MAX_DATASETS) {
			l->err = DSV_ERR_OVERFLOW;
			return -1;
		}
		p = realloc(l->names, cap * sizeof(*p));
		if (!p) {
			l->err = DSV_ERR_NOMEM;
			return -1;
		}
		l->names = p;
		l->cap = cap;
	}
	size_t len = strlen(name);
	char *full = malloc(len + 2);
	if (!full) {
		l->err = DSV_ERR_NOMEM;
		return -1;
	}
	full[0] = '/';
	memcpy(full + 1, name, len + 1);
	l->names[l->n++] = full;
	return 0;
}

int dsv_h5_check_input(const char *path, dsv_errbuf *eb)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		int e = errno;
		return dsv_errf(eb, e == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, "%s: %s", path,
				strerror(e));
	}
	if (!S_ISREG(st.st_mode))
		return dsv_errf(eb, DSV_ERR_INVALID, "%s: not a regular file", path);
	return probe_stat(path, &st, eb);
}

int dsv_h5_list_datasets(const char *path, char ***names, size_t *count, size_t skipped[2],
			 dsv_errbuf *eb)
{
	h5_list l = { 0 };
	hid_t file;
	int err = 0;

	*names = NULL;
	*count = 0;
	if ((err = dsv_h5_check_input(path, eb)))
		return err;

	if (h5_enter() < 0) {
		err = dsv_errf(eb, DSV_ERR_INTERNAL, "%s: HDF5 setup failed", path);
		goto out;
	}
	file = H5Fopen(path, H5F_ACC_RDONLY, ro_fapl);
	if (file < 0) {
		err = dsv_errf(eb, DSV_ERR_FORMAT, "%s: not an HDF5 file, or damaged", path);
		goto out;
	}
	if (H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, list_cb, &l) < 0) {
		err = l.err ? l.err : DSV_ERR_FORMAT;
		err = dsv_errf(eb, err, "%s: cannot list datasets%s", path,
			       err == DSV_ERR_OVERFLOW ? " (too many)" : "");
	}
	H5Fclose(file);
out:
	h5_leave();
	if (err) {
		for (size_t i = 0; i < l.n; i++)
			free(l.names[i]);
		free(l.names);
		return err;
	}
	*names = l.names;
	*count = l.n;
	if (skipped) {
		skipped[0] = l.skipped[0];
		skipped[1] = l.skipped[1];
	}
	return 0;
}
