/*
 * Blosc2, HDF5 filter 32026 as hdf5plugin and PyTables write it: each
 * chunk is a Blosc2 contiguous frame holding one super-chunk, either a
 * B2ND array (the filter's choice for chunks of rank 1 to 8: the chunk cut
 * into N-d blocks, each shuffled and compressed on its own) or, without a
 * "b2nd" metalayer, one plain Blosc2 chunk of the chunk's bytes in order.
 *
 * Decoded by libblosc2 (c-blosc2 2.7 or later), which Debian 12 does not
 * package and which this program therefore does not link: it is loaded at
 * the first Blosc2 dataset with dlopen, by the names below, from the
 * loader's path (LD_LIBRARY_PATH, or a system c-blosc2; PyPI's `blosc2`
 * wheel carries one in blosc2/lib). Without it a Blosc2 dataset is refused
 * with that reason. The wheel's library holds its own LZ4 and Zstandard:
 * RTLD_DEEPBIND keeps its calls to them inside it rather than bound to the
 * Debian ones this program links (sanitizer runtimes refuse DEEPBIND:
 * there the public decoders of both, which are the same API, are shared).
 *
 * The decode is the filter's own: a B2ND array's shape must be the
 * dataset's chunk shape (its unused dimensions are 1), read whole in C
 * order; a plain super-chunk's first chunk must decode to exactly the
 * chunk's size. Only functions libblosc2 exports are called, and of its
 * structures only the first two members of b2nd_array_t (the super-chunk
 * pointer, then the shape), which every b2nd version has had there.
 *
 * Thread safety: the library is loaded and initialised once (pthread_once);
 * each decode works on a super-chunk of its own.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "codec/codec.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_DEEPBIND 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NO_DEEPBIND 1
#endif
#endif
#ifdef NO_DEEPBIND
#define DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#else
#define DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
#endif

/* c-blosc2's BLOSC2_ERROR_METALAYER_NOT_FOUND: a frame without B2ND. */
#define B2_METALAYER_NOT_FOUND (-34)
/* b2nd_array_t's shape has B2ND_MAX_DIM entries: 8, 16 since c-blosc2
 * 3.0; those past an array's rank are 1. Past 8 entries a library of 8
 * has other members there (the struct is larger than 16 int64s). */
#define B2ND_DIMS 16
#define B2ND_DIMS_ALWAYS 8

static struct {
	void (*init)(void);
	void *(*from_buffer)(uint8_t *frame, int64_t len, bool copy);
	int (*schunk_free)(void *schunk);
	int (*decompress_chunk)(void *schunk, int64_t nchunk, void *dest, int32_t nbytes);
	int (*from_schunk)(void *schunk, void **array);
	int (*array_free)(void *array);
	int (*slice)(const void *array, const int64_t *start, const int64_t *stop, void *buffer,
		     const int64_t *buffershape, int64_t buffersize);
	int loaded;
	char why[512];
} b2;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	static const char *const names[] = { "libblosc2.so",   "libblosc2.so.9", "libblosc2.so.8",
					     "libblosc2.so.7", "libblosc2.so.6", "libblosc2.so.5",
					     "libblosc2.so.4", "libblosc2.so.3", "libblosc2.so.2" };
	void *lib = NULL;
	for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
		lib = dlopen(names[i], DLOPEN_FLAGS);
	if (!lib) {
		snprintf(b2.why, sizeof(b2.why),
			 "libblosc2 (c-blosc2 2.7 or later) is not installed or not on the "
			 "loader's path (LD_LIBRARY_PATH; pip's blosc2 wheel has one in "
			 "blosc2/lib)");
		return;
	}
	*(void **)&b2.init = dlsym(lib, "blosc2_init");
	*(void **)&b2.from_buffer = dlsym(lib, "blosc2_schunk_from_buffer");
	*(void **)&b2.schunk_free = dlsym(lib, "blosc2_schunk_free");
	*(void **)&b2.decompress_chunk = dlsym(lib, "blosc2_schunk_decompress_chunk");
	*(void **)&b2.from_schunk = dlsym(lib, "b2nd_from_schunk");
	*(void **)&b2.array_free = dlsym(lib, "b2nd_free");
	*(void **)&b2.slice = dlsym(lib, "b2nd_get_slice_cbuffer");
	if (!b2.init || !b2.from_buffer || !b2.schunk_free || !b2.decompress_chunk ||
	    !b2.from_schunk || !b2.array_free || !b2.slice) {
		snprintf(b2.why, sizeof(b2.why),
			 "the libblosc2 found has no B2ND (c-blosc2 2.7 or later is needed)");
		dlclose(lib);
		return;
	}
	b2.init(); /* the library stays loaded and initialised for the process */
	b2.loaded = 1;
}

int dsv_blosc2_load(dsv_errbuf *eb)
{
	pthread_once(&once, load);
	if (b2.loaded)
		return 0;
	return eb ? dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s", b2.why) : DSV_ERR_UNSUPPORTED;
}

/* B2ND array a into dst: its shape must be shape[0..ndim), then ones. */
static int64_t from_array(void *a, void *dst, size_t dst_size, int ndim, const uint64_t *shape)
{
	int64_t ashape[B2ND_DIMS], start[B2ND_DIMS] = { 0 }, stop[B2ND_DIMS];
	memcpy(ashape, (const char *)a + sizeof(void *), sizeof(ashape));
	if (ndim < 1 || ndim > B2ND_DIMS)
		return DSV_ERR_CORRUPT;
	for (int k = 0; k < B2ND_DIMS; k++) {
		stop[k] = k < ndim ? (int64_t)shape[k] : 1;
		if ((k < ndim || k < B2ND_DIMS_ALWAYS) && ashape[k] != stop[k])
			return DSV_ERR_CORRUPT;
	}
	if (b2.slice(a, start, stop, dst, stop, (int64_t)dst_size) != 0)
		return DSV_ERR_CORRUPT;
	return (int64_t)dst_size;
}

int64_t dsv_blosc2_decode(void *dst, size_t dst_size, const void *src, size_t src_size, int ndim,
			  const uint64_t *shape)
{
	if (dsv_blosc2_load(NULL))
		return DSV_ERR_UNSUPPORTED;
	if (src_size > INT64_MAX || dst_size > INT32_MAX)
		return DSV_ERR_CORRUPT;
	/* copy = false: the frame is only read, never written */
	void *sc = b2.from_buffer((uint8_t *)(uintptr_t)src, (int64_t)src_size, false);
	if (!sc)
		return DSV_ERR_CORRUPT;
	void *a = NULL;
	int64_t got = DSV_ERR_CORRUPT;
	int rc = b2.from_schunk(sc, &a);
	if (rc == 0) {
		got = from_array(a, dst, dst_size, ndim, shape);
		b2.array_free(a); /* and the super-chunk it took over */
		return got;
	}
	if (rc == B2_METALAYER_NOT_FOUND &&
	    b2.decompress_chunk(sc, 0, dst, (int32_t)dst_size) == (int)dst_size)
		got = (int64_t)dst_size;
	b2.schunk_free(sc);
	return got;
}
