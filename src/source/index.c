/*
 * The index cache's file and its entries (index.h): parsed with every
 * length checked against what is left, looked up by a hash of the key,
 * written whole to a temporary file and renamed over the old one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "common/bytes.h"
#include "common/hash.h"
#include "source/index.h"
#include "source/source_i.h"

#define MAGIC "DSVIDX\r\n"
#define HEAD_LEN 24 /* magic, version, 0, entries */
/* the least bytes an entry takes: its lengths and stamp */
#define ENTRY_MIN (4 + 32 + 1 + 4)
/* the largest file loaded */
#define FILE_MAX (4ull << 30)

typedef struct ix_entry {
	const unsigned char *key, *blob;
	uint32_t key_len, blob_len;
	dsv_index_stamp st;
	char fmt[DSV_INDEX_FMT_MAX + 1];
	unsigned char used;  /* found or added since the load */
	unsigned char owned; /* key and blob are one allocation of ours */
} ix_entry;

struct dsv_index {
	char *what;
	unsigned char *file; /* the bytes loaded, which loaded entries point into */
	ix_entry *e;
	size_t n, cap;
	size_t *slots; /* open addressing: entry index + 1, 0 empty */
	size_t nslots;
	size_t loaded, found, added;
	pthread_mutex_t lock;
};

static atomic_uint_fast64_t n_hits, n_stale, n_rejected;

void dsv_index_stamp_of(const struct stat *st, dsv_index_stamp *out)
{
	out->size = (uint64_t)st->st_size;
	out->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
	out->ino = (uint64_t)st->st_ino;
	out->dev = (uint64_t)st->st_dev;
}

