/*
 * Zarr arrays as sources: a directory holding a v2 `.zarray` (with an
 * optional `.zattrs`) or a v3 `zarr.json`, and one file per chunk, named by
 * the chunk key (zarr_meta.c). Read through the N-d grid (grid.c): the read
 * path's chunks are bands of whole rows, each made from its chunk files.
 * A v3 sharded array's grid is its inner chunks: the key names the shard
 * file holding one, whose index (zarr_shard.c, read once and cached) says
 * which bytes of it to read; a shuffled reader reads only those, with the
 * kernel's readahead off for the file, a sequential one asks for whole
 * shards ahead (zarr_prefetch).
 *
 * Chunk files are opened per read and closed after it, not held open: a
 * band reads each of its files once and the cache keeps the band, so an
 * open costs little against the read and decode; and an array of 100,000
 * chunk files must not hold 100,000 descriptors. A missing chunk file is
 * the fill value, as Zarr defines it (fill_value null: zeros). A chunk file
 * that is larger than any encoding of one chunk, fails to decode or
 * decodes to another size is corrupt: EIO for the rows that need it.
 *
 * An array in object storage (its URL, s3://bucket/x.zarr) is the same
 * with objects for files: each chunk is one GET of its computed key, and
 * a 404 is the fill value. A sharded one reads an inner chunk by ranged
 * GETs: its shard's index once (cached as a file's), then the chunk's
 * bytes, or for a band made whole the run of its chunks that lie back to
 * back in the shard by one GET (zarr_object.c). Its chunk objects are not
 * listed, so their stored bytes are not counted (0).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/codec.h"
#include "common/str.h"
#include "common/tlsbuf.h"
#include "dsview/codec.h"
#include "net/net.h"
#include "source/source_i.h"
#include "dsview/source.h"
#include "formats/zarr/zarr.h"
#include "formats/zarr/zarr_i.h"

/* Metadata files larger than this are refused (a .zarray is ~400 bytes). */
#define META_MAX (1u << 20)

static void zarr_close(void *p)
{
	zarr_state *z = p;
	if (z) {
		free(z->dir);
		dsv_zarr_index_cache_destroy(z->shards);
		dsv_net_dir_close(z->net);
		pthread_mutex_destroy(&z->lock);
	}
	free(z);
}

/* slurp of an object: url/name by one GET; eb (may be NULL) says why
 * one failed. */
static int slurp_object(const char *url, const char *name, char **text, size_t *len, dsv_errbuf *eb)
{
	dsv_net_dir *d;
	int err = dsv_net_dir_open(url, &d, eb);
	if (!err && !(*text = malloc(META_MAX + 1)))
		err = DSV_ERR_NOMEM;
	if (!err)
		err = dsv_net_dir_get(d, name, *text, META_MAX, len, eb);
	dsv_net_dir_close(d);
	if (err) {
		free(*text);
		*text = NULL;
		return err;
	}
	(*text)[*len] = '\0';
	return 0;
}

/* Reads dir/name whole (at most META_MAX bytes) into a malloc'd buffer.
 * @return 0, DSV_ERR_NOTFOUND when it does not exist, or another error
 * (for an object, why (may be NULL) says what the store answered). */
static int slurp(const char *dir, const char *name, char **text, size_t *len, struct stat *st,
		 dsv_errbuf *why)
{
	char path[4096];
	*text = NULL;
	if (dsv_url_scheme_len(dir)) {
		memset(st, 0, sizeof(*st)); /* no mtime known */
		return slurp_object(dir, name, text, len, why);
	}
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return DSV_ERR_INVALID;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO;
	int err = 0;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode))
		err = DSV_ERR_IO;
	else if (st->st_size > META_MAX)
		err = DSV_ERR_OVERFLOW;
	else if (!(*text = malloc((size_t)st->st_size + 1)))
		err = DSV_ERR_NOMEM;
	else if (read(fd, *text, (size_t)st->st_size) != st->st_size)
		err = DSV_ERR_IO;
	close(fd);
	if (err) {
		free(*text);
		*text = NULL;
		return err;
	}
	(*text)[st->st_size] = '\0';
	*len = (size_t)st->st_size;
	return 0;
}

