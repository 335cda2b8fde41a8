/*
 * The disk cache of objects' stored bytes (disk_cache.h, docs/s3.md).
 *
 * DESIGN. The directory is the cache's only state that counts: several
 * mounts (processes) of one node may share it, each knowing only what it
 * scanned and what it wrote since. An entry is written whole under a
 * temporary name ("tmp-...") and renamed, so a reader finds either no
 * entry or a whole one; a reader opens the entry, and what it reads
 * through that descriptor stays whole even when the entry is removed or
 * replaced meanwhile. No lock is held across a GET: two mounts missing the
 * same block both fetch it and both rename, the same bytes.
 *
 * Least recently used goes first: an entry's mtime is its last write or
 * hit (a hit touches it when it is older than a second). Each process
 * counts the bytes it found at its last scan plus those it wrote since;
 * past the size it scans the directory under an flock of DIR/.lock
 * (another process evicting meanwhile: it leaves that to it), and removes
 * the oldest entries until 90% of the size is left, and temporary files
 * older than an hour (a writer that died). The directory may so pass its
 * size by what other mounts wrote since the last scan.
 *
 * Every entry is checked when read: the header's own CRC, the identity
 * it names (URL hash, ETag, the object's size, the block's offset and
 * length) against what the read wants, the file's length, and the CRC of
 * each page read. An entry that fails is removed, counted, logged (once a
 * minute) and its block fetched again: never served.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/log.h"
#include "common/tlsbuf.h"
#include "net/disk_cache.h"
#include "net/net.h"

/* The header's layout (big-endian numbers). */
enum {
	H_MAGIC = 0,  /* "dsvdc\0\0\1": the format's version in the last byte */
	H_URL = 8,    /* SHA-256 of the URL */
	H_ETAG = 40,  /* DSV_DCACHE_ETAG bytes, NUL-padded */
	H_SIZE = 200, /* the object's size */
	H_OFF = 208,  /* the block's offset in the object */
	H_LEN = 216,  /* the block's length */
	H_CRCS = 220, /* CRC-32 of each page */
	H_HCRC = H_CRCS + 4 * DSV_DCACHE_PAGES, /* CRC-32 of the bytes before it */
	H_END = H_HCRC + 4,
};
_Static_assert(H_END <= DSV_DCACHE_HEADER, "the header's fields fit in it");
static const char magic[8] = { 'd', 's', 'v', 'd', 'c', 0, 0, 1 };

/* The run of missing blocks one GET fetches at most. */
#define RUN_BLOCKS 16u
/* Below the size, what an eviction leaves: size - size / LOW_DIV. */
#define LOW_DIV 10
#define TMP_AGE_S 3600

static struct {
	int on;
	int dirfd, lockfd;
	uint64_t size, low;
	uint64_t used; /* the last scan's bytes, plus this process's writes since */
	int evicting;  /* a thread of this process scans */
	unsigned long long log_key;
} dc = { .dirfd = -1, .lockfd = -1 };

static struct {
	uint64_t hits, misses, bytes, evictions, corrupt;
} counts;

int dsv_dcache_on(void)
{
	return __atomic_load_n(&dc.on, __ATOMIC_ACQUIRE);
}

/* zlib's CRC-32 (what Python's zlib.crc32 computes), by libdeflate: with
 * the processor's carry-less multiply, about 3x zlib's own here */
static uint32_t crc(const void *p, size_t n)
{
	return libdeflate_crc32(0, p, n);
}

static int sha256(const void *a, size_t na, const void *b, size_t nb, uint8_t out[32])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) && EVP_DigestUpdate(c, a, na) &&
		 EVP_DigestUpdate(c, b, nb) && EVP_DigestFinal_ex(c, out, NULL);
	EVP_MD_CTX_free(c);
	return ok ? 0 : DSV_ERR_INTERNAL;
}

int dsv_dcache_id_make(dsv_dcache_id *id, const char *url, const char *etag, uint64_t size)
{
	uint8_t h[32];
	memset(id, 0, sizeof(*id));
	snprintf(id->etag, sizeof(id->etag), "%s", etag);
	id->size = size;
	if (sha256(url, strcspn(url, "?#"), "", 0, id->url_hash) ||
	    sha256(id->url_hash, sizeof(id->url_hash), id->etag, sizeof(id->etag), h))
		return DSV_ERR_INTERNAL;
	for (int i = 0; i < 16; i++)
		snprintf(id->stem + 2 * i, 3, "%02x", h[i]);
	return 0;
}