void dsv_index_put(dsv_index_buf *b, const void *data, size_t n)
{
	if (b->bad || n == 0) /* an empty blob's data may be NULL */
		return;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len < n)
			cap *= 2;
		unsigned char *p = realloc(b->p, cap);
		if (!p) {
			b->bad = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

void dsv_index_put_u64(dsv_index_buf *b, uint64_t v)
{
	unsigned char le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(v >> (8 * i));
	dsv_index_put(b, le, 8);
}

static void put_u32(dsv_index_buf *b, uint32_t v)
{
	unsigned char le[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
				(unsigned char)(v >> 24) };
	dsv_index_put(b, le, 4);
}

const unsigned char *dsv_index_get(dsv_index_cur *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	const unsigned char *p = c->p;
	c->p += n;
	return p;
}

uint64_t dsv_index_get_u64(dsv_index_cur *c)
{
	const unsigned char *p = dsv_index_get(c, 8);
	return p ? dsv_load_le64(p) : 0;
}

static uint32_t get_u32(dsv_index_cur *c)
{
	const unsigned char *p = dsv_index_get(c, 4);
	return p ? dsv_load_le32(p) : 0;
}

dsv_index *dsv_index_new(const char *what)
{
	dsv_index *ix = calloc(1, sizeof(*ix));
	if (!ix || !(ix->what = strdup(what))) {
		free(ix);
		return NULL;
	}
	pthread_mutex_init(&ix->lock, NULL);
	return ix;
}

/* Forgets every entry (the file's bytes too). */
static void clear(dsv_index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		if (ix->e[i].owned)
			free((void *)ix->e[i].key);
	free(ix->e);
	free(ix->slots);
	free(ix->file);
	ix->e = NULL;
	ix->slots = NULL;
	ix->file = NULL;
	ix->n = ix->cap = ix->nslots = ix->loaded = ix->found = ix->added = 0;
}

void dsv_index_free(dsv_index *ix)
{
	if (!ix)
		return;
	clear(ix);
	pthread_mutex_destroy(&ix->lock);
	free(ix->what);
	free(ix);
}

static uint64_t hash(const void *key, size_t n)
{
	return dsv_hash_bytes(DSV_HASH_SEED, key, n);
}

/* The slot of key: its entry's, or the empty one where it would go. */
static size_t *slot_of(const dsv_index *ix, const void *key, size_t n)
{
	size_t mask = ix->nslots - 1, i = (size_t)hash(key, n) & mask;
	for (;; i = (i + 1) & mask) {
		size_t k = ix->slots[i];
		if (!k || (ix->e[k - 1].key_len == n && !memcmp(ix->e[k - 1].key, key, n)))
			return &ix->slots[i];
	}
}

/* Room for want entries (at least one more), the slot table at most
 * half full. */
static int grow(dsv_index *ix, size_t want)
{
	if (want <= ix->n)
		want = ix->n + 1;
	if (want > ix->cap) {
		size_t cap = ix->cap ? 2 * ix->cap : 64;
		while (cap < want)
			cap *= 2;
		ix_entry *e = realloc(ix->e, cap * sizeof(*e));
		if (!e)
			return DSV_ERR_NOMEM;
		ix->e = e;
		ix->cap = cap;
	}
	if (2 * want > ix->nslots) {
		size_t ns = ix->nslots ? 2 * ix->nslots : 128;
		while (ns < 2 * want)
			ns *= 2;
		size_t *old = ix->slots, on = ix->nslots;
		if (!(ix->slots = calloc(ns, sizeof(*ix->slots)))) {
			ix->slots = old;
			return DSV_ERR_NOMEM;
		}
		ix->nslots = ns;
		for (size_t i = 0; i < on; i++)
			if (old[i])
				*slot_of(ix, ix->e[old[i] - 1].key,
					 ix->e[old[i] - 1].key_len) = old[i];
		free(old);
	}
	return 0;
}

/* One entry at c into e. @return NULL, or which check failed. */
static const char *parse_entry(dsv_index_cur *c, ix_entry *e)
{
	*e = (ix_entry){ 0 };
	e->key_len = get_u32(c);
	if (!c->bad && (!e->key_len || e->key_len > DSV_INDEX_KEY_MAX))
		return "a key's length is out of range";
	e->key = dsv_index_get(c, e->key_len);
	e->st.size = dsv_index_get_u64(c);
	e->st.mtime_ns = dsv_index_get_u64(c);
	e->st.ino = dsv_index_get_u64(c);
	e->st.dev = dsv_index_get_u64(c);
	const unsigned char *fl = dsv_index_get(c, 1);
	size_t flen = fl ? *fl : 0;
	if (flen > DSV_INDEX_FMT_MAX)
		return "a format's name is too long";
	const unsigned char *f = dsv_index_get(c, flen);
	if (f) {
		memcpy(e->fmt, f, flen);
		if (memchr(e->fmt, '\0', flen))
			return "a format's name holds a NUL byte";
	}
	e->blob_len = get_u32(c);
	if (!c->bad && e->blob_len > DSV_INDEX_BLOB_MAX)
		return "a saved state is too long";
	e->blob = dsv_index_get(c, e->blob_len);
	return c->bad ? "an entry runs past the end" : NULL;
}

/* The entries after the header, count of them. */
static int parse_entries(dsv_index *ix, dsv_index_cur *c, uint64_t count, const char **why)
{
	if (count > (uint64_t)(c->end - c->p) / ENTRY_MIN) {
		*why = "the entry count is larger than the file";
		return DSV_ERR_CORRUPT;
	}
	if (grow(ix, (size_t)count)) {
		*why = "out of memory";
		return DSV_ERR_NOMEM;
	}
	for (uint64_t i = 0; i < count; i++) {
		ix_entry e;
		if ((*why = parse_entry(c, &e)))
			return DSV_ERR_CORRUPT;
		size_t *slot = slot_of(ix, e.key, e.key_len);
		if (*slot) {
			*why = "a key is there twice";
			return DSV_ERR_CORRUPT;
		}
		ix->e[ix->n++] = e;
		*slot = ix->n;
	}
	if (c->p != c->end) {
		*why = "bytes are left after the last entry";
		return DSV_ERR_CORRUPT;
	}
	return 0;
}

/* The header of buf, up to its entries: into c, the entry count in *count. */
static int parse_head(const dsv_index *ix, const unsigned char *buf, size_t len, dsv_index_cur *c,
		      uint64_t *count, const char **why)
{
	if (len < HEAD_LEN + 8 || memcmp(buf, MAGIC, 8)) {
		*why = "not an index file (no magic)";
		return DSV_ERR_CORRUPT;
	}
	if (dsv_load_le32(buf + 8) != DSV_INDEX_VERSION) {
		*why = "another version of the index file";
		return DSV_ERR_UNSUPPORTED;
	}
	if (dsv_crc32c(buf, len - 4) != dsv_load_le32(buf + len - 4)) {
		*why = "its checksum does not match (damaged or cut short)";
		return DSV_ERR_CORRUPT;
	}
	*c = (dsv_index_cur){ buf + 16, buf + len - 4, 0 };
	*count = dsv_index_get_u64(c);
	uint32_t wlen = get_u32(c);
	const unsigned char *w = dsv_index_get(c, wlen);
	if (!w || wlen != strlen(ix->what) || memcmp(w, ix->what, wlen)) {
		*why = "it is the index of another source";
		return DSV_ERR_CORRUPT;
	}
	return 0;
}

int dsv_index_parse(dsv_index *ix, unsigned char *buf, size_t len, const char **why)
{
	dsv_index_cur c;
	uint64_t count;
	int err;

	clear(ix);
	ix->file = buf;
	if (!(err = parse_head(ix, buf, len, &c, &count, why)))
		err = parse_entries(ix, &c, count, why);
	if (err)
		clear(ix);
	else
		ix->loaded = ix->n;
	return err;
}

int dsv_index_load(dsv_index *ix, const char *file, const char **why)
{
	struct stat st;
	unsigned char *buf = NULL;
	int fd = open(file, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0) {
		*why = strerror(errno);
		return errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO;
	}
	if (fstat(fd, &st) < 0)
		err = DSV_ERR_IO, *why = strerror(errno);
	else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > FILE_MAX)
		err = DSV_ERR_CORRUPT, *why = "not a regular file of a sensible size";
	else if (!(buf = malloc(st.st_size ? (size_t)st.st_size : 1)))
		err = DSV_ERR_NOMEM, *why = "out of memory";
	else if (st.st_size && dsv_pread_fd(fd, buf, (size_t)st.st_size, 0))
		err = DSV_ERR_IO, *why = "cannot read it";
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	return dsv_index_parse(ix, buf, (size_t)st.st_size, why);
}

