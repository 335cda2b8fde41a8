/*
 * A table of things found by (key, chunk), for the chunk cache
 * (src/cache, key: a source's cache key) and the GPU tier's index
 * (src/gpu/gpu_tier.c, key: the source's address). Chained and intrusive:
 * each thing holds its dsv_chunk_link, which the table links; the table
 * allocates only its buckets, and doubles them when it holds as many
 * things as it has buckets (if that fails, chains grow longer, still
 * correct). Finding is inline: the cache finds under its lock on every
 * read. A thing is in one table at most, at most once per (key, chunk).
 *
 * Thread safety: none; the owner's lock guards the table.
 */
#ifndef DSV_COMMON_CHUNK_TABLE_H
#define DSV_COMMON_CHUNK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/hash.h"

typedef struct dsv_chunk_link {
	struct dsv_chunk_link *next; /* in the bucket; the owner's to use once removed */
	uint64_t key, chunk;
} dsv_chunk_link;

typedef struct dsv_chunk_table {
	dsv_chunk_link **buckets;
	size_t mask;  /* buckets - 1, a power of two less one */
	size_t count; /* things in the table */
} dsv_chunk_table;

/* An empty table of nbuckets buckets (a power of two). @return 0, or -1
 * when out of memory (t is then finishable). */
int dsv_chunk_table_init(dsv_chunk_table *t, size_t nbuckets);
/* Frees the buckets, and every thing still in the table with free_thing
 * (given the thing, whose first member its link must be; NULL: none). */
void dsv_chunk_table_fini(dsv_chunk_table *t, void (*free_thing)(void *thing));

/* The thing of (key, chunk), or NULL. */
static inline dsv_chunk_link *dsv_chunk_table_find(const dsv_chunk_table *t, uint64_t key,
						   uint64_t chunk)
{
	dsv_chunk_link *l = t->buckets[dsv_hash_chunk(key, chunk) & t->mask];
	while (l && (l->key != key || l->chunk != chunk))
		l = l->next;
	return l;
}

/* Links l, whose key and chunk are set and not in the table. */
void dsv_chunk_table_add(dsv_chunk_table *t, dsv_chunk_link *l);
/* Unlinks l, which is in the table; l->next is then the caller's. */
void dsv_chunk_table_remove(dsv_chunk_table *t, dsv_chunk_link *l);

#endif