/* What dir (a directory or an object storage prefix) holds:
 * DSV_FMT_ARRAY or DSV_FMT_GROUP by v2's own file (.zarray, .zgroup) or
 * a v3 zarr.json naming its node type (open and the group walk parse it
 * for real), else 0. Asked in the order that costs an array the fewest
 * reads (one for v2, two for v3). A store that refuses or fails a read
 * gives an array, whose open then says how. The registry asks only of
 * names no file format claims, so an object named as a file costs no GET
 * here. */
static int zarr_by_dir(const char *dir)
{
	char *text = NULL;
	size_t len;
	struct stat st;
	int kind = 0, url = dsv_url_scheme_len(dir) != 0;
	if (!url && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		return 0;
	int err = slurp(dir, ".zarray", &text, &len, &st, NULL);
	if (err == 0 || (err != DSV_ERR_NOTFOUND && url))
		kind = DSV_FMT_ARRAY;
	else if (slurp(dir, "zarr.json", &text, &len, &st, NULL) == 0)
		kind = strstr(text, "\"array\"")   ? DSV_FMT_ARRAY
		       : strstr(text, "\"group\"") ? DSV_FMT_GROUP
						   : 0;
	else if (slurp(dir, ".zgroup", &text, &len, &st, NULL) == 0)
		kind = DSV_FMT_GROUP;
	free(text);
	return kind;
}

static size_t zarr_by_name(const char *name)
{
	return dsv_has_ext(name, ".zarr") ? 5 : 0;
}

static int zarr_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	return dsv_source_open_zarr(file, out, eb);
}

const dsv_format dsv_format_zarr = {
	.name = "zarr",
	.noun = "a Zarr array or group",
	.traits = DSV_FMT_DIR,
	.by_name = zarr_by_name,
	.by_dir = zarr_by_dir,
	.open = zarr_open,
};

int dsv_zarr_note(dsv_grid_io *io, int err, const char *path)
{
	dsv_grid_fault(io, err, path, NULL, "chunk file %s", path);
	return err;
}

/* The key of the file holding grid chunk idx into key, and where the chunk
 * is in it: *shard (linear, in kgrid) and *inner (C order in the shard).
 * Unsharded: the chunk's own file, both 0. */
static void file_of(const dsv_zarr_meta *m, const uint64_t *idx, char *key, size_t cap,
		    uint64_t *shard, uint64_t *inner)
{
	uint64_t at[DSV_MAX_DIMS];
	*shard = *inner = 0;
	for (int k = 0; k < m->ndim; k++) {
		at[k] = m->sharded ? idx[k] / m->per_shard[k] : idx[k];
		*shard = *shard * m->kgrid[k] + at[k];
		if (m->sharded)
			*inner = *inner * m->per_shard[k] + idx[k] % m->per_shard[k];
	}
	(void)dsv_zarr_chunk_key(m, at, key, cap); /* idx is inside the grid */
}

/* The stored bytes of grid chunk idx, read from its open file fd (at
 * path) into *buf (a thread's buffer), *n of them: the whole file, or the
 * inner chunk's bytes its shard's index points to. Names path as what
 * failed, unless the chunk was never written (DSV_ERR_NOTFOUND). */