static int same_stamp(const dsv_index_stamp *a, const dsv_index_stamp *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns && a->ino == b->ino &&
	       a->dev == b->dev;
}

int dsv_index_find(dsv_index *ix, const void *key, size_t n, const dsv_index_stamp *st,
		   const char *fmt, const void **blob, size_t *len)
{
	int hit = 0;
	pthread_mutex_lock(&ix->lock);
	size_t k = ix->nslots ? *slot_of(ix, key, n) : 0;
	if (k) {
		ix_entry *e = &ix->e[k - 1];
		hit = same_stamp(&e->st, st) && !strcmp(e->fmt, fmt);
		if (hit) {
			*blob = e->blob;
			*len = e->blob_len;
			ix->found += !e->used;
			e->used = 1;
		}
	}
	pthread_mutex_unlock(&ix->lock);
	atomic_fetch_add(&n_stale, k && !hit ? 1 : 0);
	return hit;
}

int dsv_index_has(dsv_index *ix, const void *key, size_t n, const dsv_index_stamp *st,
		  const char *fmt)
{
	pthread_mutex_lock(&ix->lock);
	size_t k = ix->nslots ? *slot_of(ix, key, n) : 0;
	int has = k && same_stamp(&ix->e[k - 1].st, st) && !strcmp(ix->e[k - 1].fmt, fmt);
	pthread_mutex_unlock(&ix->lock);
	return has;
}

