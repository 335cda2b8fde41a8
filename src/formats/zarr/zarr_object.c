/* Chunks of a Zarr array in object storage (zarr.c's DESIGN): a chunk
 * object by one GET of its key, an inner chunk of a shard object by ranged
 * GETs under the index's ETag, a band's back-to-back inner chunks by one. */
#include <string.h>

#include "codec/codec.h"
#include "common/tlsbuf.h"
#include "formats/zarr/zarr_i.h"

/* The ETag the run in a band's io->held was fetched under (this thread's
 * band; io->held_first names its shard, plus one). */
static __thread char held_etag[DSV_NET_ETAG_MAX];

/* The end of the run of shard's inner chunks from inner (at [off, off +
 * len)) that lie back to back in the shard object under the same ETag
 * and in the band being made (chunk-rows before c1), at most max bytes. */
static uint64_t run_end(const zarr_state *z, const char *key, uint64_t shard, uint64_t inner,
			uint64_t c1, uint64_t off, uint64_t len, const char *etag, uint64_t max)
{
	const dsv_zarr_meta *m = &z->m;
	uint64_t per_row = m->shard_chunks / m->per_shard[0], across = 1, end = off + len, o, l;
	char e[DSV_NET_ETAG_MAX];
	dsv_errbuf why;
	for (int k = 1; k < m->ndim; k++)
		across *= m->kgrid[k];
	uint64_t row0 = shard / across * m->per_shard[0]; /* the shard's first chunk-row */
	uint64_t stop = c1 > row0 ? (c1 - row0) * per_row : 0;
	for (uint64_t i = inner + 1; i < m->shard_chunks && i < stop; i++) {
		if (dsv_zarr_index_find_object(z->shards, m, z->net, key, shard, i, &o, &l, e,
					       &why) ||
		    o != end || !l || l > max - (end - off) || strcmp(e, etag))
			break;
		end += l;
	}
	return end;
}

/* An inner chunk of a shard object key: its index (cached) says where;
 * its bytes, *n of them, come from the run io holds, else by one ranged
 * GET into buf (cap bytes; *bytes is where they are). For a band made
 * whole, which reads every chunk of it, that GET fetches the run of the
 * band's chunks that follow it back to back in the shard (run_end), held
 * for the next ones. */
static int object_inner(const zarr_state *z, const dsv_source *s, dsv_grid_io *io, const char *key,
			uint64_t shard, uint64_t inner, unsigned char *buf, size_t cap,
			const unsigned char **bytes, size_t *n, dsv_errbuf *why)
{
	uint64_t off, len, size, end;
	char etag[DSV_NET_ETAG_MAX];
	int err = dsv_zarr_index_find_object(z->shards, &z->m, z->net, key, shard, inner, &off,
					     &len, etag, why);
	if (err)
		return err;
	if (len > cap || !len)
		return DSV_ERR_OVERFLOW;
	*n = (size_t)len;
	if (io->held && io->held_first == shard + 1 && !strcmp(held_etag, etag) &&
	    off >= io->held_off && off - io->held_off <= io->held_len &&
	    len <= io->held_len - (off - io->held_off)) {
		*bytes = io->held + (off - io->held_off);
		return 0;
	}
	/* at most what the band's chunks in this shard may take */
	uint64_t c1 = (io->band + 1) * s->more->g_band;
	uint64_t max = (uint64_t)cap * s->more->g_band * (z->m.shard_chunks / z->m.per_shard[0]);
	end = io->whole ? run_end(z, key, shard, inner, c1, off, len, etag, max) : off + len;
	unsigned char *run = end > off + len ? dsv_tls_buf(DSV_TLS_SHARD_RUN, end - off) : NULL;
	if (!run)
		end = off + len; /* one chunk (or no memory for more) */
	err = dsv_net_dir_range(z->net, key, run ? run : buf, (size_t)(end - off), off, 0, &size,
				etag, why);
	if (err)
		return err == DSV_ERR_NOTFOUND || err == DSV_ERR_TRUNCATED ? DSV_ERR_IO : err;
	if (run) {
		io->held = run;
		io->held_off = off;
		io->held_len = end - off;
		io->held_first = shard + 1;
		memcpy(held_etag, etag, sizeof(held_etag));
		*bytes = run;
	}
	return 0;
}

int dsv_zarr_object_chunk(const zarr_state *z, const dsv_source *s, dsv_grid_io *io,
			  const char *key, const char *path, uint64_t shard, uint64_t inner,
			  void *dst, size_t size)
{
	/* No encoding here makes a chunk much bigger than its raw bytes. */
	uint64_t cap = (uint64_t)size + size / 8 + 4096;
	unsigned char *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)cap);
	const unsigned char *bytes = buf;
	dsv_errbuf why = { 0 };
	size_t n;
	if (!buf)
		return dsv_zarr_note(io, DSV_ERR_NOMEM, path);
	int err = z->m.sharded ? object_inner(z, s, io, key, shard, inner, buf, (size_t)cap, &bytes,
					      &n, &why)
			       : dsv_net_dir_get(z->net, key, buf, (size_t)cap, &n, &why);
	if (err == DSV_ERR_CORRUPT) {
		dsv_grid_fault(io, err, path, NULL, "shard %s: %s", path, why.reason);
		return err;
	}
	if (err == DSV_ERR_NOTFOUND)
		return err;
	if (err == DSV_ERR_IO) {
		dsv_grid_fault(io, err, path, NULL, "chunk object %s: %s", path, why.reason);
		return err;
	}
	if (err)
		return dsv_zarr_note(io, err == DSV_ERR_OVERFLOW ? DSV_ERR_CORRUPT : err, path);
	err = dsv_zarr_decode(&z->m, dst, size, bytes, n);
	return err ? dsv_zarr_note(io, err == DSV_ERR_NOMEM ? err : DSV_ERR_CORRUPT, path) : 0;
}
