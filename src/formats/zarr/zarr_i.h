/*
 * What the Zarr source's files share (zarr.c opens and reads arrays,
 * zarr_object.c reads their chunks from object storage).
 */
#ifndef DSV_ZARR_ZARR_I_H
#define DSV_ZARR_ZARR_I_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net.h"
#include "source/source_i.h"
#include "formats/zarr/zarr.h"

/* A chunk key, as dsv_zarr_chunk_key writes it, fits in this. */
#define KEY_MAX 1024

typedef struct zarr_state {
	char *dir;        /* a directory, or a URL without a trailing '/' */
	dsv_net_dir *net; /* for a URL: where the chunks are fetched from */
	dsv_zarr_meta m;
	dsv_zarr_index_cache *shards; /* sharded: the shard indexes read */
	pthread_mutex_t lock;         /* over counted and stored */
	int counted;
	uint64_t stored; /* the chunk files' bytes, once counted */
} zarr_state;

/* Names chunk file path as what failed with err. @return err */
int dsv_zarr_note(dsv_grid_io *io, int err, const char *path);

/* Grid chunk idx of an array in object storage into exactly size bytes:
 * the chunk's object (key; path names it in errors) fetched whole, or
 * inner chunk `inner` of shard object `shard` by ranged GETs. */
int dsv_zarr_object_chunk(const zarr_state *z, const dsv_source *s, dsv_grid_io *io,
			  const char *key, const char *path, uint64_t shard, uint64_t inner,
			  void *dst, size_t size);

#endif