int dsv_index_add(dsv_index *ix, const void *key, size_t n, const dsv_index_stamp *st,
		  const char *fmt, const void *blob, size_t len)
{
	size_t flen = strlen(fmt);
	unsigned char *mem;
	int err = 0;

	if (!n || n > DSV_INDEX_KEY_MAX || len > DSV_INDEX_BLOB_MAX || flen > DSV_INDEX_FMT_MAX)
		return DSV_ERR_INVALID;
	if (!(mem = malloc(n + len + 1)))
		return DSV_ERR_NOMEM;
	memcpy(mem, key, n);
	if (len)
		memcpy(mem + n, blob, len);
	ix_entry e = { .key = mem,
		       .blob = mem + n,
		       .key_len = (uint32_t)n,
		       .blob_len = (uint32_t)len,
		       .st = *st,
		       .used = 1,
		       .owned = 1 };
	memcpy(e.fmt, fmt, flen + 1);
	pthread_mutex_lock(&ix->lock);
	size_t *slot = ix->nslots ? slot_of(ix, key, n) : NULL;
	if (slot && *slot) {
		ix_entry *old = &ix->e[*slot - 1];
		if (old->owned)
			free((void *)old->key);
		ix->found -= old->used && *slot <= ix->loaded;
		*old = e;
	} else if (!(err = grow(ix, 0))) {
		ix->e[ix->n++] = e;
		*slot_of(ix, key, n) = ix->n;
	}
	if (!err)
		ix->added++;
	pthread_mutex_unlock(&ix->lock);
	if (err)
		free(mem);
	return err;
}

int dsv_index_changed(const dsv_index *ix)
{
	return ix->added || ix->found != ix->loaded;
}

int dsv_index_serialize(const dsv_index *ix, unsigned char **out, size_t *len)
{
	dsv_index_buf b = { 0 };
	uint64_t count = 0;
	size_t wlen = strlen(ix->what);

	for (size_t i = 0; i < ix->n; i++)
		count += ix->e[i].used;
	dsv_index_put(&b, MAGIC, 8);
	put_u32(&b, DSV_INDEX_VERSION);
	put_u32(&b, 0);
	dsv_index_put_u64(&b, count);
	put_u32(&b, (uint32_t)wlen);
	dsv_index_put(&b, ix->what, wlen);
	for (size_t i = 0; i < ix->n; i++) {
		const ix_entry *e = &ix->e[i];
		unsigned char fl = (unsigned char)strlen(e->fmt);
		if (!e->used)
			continue;
		put_u32(&b, e->key_len);
		dsv_index_put(&b, e->key, e->key_len);
		dsv_index_put_u64(&b, e->st.size);
		dsv_index_put_u64(&b, e->st.mtime_ns);
		dsv_index_put_u64(&b, e->st.ino);
		dsv_index_put_u64(&b, e->st.dev);
		dsv_index_put(&b, &fl, 1);
		dsv_index_put(&b, e->fmt, fl);
		put_u32(&b, e->blob_len);
		dsv_index_put(&b, e->blob, e->blob_len);
	}
	put_u32(&b, b.bad ? 0 : dsv_crc32c(b.p, b.len));
	if (b.bad) {
		free(b.p);
		return DSV_ERR_NOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

/* Writes buf[0 .. len) to fd whole. @return 0, or -1 with errno set. */
static int write_all(int fd, const unsigned char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

int dsv_index_write(const dsv_index *ix, const char *file, const char **why)
{
	unsigned char *buf;
	size_t len;
	char *tmp;
	int fd, bad;

	if (dsv_index_serialize(ix, &buf, &len)) {
		*why = "out of memory";
		return DSV_ERR_NOMEM;
	}
	if (asprintf(&tmp, "%s.tmp.%ld", file, (long)getpid()) < 0) {
		free(buf);
		*why = "out of memory";
		return DSV_ERR_NOMEM;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bad = fd < 0 || write_all(fd, buf, len);
	int e = errno;
	if (fd >= 0 && close(fd) && !bad)
		bad = 1, e = errno;
	if (!bad && rename(tmp, file))
		bad = 1, e = errno;
	if (bad) {
		*why = strerror(e);
		unlink(tmp);
	}
	free(tmp);
	free(buf);
	return bad ? DSV_ERR_IO : 0;
}

void dsv_index_counts(dsv_index_stats *out)
{
	out->hits = atomic_load(&n_hits);
	out->stale = atomic_load(&n_stale);
	out->rejected = atomic_load(&n_rejected);
}

void dsv_index_count_load(int loaded)
{
	atomic_fetch_add(loaded ? &n_hits : &n_stale, 1);
}

void dsv_index_count_rejected(void)
{
	atomic_fetch_add(&n_rejected, 1);
}