void dsv_dcache_entry_name(char *name, const dsv_dcache_id *id, uint64_t b)
{
	snprintf(name, DSV_DCACHE_NAME, "%s-%08llx", id->stem, (unsigned long long)b);
}

/* Whether name is an entry's (what eviction may remove and counts). */
static int is_entry(const char *name)
{
	size_t n = strlen(name);
	return n >= 33 + 8 && n < DSV_DCACHE_NAME && name[32] == '-' &&
	       strspn(name, "0123456789abcdef") == 32 &&
	       strspn(name + 33, "0123456789abcdef") == n - 33;
}

static unsigned page_len(uint32_t len, unsigned p)
{
	uint32_t start = p * DSV_DCACHE_PAGE;
	return len - start < DSV_DCACHE_PAGE ? len - start : DSV_DCACHE_PAGE;
}

static unsigned npages(uint32_t len)
{
	return (len + DSV_DCACHE_PAGE - 1) / DSV_DCACHE_PAGE;
}

void dsv_dcache_entry_header(uint8_t hdr[DSV_DCACHE_HEADER], const dsv_dcache_id *id, uint64_t off,
			     uint32_t len, const void *data)
{
	memset(hdr, 0, DSV_DCACHE_HEADER);
	memcpy(hdr + H_MAGIC, magic, sizeof(magic));
	memcpy(hdr + H_URL, id->url_hash, sizeof(id->url_hash));
	memcpy(hdr + H_ETAG, id->etag, strnlen(id->etag, DSV_DCACHE_ETAG - 1));
	dsv_store_be64(hdr + H_SIZE, id->size);
	dsv_store_be64(hdr + H_OFF, off);
	dsv_store_be32(hdr + H_LEN, len);
	for (unsigned p = 0; p < npages(len); p++)
		dsv_store_be32(
			hdr + H_CRCS + 4 * p,
			crc((const uint8_t *)data + (size_t)p * DSV_DCACHE_PAGE, page_len(len, p)));
	dsv_store_be32(hdr + H_HCRC, crc(hdr, H_HCRC));
}

int dsv_dcache_entry_check(const uint8_t hdr[DSV_DCACHE_HEADER], const dsv_dcache_id *id,
			   uint64_t off, uint32_t len, const char **why)
{
	if (memcmp(hdr + H_MAGIC, magic, sizeof(magic)))
		*why = "not an entry of this version";
	else if (dsv_load_be32(hdr + H_HCRC) != crc(hdr, H_HCRC))
		*why = "its header's checksum is wrong";
	else if (memcmp(hdr + H_URL, id->url_hash, sizeof(id->url_hash)) ||
		 memcmp(hdr + H_ETAG, id->etag, DSV_DCACHE_ETAG) ||
		 dsv_load_be64(hdr + H_SIZE) != id->size)
		*why = "it is of another object or version";
	else if (dsv_load_be64(hdr + H_OFF) != off || dsv_load_be32(hdr + H_LEN) != len)
		*why = "it holds another block";
	else
		return 0;
	return DSV_ERR_CORRUPT;
}

int dsv_dcache_pages_check(const uint8_t hdr[DSV_DCACHE_HEADER], uint32_t len, unsigned p0,
			   unsigned np, const void *pages)
{
	const uint8_t *d = pages;
	for (unsigned p = p0; p < p0 + np; p++, d += DSV_DCACHE_PAGE)
		if (dsv_load_be32(hdr + H_CRCS + 4 * p) != crc(d, page_len(len, p)))
			return DSV_ERR_CHECKSUM;
	return 0;
}

