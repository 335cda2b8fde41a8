/* Per-thread scratch buffers; see tlsbuf.h. */
#include <pthread.h>
#include <stdlib.h>

#include "common/tlsbuf.h"

typedef struct tls_bufs {
	void *p[DSV_TLS_NSLOTS];
	size_t cap[DSV_TLS_NSLOTS];
} tls_bufs;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void bufs_free(void *arg)
{
	tls_bufs *b = arg;
	for (int i = 0; i < DSV_TLS_NSLOTS; i++)
		free(b->p[i]);
	free(b);
}

static void key_init(void)
{
	pthread_key_create(&key, bufs_free);
}

void *dsv_tls_buf(int slot, size_t size)
{
	pthread_once(&once, key_init);
	tls_bufs *b = pthread_getspecific(key);
	if (!b) {
		if (!(b = calloc(1, sizeof(*b))))
			return NULL;
		if (pthread_setspecific(key, b)) {
			free(b);
			return NULL;
		}
	}
	if (size == 0)
		size = 1;
	if (b->cap[slot] < size) {
		void *n = malloc(size);
		if (!n)
			return NULL;
		free(b->p[slot]);
		b->p[slot] = n;
		b->cap[slot] = size;
	}
	return b->p[slot];
}
