/*
 * A Zarr v3 chunk's bytes-to-bytes codecs (dsv_zarr_decode), and sharding:
 * a shard's index (dsv_zarr_shard_index) and the cache of the indexes
 * read (dsv_zarr_index_find).
 *
 * A shard file is its inner chunks, each encoded with the inner codecs,
 * anywhere in the file, and an index at its start or end: one (offset,
 * nbytes) pair of u64 an inner chunk, in C order over the shard's box of
 * inner chunks, both all-ones for one never written, then the index's
 * CRC-32C. A reader of one inner chunk reads the index (one ranged read)
 * and then the chunk's bytes; the index is kept, so the next inner chunk
 * of the same shard costs one read.
 *
 * The index cache is direct-mapped: a shard's slot is its linear index
 * modulo the slot count, chosen at create so that all slots together hold
 * at most INDEX_CACHE_BYTES of index (at least one slot); a new shard
 * evicts the slot's old one. A slot remembers the shard file's size, so a
 * file rewritten to another size is read again. A shard in object storage
 * is read the same way by ranged GETs (its index by one GET of the
 * object's first or last bytes, which says its size and ETag too); its
 * slot keeps the ETag, and the GETs of its inner chunks carry it
 * (If-Match): a shard object replaced since its index was read fails
 * those reads, never mixes an old index with new bytes. One mutex guards the
 * slots; it is held to copy one entry out or to swap a slot, never
 * across a read.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/bytes.h"
#include "dsview/codec.h"
#include "net/net.h"
#include "source/source_i.h"
#include "formats/zarr/zarr.h"

/* The indexes kept, together (an index is 16 bytes an inner chunk). */
#define INDEX_CACHE_BYTES (32u << 20)
/* At most this many shards' indexes kept. */
#define INDEX_CACHE_SLOTS 1024u

int dsv_zarr_shard_index(const dsv_zarr_meta *m, const unsigned char *raw, size_t n,
			 uint64_t file_size, uint64_t *out, dsv_errbuf *eb)
{
	uint64_t count = m->shard_chunks;
	if (n != dsv_zarr_index_bytes(m))
		return dsv_errf(eb, DSV_ERR_CORRUPT, "shard index is %zu bytes, not %llu", n,
				(unsigned long long)dsv_zarr_index_bytes(m));
	if (m->index_crc && dsv_crc32c(raw, n - 4) != dsv_load_le32(raw + n - 4))
		return dsv_errf(eb, DSV_ERR_CORRUPT, "shard index checksum (crc32c) differs");
	for (uint64_t i = 0; i < count; i++) {
		uint64_t off = m->index_big_endian ? dsv_load_be64(raw + 16 * i)
						   : dsv_load_le64(raw + 16 * i);
		uint64_t len = m->index_big_endian ? dsv_load_be64(raw + 16 * i + 8)
						   : dsv_load_le64(raw + 16 * i + 8);
		if (off == UINT64_MAX && len == UINT64_MAX) {
			out[2 * i] = out[2 * i + 1] = UINT64_MAX;
			continue;
		}
		if (off > file_size || len > file_size - off)
			return dsv_errf(eb, DSV_ERR_CORRUPT,
					"shard index entry %llu (offset %llu, %llu bytes) lies "
					"past the end of the shard (%llu bytes)",
					(unsigned long long)i, (unsigned long long)off,
					(unsigned long long)len, (unsigned long long)file_size);
		out[2 * i] = off;
		out[2 * i + 1] = len;
	}
	return 0;
}

/* Bytes a stage of decoding holds: the chunk, and the 4 of each crc32c
 * applied before step i (decoded after it). */
static size_t stage_size(const dsv_zarr_meta *m, int i, size_t size)
{
	for (int k = 0; k < i; k++)
		size += m->step[k] == DSV_ZC_CRC32C ? 4 : 0;
	return size;
}

/* One compressor's decode of src[0, n) into exactly out bytes at dst.
 * @return out, or a negative dsv_err. */
