/*
 * The read-only file driver every untrusted HDF5 file is opened through,
 * and the chunk locator built on it.
 *
 * The driver reads with pread and nothing else: no file locking, nothing
 * ever written (write fails, and opens that ask for RDWR, TRUNC or CREAT
 * are refused), and raw data past the end of the file is an error rather
 * than zeros.
 *
 * Chunk locations: HDF5 1.10 has no O(1) public way to learn where a chunk
 * is. H5Dget_chunk_info and H5Dget_chunk_info_by_coord both walk the whole
 * index from its start on every call (16000 chunks: 2 s with a v1 B-tree,
 * 15-30 s with the 1.10 array indexes; 100000 chunks: minutes), and both
 * report addresses relative to the HDF5 base address, which is wrong for
 * pread in a file with a user block. H5Dread_chunk, though, finds a chunk
 * with one index lookup and then reads exactly its stored bytes through the
 * file driver. So while dsv_h5_locate_chunk runs, the driver is armed to
 * record, rather than perform, the one raw-data read H5Dread_chunk makes:
 * that read's absolute offset and size are the chunk's.
 *
 * Objects in object storage (a URL as the file name): the driver reads
 * them by ranged GETs (src/net). The library's metadata reads are many
 * and small (object headers, B-tree nodes, heaps), so they go through a
 * few blocks of RO_BLOCK bytes kept per open file; raw data is fetched as
 * asked, one GET per read. Two opens are one file when their URLs are.
 *
 * Everything here runs inside HDF5 calls made under the global lock
 * (lib.c), so ro_probe and the blocks are safe without locks of their own.
 */
/* HDF5 1.12 renamed some 1.10 structs; ask for the 1.10 names. */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#if H5_VERSION_GE(1, 13, 0)
/* 1.13 added version/value/ctl/vector members to H5FD_class_t; ro_class
 * below needs them filled in (and testing) before it can register there. */
#error "src/formats/h5/driver.c: the read-only file driver is written for HDF5 1.10/1.12"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/str.h"
#include "formats/h5/driver_test.h"
#include "formats/h5/h5.h"
#include "net/net.h"
#include "source/source.h"

/* An object's metadata blocks: RO_BLOCKS of RO_BLOCK bytes, the oldest
 * fetched replaced first. */
#define RO_BLOCK (64u << 10)
#define RO_BLOCKS 8

typedef struct ro_file {
	H5FD_t pub; /* first: HDF5 fills it in and casts back */
	int fd;     /* -1 for an object */
	haddr_t eoa, eof;
	dev_t dev;
	ino_t ino;
	dsv_net_obj *net;
	unsigned char *block[RO_BLOCKS];
	uint64_t block_at[RO_BLOCKS]; /* its first byte's offset, or UINT64_MAX */
	unsigned next_block;          /* the one to replace */
} ro_file;

static struct {
	int armed; /* record raw-data reads instead of doing them */
	int hits;
	haddr_t addr; /* absolute file offset of the last recorded read */
	size_t size;
} ro_probe;

void (*dsv_h5_ro_open_hook)(const char *name);

/* Largest address a 64-bit off_t reaches. */
#define RO_MAXADDR ((haddr_t)INT64_MAX)

/* An object: a HEAD now, GETs as the library reads. Its reason, when it
 * fails, is the source's own open to tell (the same HEAD). */
static H5FD_t *ro_open_object(const char *name)
{
	ro_file *f = calloc(1, sizeof(*f));
	dsv_errbuf eb;

	if (!f || dsv_net_open(name, &f->net, &eb)) {
		free(f);
		return NULL;
	}
	f->fd = -1;
	f->eof = (haddr_t)dsv_net_size(f->net);
	for (int i = 0; i < RO_BLOCKS; i++)
		f->block_at[i] = UINT64_MAX;
	return &f->pub;
}

/* Why this thread's last open of a file failed (0: it did not fail). */
static __thread int ro_errno;

int dsv_h5_ro_open_errno(void)
{
	return ro_errno;
}