static int by_mtime(const void *a, const void *b)
{
	const struct timespec *x = &((const dsv_dcache_ent *)a)->mtime;
	const struct timespec *y = &((const dsv_dcache_ent *)b)->mtime;
	if (x->tv_sec != y->tv_sec)
		return x->tv_sec < y->tv_sec ? -1 : 1;
	return (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

size_t dsv_dcache_victims(dsv_dcache_ent *e, size_t n, uint64_t used, uint64_t low)
{
	size_t k = 0;
	qsort(e, n, sizeof(*e), by_mtime);
	for (; k < n && used > low; k++)
		used -= e[k].bytes < used ? e[k].bytes : used;
	return k;
}

/* The directory's entries into *out (*n of them, *bytes in all); stale
 * temporary files removed. @return 0 or -1 (errno). */
static int scan(dsv_dcache_ent **out, size_t *n, uint64_t *bytes)
{
	int fd = dup(dc.dirfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	size_t cap = 0;
	time_t now = time(NULL);

	*out = NULL;
	*n = 0;
	*bytes = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st;
		int tmp = !strncmp(de->d_name, "tmp-", 4);
		if ((!tmp && !is_entry(de->d_name)) ||
		    fstatat(dc.dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			if (now - st.st_mtime > TMP_AGE_S)
				unlinkat(dc.dirfd, de->d_name, 0);
			continue;
		}
		if (*n == cap) {
			dsv_dcache_ent *g = realloc(*out,
						    (cap = cap ? 2 * cap : 256) * sizeof(**out));
			if (!g)
				break;
			*out = g;
		}
		dsv_dcache_ent *e = &(*out)[(*n)++];
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->bytes = (uint64_t)st.st_size;
		e->mtime = st.st_mtim;
		*bytes += e->bytes;
	}
	closedir(d);
	return 0;
}

/* Scans the directory and, past the size, removes the least recently used
 * entries down to the low mark; this process's count made the scan's. */
static void evict(void)
{
	dsv_dcache_ent *e;
	size_t n, k;
	uint64_t bytes;

	if (__atomic_exchange_n(&dc.evicting, 1, __ATOMIC_ACQ_REL))
		return;
	if (flock(dc.lockfd, LOCK_EX | LOCK_NB) == 0) {
		if (!scan(&e, &n, &bytes)) {
			k = bytes > dc.size ? dsv_dcache_victims(e, n, bytes, dc.low) : 0;
			for (size_t i = 0; i < k; i++)
				if (!unlinkat(dc.dirfd, e[i].name, 0)) {
					bytes -= e[i].bytes;
					__atomic_fetch_add(&counts.evictions, 1, __ATOMIC_RELAXED);
				}
			__atomic_store_n(&dc.used, bytes, __ATOMIC_RELAXED);
			free(e);
		}
		flock(dc.lockfd, LOCK_UN);
	}
	__atomic_store_n(&dc.evicting, 0, __ATOMIC_RELEASE);
}

int dsv_net_disk_cache(const char *dir, uint64_t size, dsv_errbuf *eb)
{
	if (dc.on) {
		__atomic_store_n(&dc.on, 0, __ATOMIC_RELEASE);
		close(dc.dirfd);
		close(dc.lockfd);
		dc.dirfd = dc.lockfd = -1;
	}
	if (!dir)
		return 0;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return dsv_errf_at(eb, DSV_ERR_IO, dir, NULL, "cannot make the disk cache: %s",
				   strerror(errno));
	dc.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dc.lockfd = dc.dirfd < 0 ? -1
				 : openat(dc.dirfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (dc.lockfd < 0 || faccessat(dc.dirfd, ".", W_OK, AT_EACCESS)) {
		int e = errno;
		if (dc.dirfd >= 0)
			close(dc.dirfd);
		if (dc.lockfd >= 0)
			close(dc.lockfd);
		dc.dirfd = dc.lockfd = -1;
		return dsv_errf_at(eb, DSV_ERR_IO, dir, NULL, "cannot use it as the disk cache: %s",
				   strerror(e));
	}
	dc.size = size;
	dc.low = size - size / LOW_DIV;
	dc.used = 0;
	dc.log_key = (unsigned long long)(uintptr_t)&dc;
	evict(); /* counts what a mount before left, and fits it to this size */
	__atomic_store_n(&dc.on, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Drops the entry open on fd (named name) as damaged, unless another
 * writer has replaced it meanwhile. */
static void drop(int fd, const char *name, const char *obj, const char *why)
{
	struct stat a, b;
	if (!fstat(fd, &a) && !fstatat(dc.dirfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
	    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		unlinkat(dc.dirfd, name, 0);
	__atomic_fetch_add(&counts.corrupt, 1, __ATOMIC_RELAXED);
	dsv_log_limited(dc.log_key, DSV_LOG_WARN,
			"%s: disk cache entry %s dropped (%s); its bytes are fetched again", obj,
			name, why);
}

/* Reads the header and data bytes [from, to) of the entry open on fd into
 * hdr and dst: one preadv when from is 0 (the header and the block's
 * first page follow one another). */
static int entry_pread(int fd, uint8_t hdr[DSV_DCACHE_HEADER], uint8_t *dst, uint32_t from,
		       uint32_t to)
{
	struct iovec iov[2] = { { hdr, DSV_DCACHE_HEADER }, { dst, to - from } };
	if (!from)
		return preadv(fd, iov, 2, 0) == (ssize_t)(DSV_DCACHE_HEADER + to) ? 0 : -1;
	return pread(fd, hdr, DSV_DCACHE_HEADER, 0) == (ssize_t)DSV_DCACHE_HEADER &&
			       pread(fd, dst, to - from, DSV_DCACHE_HEADER + from) ==
				       (ssize_t)(to - from)
		       ? 0
		       : -1;
}

/* Bytes [lo, hi) of block b (off, len) into out from its entry, straight
 * into out when they are whole pages (a damaged entry's bytes there are
 * overwritten by the fetch that follows), else through a page buffer.
 * @return 1 served, 0 no entry (or a damaged one, dropped). */
static int entry_read(const dsv_dcache_id *id, const char *obj, uint64_t b, uint64_t off,
		      uint32_t len, uint32_t lo, uint32_t hi, uint8_t *out)
{
	char name[DSV_DCACHE_NAME];
	uint8_t hdr[DSV_DCACHE_HEADER];
	struct stat st;
	const char *why = "it is shorter than its header says";
	unsigned p0 = lo / DSV_DCACHE_PAGE, p1 = (hi - 1) / DSV_DCACHE_PAGE + 1;
	uint32_t from = p0 * DSV_DCACHE_PAGE,
		 to = p1 * DSV_DCACHE_PAGE < len ? p1 * DSV_DCACHE_PAGE : len;
	uint8_t *pages = out;

	dsv_dcache_entry_name(name, id, b);
	int fd = openat(dc.dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) ||
	    ((from != lo || to != hi) && !(pages = dsv_tls_buf(DSV_TLS_DISK, DSV_DCACHE_BLOCK)))) {
		close(fd);
		return 0;
	}
	if (st.st_size != (off_t)(DSV_DCACHE_HEADER + len) ||
	    entry_pread(fd, hdr, pages, from, to) ||
	    dsv_dcache_entry_check(hdr, id, off, len, &why) ||
	    (dsv_dcache_pages_check(hdr, len, p0, p1 - p0, pages) &&
	     (why = "a page's checksum is wrong"))) {
		drop(fd, name, obj, why);
		close(fd);
		return 0;
	}
	if (pages != out)
		memcpy(out, pages + (lo - from), hi - lo);
	if (time(NULL) > st.st_mtime)
		futimens(fd, NULL); /* used now: the last to be evicted */
	close(fd);
	return 1;
}

/* Writes data (block b: off, len) as an entry. A failure (a full disk)
 * is logged and leaves the block uncached. */
static void entry_write(const dsv_dcache_id *id, const char *obj, uint64_t b, uint64_t off,
			uint32_t len, const void *data)
{
	static unsigned long long seq;
	char name[DSV_DCACHE_NAME], tmp[80];
	uint8_t hdr[DSV_DCACHE_HEADER];

	dsv_dcache_entry_name(name, id, b);
	dsv_dcache_entry_header(hdr, id, off, len, data);
	snprintf(tmp, sizeof(tmp), "tmp-%d-%llu", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	int fd = openat(dc.dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int ok = fd >= 0 && pwrite(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
		 pwrite(fd, data, len, DSV_DCACHE_HEADER) == (ssize_t)len;
	int e = errno;
	if (fd >= 0 && close(fd))
		ok = 0, e = errno;
	if (ok && !renameat(dc.dirfd, tmp, dc.dirfd, name)) {
		uint64_t used = __atomic_add_fetch(&dc.used, DSV_DCACHE_HEADER + len,
						   __ATOMIC_RELAXED);
		if (used > dc.size)
			evict();
		return;
	}
	e = ok ? errno : e;
	if (fd >= 0)
		unlinkat(dc.dirfd, tmp, 0);
	dsv_log_limited(dc.log_key + 1, DSV_LOG_WARN,
			"%s: a disk cache entry could not be written (%s); the block is not cached",
			obj, strerror(e));
}

/* Fetches blocks [b0, b1) of id whole, one GET, writes their entries and
 * copies what [off, off + n) wants of them into buf. */
static int fetch_run(const dsv_dcache_id *id, const char *obj, uint64_t b0, uint64_t b1,
		     uint8_t *buf, size_t n, uint64_t off, dsv_dcache_fetch_fn fetch, const void *o)
{
	uint64_t start = b0 * DSV_DCACHE_BLOCK;
	uint64_t end = b1 * DSV_DCACHE_BLOCK < id->size ? b1 * DSV_DCACHE_BLOCK : id->size;
	uint8_t *run = malloc(end - start);
	if (!run)
		return DSV_ERR_NOMEM;
	int err = fetch(o, run, end - start, start);
	if (!err) {
		for (uint64_t b = b0; b < b1; b++) {
			uint64_t bo = b * DSV_DCACHE_BLOCK;
			uint32_t len = (uint32_t)(end - bo < DSV_DCACHE_BLOCK ? end - bo
									      : DSV_DCACHE_BLOCK);
			entry_write(id, obj, b, bo, len, run + (bo - start));
		}
		uint64_t lo = off > start ? off : start, hi = off + n < end ? off + n : end;
		memcpy(buf + (lo - off), run + (lo - start), hi - lo);
		__atomic_fetch_add(&counts.misses, b1 - b0, __ATOMIC_RELAXED);
	}
	free(run);
	return err;
}

int dsv_dcache_pread(const dsv_dcache_id *id, const char *name, void *buf, size_t n, uint64_t off,
		     dsv_dcache_fetch_fn fetch, const void *obj)
{
	uint8_t *out = buf;
	uint64_t first = off / DSV_DCACHE_BLOCK, last = (off + n - 1) / DSV_DCACHE_BLOCK;
	uint64_t miss = UINT64_MAX; /* the first block of the run of misses so far */

	for (uint64_t b = first; b <= last + 1; b++) {
		int hit = 0;
		if (b <= last) {
			uint64_t bo = b * DSV_DCACHE_BLOCK;
			uint32_t len = (uint32_t)(id->size - bo < DSV_DCACHE_BLOCK
							  ? id->size - bo
							  : DSV_DCACHE_BLOCK);
			uint64_t lo = off > bo ? off - bo : 0;
			uint64_t hi = off + n - bo < len ? off + n - bo : len;
			hit = entry_read(id, name, b, bo, len, (uint32_t)lo, (uint32_t)hi,
					 out + (bo + lo - off));
			if (hit) {
				__atomic_fetch_add(&counts.hits, 1, __ATOMIC_RELAXED);
				__atomic_fetch_add(&counts.bytes, hi - lo, __ATOMIC_RELAXED);
			}
		}
		if (!hit && b <= last && miss == UINT64_MAX)
			miss = b;
		if (miss != UINT64_MAX && (hit || b > last || b - miss == RUN_BLOCKS)) {
			int err = fetch_run(id, name, miss, b, out, n, off, fetch, obj);
			if (err)
				return err;
			miss = !hit && b <= last ? b : UINT64_MAX;
		}
	}
	return 0;
}

void dsv_dcache_get_stats(dsv_net_stats *st)
{
	st->disk_hits = __atomic_load_n(&counts.hits, __ATOMIC_RELAXED);
	st->disk_misses = __atomic_load_n(&counts.misses, __ATOMIC_RELAXED);
	st->disk_bytes = __atomic_load_n(&counts.bytes, __ATOMIC_RELAXED);
	st->disk_evictions = __atomic_load_n(&counts.evictions, __ATOMIC_RELAXED);
	st->disk_corrupt = __atomic_load_n(&counts.corrupt, __ATOMIC_RELAXED);
	st->disk_size = dsv_dcache_on() ? dc.size : 0;
	st->disk_used = __atomic_load_n(&dc.used, __ATOMIC_RELAXED);
}