static int stored(const zarr_state *z, dsv_grid_io *io, int fd, const char *path, uint64_t shard,
		  uint64_t inner, size_t size, unsigned char **buf, size_t *n)
{
	const dsv_zarr_meta *m = &z->m;
	struct stat st;
	uint64_t off = 0, len;
	dsv_errbuf eb;
	int err;
	/* No encoding here makes a chunk much bigger than its raw bytes. */
	uint64_t cap = (uint64_t)size + size / 8 + 4096;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return dsv_zarr_note(io, DSV_ERR_IO, path);
	len = (uint64_t)st.st_size;
	if (m->sharded) {
		/* a shuffled reader wants this inner chunk alone: no readahead
		 * around it (a sequential one asked for the shard in prefetch) */
		if (!(io->flags & DSV_READ_STREAM))
			(void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
		err = dsv_zarr_index_find(z->shards, m, fd, len, shard, inner, &off, &len, &eb);
		if (err == DSV_ERR_NOTFOUND)
			return err;
		if (err) {
			dsv_grid_fault(io, err, path, NULL, "shard %s: %s", path, eb.reason);
			return err;
		}
	}
	if (len > cap)
		return dsv_zarr_note(io, DSV_ERR_CORRUPT, path);
	if (!(*buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)len ? (size_t)len : 1)))
		return dsv_zarr_note(io, DSV_ERR_NOMEM, path);
	*n = (size_t)len;
	err = dsv_pread_fd(fd, *buf, (size_t)len, off);
	return err ? dsv_zarr_note(io, err, path) : 0;
}

/* Grid chunk idx of s into exactly size bytes (grid.c's grid_chunk). */
static int zarr_chunk(const dsv_source *s, dsv_grid_io *io, const uint64_t *idx, void *dst,
		      size_t size)
{
	const zarr_state *z = s->fmt;
	char key[KEY_MAX], path[4096 + KEY_MAX];
	uint64_t shard, inner;
	unsigned char *buf = NULL;
	size_t n = 0;
	file_of(&z->m, idx, key, sizeof(key), &shard, &inner);
	snprintf(path, sizeof(path), "%s/%s", z->dir, key);
	if (z->net)
		return dsv_zarr_object_chunk(z, s, io, key, path, shard, inner, dst, size);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? DSV_ERR_NOTFOUND : dsv_zarr_note(io, DSV_ERR_IO, path);
	int err = stored(z, io, fd, path, shard, inner, size, &buf, &n);
	close(fd);
	if (err)
		return err;
	err = dsv_zarr_decode(&z->m, dst, size, buf, n);
	return err ? dsv_zarr_note(io, err == DSV_ERR_NOMEM ? err : DSV_ERR_CORRUPT, path) : 0;
}

/* Asks the kernel for the chunk files of band (at most 256 of them; each
 * shard file once, whole). */
static void willneed_band(const dsv_source *s, uint64_t band)
{
	const zarr_state *z = s->fmt;
	uint64_t idx[DSV_MAX_DIMS] = { 0 }, shard, inner, last = UINT64_MAX;
	char key[KEY_MAX], path[4096 + KEY_MAX];
	int nd = z->m.ndim;
	uint64_t first = band * s->more->g_band;
	if (first >= z->m.grid[0])
		return;
	idx[0] = first;
	for (int n = 0; n < 256; n++) {
		file_of(&z->m, idx, key, sizeof(key), &shard, &inner);
		if (shard != last) {
			snprintf(path, sizeof(path), "%s/%s", z->dir, key);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				(void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
				close(fd);
			}
			last = shard;
		}
		int k = nd - 1;
		for (; k >= 1; k--) {
			if (++idx[k] < z->m.grid[k])
				break;
			idx[k] = 0;
		}
		if (k < 1 && (++idx[0] == first + s->more->g_band || idx[0] == z->m.grid[0]))
			return;
	}
}

/* Each chunk is a file of its own, which the kernel never reads ahead
 * across. So: a band's chunk files are asked for side by side while the
 * first are decoded (one chunk a band: nothing to overlap), and a thread
 * that reads on (the readahead: DSV_READ_STREAM) asks for the next
 * two bands' files too, while it decodes this one's (the readahead's two
 * threads each a band ahead). A sequential cold pass of one-chunk bands
 * read 0.8x a dsview store without this and 0.9x with it (docs/benchmarks/grid-zarr.md).
 * A shard file is asked for whole, and only by a reader that reads on: a
 * shuffled one reads just the inner chunks it needs (zarr_chunk). */
