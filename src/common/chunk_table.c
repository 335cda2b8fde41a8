/* Things found by (key, chunk): see chunk_table.h. */
#include <stdlib.h>

#include "common/chunk_table.h"

int dsv_chunk_table_init(dsv_chunk_table *t, size_t nbuckets)
{
	t->buckets = calloc(nbuckets, sizeof(*t->buckets));
	t->mask = t->buckets ? nbuckets - 1 : 0;
	t->count = 0;
	return t->buckets ? 0 : -1;
}

void dsv_chunk_table_fini(dsv_chunk_table *t, void (*free_thing)(void *thing))
{
	for (size_t i = 0; free_thing && t->buckets && i <= t->mask; i++) {
		dsv_chunk_link *l = t->buckets[i], *next;
		for (; l; l = next) {
			next = l->next;
			free_thing(l);
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	t->count = 0;
}

static void grow(dsv_chunk_table *t)
{
	size_t n = (t->mask + 1) * 2;
	dsv_chunk_link **b = calloc(n, sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i <= t->mask; i++) {
		dsv_chunk_link *l = t->buckets[i], *next;
		for (; l; l = next) {
			next = l->next;
			size_t h = dsv_hash_chunk(l->key, l->chunk) & (n - 1);
			l->next = b[h];
			b[h] = l;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->mask = n - 1;
}

void dsv_chunk_table_add(dsv_chunk_table *t, dsv_chunk_link *l)
{
	if (t->count > t->mask)
		grow(t);
	dsv_chunk_link **b = &t->buckets[dsv_hash_chunk(l->key, l->chunk) & t->mask];
	l->next = *b;
	*b = l;
	t->count++;
}

void dsv_chunk_table_remove(dsv_chunk_table *t, dsv_chunk_link *l)
{
	dsv_chunk_link **p = &t->buckets[dsv_hash_chunk(l->key, l->chunk) & t->mask];
	while (*p != l)
		p = &(*p)->next;
	*p = l->next;
	t->count--;
}