static int64_t decompress(dsv_zarr_codec c, void *dst, size_t out, const void *src, size_t n)
{
	switch (c) {
	case DSV_ZC_BLOSC: return dsv_blosc_decode(dst, out, src, n);
	case DSV_ZC_ZSTD: return dsv_zstd_decode(dst, out, src, n);
	case DSV_ZC_LZ4: return dsv_lz4_sized_decode(dst, out, src, n);
	case DSV_ZC_ZLIB: return dsv_zlib_decode(dst, out, src, n, 0);
	case DSV_ZC_GZIP: return dsv_zlib_decode(dst, out, src, n, 1);
	default: return DSV_ERR_INTERNAL;
	}
}

int dsv_zarr_decode(const dsv_zarr_meta *m, void *dst, size_t size, const unsigned char *src,
		    size_t n)
{
	const unsigned char *cur = src; /* the stage being undone: cur[0, n) */
	unsigned char *tmp = NULL;
	int err = 0;
	for (int i = m->nsteps - 1; i >= 0 && !err; i--) {
		if (m->step[i] == DSV_ZC_CRC32C) {
			if (n < 4 || dsv_crc32c(cur, n - 4) != dsv_load_le32(cur + n - 4))
				err = DSV_ERR_CORRUPT;
			n -= 4;
			continue;
		}
		/* the one compressor: straight into dst unless a crc32c
		 * written before it still trails its output */
		size_t out = stage_size(m, i, size);
		unsigned char *to = dst;
		if (out != size && !(to = tmp = malloc(out)))
			return DSV_ERR_NOMEM;
		int64_t made = decompress(m->step[i], to, out, cur, n);
		if (made != (int64_t)out)
			err = made == DSV_ERR_NOMEM ? DSV_ERR_NOMEM : DSV_ERR_CORRUPT;
		cur = to;
		n = out;
	}
	if (!err && n != size)
		err = DSV_ERR_CORRUPT;
	if (!err && cur != dst)
		memcpy(dst, cur, size);
	free(tmp);
	return err;
}

typedef struct index_slot {
	uint64_t shard; /* its linear index + 1; 0: empty */
	uint64_t file_size;
	uint64_t *entries;           /* 2 * shard_chunks */
	char etag[DSV_NET_ETAG_MAX]; /* an object's, its index read under it */
} index_slot;

struct dsv_zarr_index_cache {
	pthread_mutex_t lock;
	uint64_t nslots;
	index_slot slot[];
};

dsv_zarr_index_cache *dsv_zarr_index_cache_create(const dsv_zarr_meta *m)
{
	uint64_t per = m->shard_chunks * 16, n = per ? INDEX_CACHE_BYTES / per : 1;
	n = n < 1 ? 1 : n > INDEX_CACHE_SLOTS ? INDEX_CACHE_SLOTS : n;
	dsv_zarr_index_cache *c = calloc(1, sizeof(*c) + n * sizeof(index_slot));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->nslots = n;
	return c;
}