static void zarr_prefetch(const dsv_source *s, dsv_grid_io *io)
{
	const zarr_state *z = s->fmt;
	if (z->m.ndim == 0 || z->net || (z->m.sharded && !(io->flags & DSV_READ_STREAM)))
		return; /* objects: no page cache to ask */
	if (z->m.nchunks / z->m.grid[0] >= 2 || s->more->g_band >= 2 || z->m.sharded)
		willneed_band(s, io->band);
	if (io->flags & DSV_READ_STREAM) {
		willneed_band(s, io->band + 1);
		willneed_band(s, io->band + 2);
	}
}

/* Adds to *bytes the sizes of the chunk files in directory dfd (which it
 * closes), whose path relative to the array is rel[0..len) ("" or ending
 * in '/'), descending at most down more levels. */
static void walk(const dsv_zarr_meta *m, int dfd, char *rel, size_t len, int down, uint64_t *bytes)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	struct stat st;
	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (e->d_name[0] == '.' || len + n + 2 > KEY_MAX)
			continue; /* ".", "..", .zarray, .zattrs: no chunk key starts so */
		memcpy(rel + len, e->d_name, n + 1);
		if (down &&
		    (e->d_type == DT_DIR || e->d_type == DT_LNK || e->d_type == DT_UNKNOWN)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (sub >= 0) {
				rel[len + n] = '/';
				walk(m, sub, rel, len + n + 1, down - 1, bytes);
				continue;
			}
		}
		if (dsv_zarr_is_chunk_key(m, rel) && fstatat(dirfd(d), e->d_name, &st, 0) == 0 &&
		    S_ISREG(st.st_mode))
			*bytes += (uint64_t)st.st_size;
	}
	closedir(d);
}

/* s's stored_count: the bytes of the array's chunk files, counted at the
 * first call and kept. The files counted are those in its directory (and
 * with separator '/' in its subdirectories, as deep as a key goes) whose
 * paths are chunk keys of the grid: the cost is a stat of each file there
 * is, whatever the grid's size, which is why it waits until asked (about
 * 2 us a file warm, 10 cold on a local disk; 20,000 chunk files would
 * have made a mount four times slower) rather than being done at open. */