static H5FD_t *ro_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
	struct stat st;
	ro_file *f;
	int fd;

	(void)fapl;
	if ((flags & (H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_CREAT)) || maxaddr == 0 ||
	    maxaddr == HADDR_UNDEF || maxaddr > RO_MAXADDR)
		return NULL;
	ro_errno = 0;
	if (dsv_h5_ro_open_hook)
		dsv_h5_ro_open_hook(name);
	if (dsv_url_scheme_len(name))
		return ro_open_object(name);
	fd = dsv_source_open_path(name);
	if (fd < 0) {
		ro_errno = errno;
		return NULL;
	}
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
	int r = f->fd >= 0 ? close(f->fd) : 0;
	dsv_net_close(f->net);
	for (int i = 0; i < RO_BLOCKS; i++)
		free(f->block[i]);
	free(f);
	return r < 0 ? -1 : 0;
}

/* The library opens a file only once when cmp says two opens are the same. */
static int ro_cmp(const H5FD_t *a, const H5FD_t *b)
{
	const ro_file *x = (const ro_file *)a, *y = (const ro_file *)b;
	if (x->net || y->net)
		return !x->net   ? -1
		       : !y->net ? 1
				 : strcmp(dsv_net_name(x->net), dsv_net_name(y->net));
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

/* The block of the object that holds byte at (fetched now if no block
 * holds it); NULL on a failed GET. *len: its bytes (short at the end). */
static const unsigned char *object_block(ro_file *f, uint64_t at, size_t *len)
{
	uint64_t start = at - at % RO_BLOCK;
	*len = (size_t)(f->eof - start < RO_BLOCK ? f->eof - start : RO_BLOCK);
	for (int i = 0; i < RO_BLOCKS; i++)
		if (f->block_at[i] == start)
			return f->block[i];
	unsigned k = f->next_block;
	if (!f->block[k] && !(f->block[k] = malloc(RO_BLOCK)))
		return NULL;
	f->block_at[k] = UINT64_MAX;
	if (dsv_net_pread(f->net, f->block[k], *len, start))
		return NULL;
	f->block_at[k] = start;
	f->next_block = (k + 1) % RO_BLOCKS;
	return f->block[k];
}

/* ro_read of an object: past its end as a file's (zeros for metadata,
 * an error for raw data); raw data by one GET, metadata by blocks. */
static herr_t read_object(ro_file *f, H5FD_mem_t type, haddr_t addr, size_t size, unsigned char *p)
{
	size_t in = addr >= f->eof ? 0 : (size_t)(f->eof - addr < size ? f->eof - addr : size);
	if (in < size) {
		if (type == H5FD_MEM_DRAW)
			return -1;
		memset(p + in, 0, size - in);
	}
	if (type == H5FD_MEM_DRAW)
		return dsv_net_pread(f->net, p, in, addr) ? -1 : 0;
	while (in) {
		size_t len;
		const unsigned char *b = object_block(f, addr, &len);
		if (!b)
			return -1;
		size_t from = (size_t)(addr % RO_BLOCK), n = len - from < in ? len - from : in;
		memcpy(p, b + from, n);
		p += n;
		in -= n;
		addr += n;
	}
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
	if (f->net)
		return read_object(f, type, addr, size, buf);
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
int dsv_h5_same_file(hid_t file, int fd, const dsv_net_obj *net)
{
	struct stat st;
	void *handle = NULL;
	const ro_file *f;

	if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || !handle)
		return DSV_ERR_INTERNAL;
	/* ro_get_handle gives &ro_file.fd */
	f = (const ro_file *)((const char *)handle - offsetof(ro_file, fd));
	if (net || f->net) /* one version of one object: the same ETag */
		return net && f->net && dsv_net_same(net, f->net);
	if (fstat(fd, &st) < 0)
		return DSV_ERR_IO;
	return f->dev == st.st_dev && f->ino == st.st_ino;
}

hid_t dsv_h5_ro_register(void)
{
	hid_t drv = H5FDregister(&ro_class);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (drv < 0 || fapl < 0 || H5Pset_driver(fapl, drv, NULL) < 0) {
		if (fapl >= 0)
			H5Pclose(fapl);
		return -1;
	}
	return fapl;
}

int dsv_h5_locate_chunk(hid_t dset, const hsize_t *coord, hsize_t size, void *buf, haddr_t *addr,
			unsigned *mask)
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