void dsv_zarr_index_cache_destroy(dsv_zarr_index_cache *c)
{
	if (!c)
		return;
	for (uint64_t i = 0; i < c->nslots; i++)
		free(c->slot[i].entries);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Copies inner's entry of shard out of the cache. file_size UINT64_MAX:
 * a shard of any size (an object's, not known before its index is read).
 * @return 1 when held. */
static int lookup(dsv_zarr_index_cache *c, uint64_t shard, uint64_t file_size, uint64_t inner,
		  uint64_t *off, uint64_t *len, char *etag)
{
	index_slot *s = &c->slot[shard % c->nslots];
	int hit;
	pthread_mutex_lock(&c->lock);
	hit = s->shard == shard + 1 && (file_size == UINT64_MAX || s->file_size == file_size);
	if (hit) {
		*off = s->entries[2 * inner];
		*len = s->entries[2 * inner + 1];
		memcpy(etag, s->etag, DSV_NET_ETAG_MAX);
	}
	pthread_mutex_unlock(&c->lock);
	return hit;
}

/* Where a shard's index is read from: a file (fd, file_size) or, with
 * net, the object key under it (its size learned from the GET). */
typedef struct shard_src {
	int fd;
	uint64_t file_size;
	const dsv_net_dir *net;
	const char *key;
} shard_src;

/* The stored index (n bytes) into raw, *file_size the shard's size. */
static int read_index(const dsv_zarr_meta *m, const shard_src *src, unsigned char *raw, size_t n,
		      uint64_t *file_size, char *etag, dsv_errbuf *eb)
{
	dsv_errbuf why;
	int err;
	if (src->net) { /* one ranged GET: the first or the last n bytes */
		err = dsv_net_dir_range(src->net, src->key, raw, n, 0, !m->index_at_start,
					file_size, etag, &why);
		if (err == DSV_ERR_TRUNCATED)
			return dsv_errf(eb, DSV_ERR_CORRUPT,
					"shard is shorter than its index (%zu)", n);
		if (err == DSV_ERR_IO)
			return dsv_errf(eb, err, "%s", why.reason);
		return err; /* 0, or DSV_ERR_NOTFOUND: no such shard */
	}
	*file_size = src->file_size;
	if (src->file_size < n)
		return dsv_errf(eb, DSV_ERR_CORRUPT,
				"shard is %llu bytes, shorter than its index (%zu)",
				(unsigned long long)src->file_size, n);
	err = dsv_pread_fd(src->fd, raw, n, m->index_at_start ? 0 : src->file_size - n);
	return err ? dsv_errf(eb, err, "cannot read the shard index") : 0;
}

/* Reads, checks and keeps shard's index from src. */
static int load(dsv_zarr_index_cache *c, const dsv_zarr_meta *m, const shard_src *src,
		uint64_t shard, dsv_errbuf *eb)
{
	size_t n = (size_t)dsv_zarr_index_bytes(m);
	unsigned char *raw;
	uint64_t *entries, file_size = 0;
	char etag[DSV_NET_ETAG_MAX] = "";
	int err;
	if (!(raw = malloc(n)) || !(entries = malloc(m->shard_chunks * 16))) {
		free(raw);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	err = read_index(m, src, raw, n, &file_size, etag, eb);
	if (!err)
		err = dsv_zarr_shard_index(m, raw, n, file_size, entries, eb);
	free(raw);
	if (err) {
		free(entries);
		return err;
	}
	index_slot *s = &c->slot[shard % c->nslots];
	pthread_mutex_lock(&c->lock);
	free(s->entries);
	s->entries = entries;
	s->shard = shard + 1;
	s->file_size = file_size;
	memcpy(s->etag, etag, sizeof(s->etag));
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* dsv_zarr_index_find and dsv_zarr_index_find_object: the shard's index
 * from src, looked up (UINT64_MAX: of any size) or loaded. */
static int find(dsv_zarr_index_cache *c, const dsv_zarr_meta *m, const shard_src *src,
		uint64_t size, uint64_t shard, uint64_t inner, uint64_t *off, uint64_t *len,
		char *etag, dsv_errbuf *eb)
{
	int err;
	if (inner >= m->shard_chunks)
		return dsv_errf(eb, DSV_ERR_INTERNAL, "inner chunk outside its shard");
	while (!lookup(c, shard, size, inner, off, len, etag))
		if ((err = load(c, m, src, shard, eb)))
			return err;
	return *off == UINT64_MAX && *len == UINT64_MAX ? DSV_ERR_NOTFOUND : 0;
}

int dsv_zarr_index_find(dsv_zarr_index_cache *c, const dsv_zarr_meta *m, int fd, uint64_t file_size,
			uint64_t shard, uint64_t inner, uint64_t *off, uint64_t *len,
			dsv_errbuf *eb)
{
	shard_src src = { .fd = fd, .file_size = file_size };
	char etag[DSV_NET_ETAG_MAX];
	return find(c, m, &src, file_size, shard, inner, off, len, etag, eb);
}

int dsv_zarr_index_find_object(dsv_zarr_index_cache *c, const dsv_zarr_meta *m,
			       const dsv_net_dir *net, const char *key, uint64_t shard,
			       uint64_t inner, uint64_t *off, uint64_t *len, char *etag,
			       dsv_errbuf *eb)
{
	shard_src src = { .fd = -1, .net = net, .key = key };
	return find(c, m, &src, UINT64_MAX, shard, inner, off, len, etag, eb);
}