static uint64_t zarr_stored_bytes(const dsv_source *s)
{
	zarr_state *z = s->fmt;
	char rel[KEY_MAX];
	int parts = z->m.ndim + z->m.key_prefix, dfd;
	if (z->net)
		return 0; /* counting needs a listing of the bucket */
	pthread_mutex_lock(&z->lock);
	if (!z->counted) {
		rel[0] = '\0';
		z->stored = 0;
		if ((dfd = open(z->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
			walk(&z->m, dfd, rel, 0, z->m.sep == '/' && parts > 1 ? parts - 1 : 0,
			     &z->stored);
		z->counted = 1;
	}
	uint64_t n = z->stored;
	pthread_mutex_unlock(&z->lock);
	return n;
}

/* z->dir and z->net for an array at url (trailing '/' dropped). */
static int open_object_dir(zarr_state *z, const char *url, dsv_errbuf *eb)
{
	size_t n = strlen(url);
	while (n > dsv_url_scheme_len(url) && url[n - 1] == '/')
		n--;
	if (!(z->dir = strndup(url, n)))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	return dsv_net_dir_open(z->dir, &z->net, eb);
}

int dsv_source_open_zarr(const char *dir, dsv_source **out, dsv_errbuf *eb)
{
	char *text = NULL, *attrs = NULL, *dims = NULL;
	size_t len = 0, alen;
	struct stat st;
	int err, version = 2;
	dsv_source *s;
	zarr_state *z;

	*out = NULL;
	if (!(s = dsv_source_alloc(dir, NULL)) || !(z = calloc(1, sizeof(*z)))) {
		dsv_source_close(s);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&z->lock, NULL);
	/* Chunk files are opened by path long after this, by a daemon whose
	 * working directory is "/": keep the absolute path. */
	if (dsv_url_scheme_len(dir)) {
		err = open_object_dir(z, dir, eb);
		if (err) {
			zarr_close(z);
			dsv_source_close(s);
			return err;
		}
	} else if (!(z->dir = realpath(dir, NULL))) {
		int e = errno;
		free(z);
		dsv_source_close(s);
		return dsv_errf_at(eb,
				   e == ENOENT   ? DSV_ERR_NOTFOUND
				   : e == ENOMEM ? DSV_ERR_NOMEM
						 : DSV_ERR_IO,
				   dir, NULL, "%s", strerror(e));
	}
	s->fmt = z;
	s->fmt_close = zarr_close;
	dsv_errbuf why = { 0 };
	err = slurp(z->dir, ".zarray", &text, &len, &st, &why);
	if (err == DSV_ERR_NOTFOUND) {
		version = 3;
		err = slurp(z->dir, "zarr.json", &text, &len, &st, &why);
	}
	if (err) {
		dsv_source_close(s);
		return dsv_errf_at(eb, err, dir, NULL, "%s",
				   err == DSV_ERR_NOTFOUND
					   ? "not a Zarr array (no .zarray or zarr.json)"
				   : err == DSV_ERR_OVERFLOW ? "array metadata larger than 1 MiB"
				   : why.reason[0]           ? why.reason
							     : "cannot read the array metadata");
	}
	s->info.mtime = st.st_mtim;
	if ((err = dsv_zarr_parse(text, len, version, &z->m, eb)) ||
	    (version == 3 && (err = dsv_zarr_attrs(text, len, 3, z->m.ndim, &attrs, &dims, eb)))) {
		free(text);
		dsv_errbuf inner = *eb;
		dsv_source_close(s);
		return dsv_errf_at(eb, err, dir, version == 2 ? ".zarray" : "zarr.json", "%s",
				   inner.reason);
	}
	free(text);
	if (version == 2) { /* the attributes live beside, in .zattrs */
		err = slurp(z->dir, ".zattrs", &text, &alen, &st, NULL);
		if (!err)
			err = dsv_zarr_attrs(text, alen, 2, z->m.ndim, &attrs, &dims, eb);
		free(text);
		if (err && err != DSV_ERR_NOTFOUND) {
			dsv_errbuf inner = *eb;
			dsv_source_close(s);
			return dsv_errf_at(eb, err, dir, ".zattrs", "%s", inner.reason);
		}
	}
	s->info.attrs = s->attrs_json = attrs;
	s->info.dim_names = s->dims_json = dims;

	const dsv_zarr_meta *m = &z->m;
	s->info.kind = DSV_SRC_ZARR;
	s->info.dtype = m->dtype;
	dsv_source_why(s, "zarr v%d, %s%s", m->version, m->sharded ? "sharded, " : "",
		       m->compressor);
	if (m->sharded && !(z->shards = dsv_zarr_index_cache_create(m))) {
		dsv_source_close(s);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	if (dsv_source_set_shape(s, m->ndim, m->shape)) {
		dsv_source_close(s);
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, dir, NULL, "the array is too large");
	}
	s->grid = 1;
	s->chunked = 1;
	s->more->g_fortran = m->fortran;
	s->more->g_big_endian = m->big_endian;
	memcpy(s->more->g_fill, m->fill, sizeof(s->more->g_fill));
	if (dsv_source_dims(s)) {
		dsv_source_close(s);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	for (int k = 0; k < m->ndim; k++) {
		s->more->gshape[k] = m->chunks[k];
		s->more->gcount[k] = m->grid[k];
	}
	s->more->grid_chunk = zarr_chunk;
	s->more->grid_begin = zarr_prefetch;
	uint64_t band_rows = m->ndim ? m->chunks[0] : 1;
	s->more->chunk_raw_size = band_rows * (m->ndim ? s->info.row_elems : 1) *
				  dsv_dtype_size(m->dtype);
	if (s->more->chunk_raw_size > DSV_GRID_BAND_MAX) {
		dsv_source_close(s);
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, dir, NULL,
				   "%llu rows of a chunk (%llu MiB) are more than the read path "
				   "takes at once (%llu MiB)",
				   (unsigned long long)band_rows,
				   (unsigned long long)(s->more->chunk_raw_size >> 20),
				   DSV_GRID_BAND_MAX >> 20);
	}
	dsv_grid_set_bands(s);
	s->more->stored_count = zarr_stored_bytes;
	*out = s;
	return 0;
}
