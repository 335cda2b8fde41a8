/* What megatron.c (the token stream) and meg_docs.c (its documents as
 * rows) share: a Megatron index opened and checked. */
#ifndef DSV_FORMATS_TOKENS_MEGATRON_I_H
#define DSV_FORMATS_TOKENS_MEGATRON_I_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/source.h"

/* The .idx's header, 34 bytes, then its arrays; they are read in blocks
 * of this many entries. */
#define MEG_HEAD 34u
#define MEG_BLOCK 65536u

typedef struct dsv_meg {
	const char *idx;
	char *bin;     /* the .bin beside it */
	dsv_source *s; /* the .idx, open */
	dsv_dtype dtype;
	int code;
	uint64_t nseq, ndoc, total; /* total: tokens, the lengths' sum */
} dsv_meg;

/* The element type of each dtype code, 1 to 8 (0: none). */
#define DSV_MEG_CODES 9
extern const dsv_dtype dsv_meg_dtypes[DSV_MEG_CODES];

/* The .bin beside the index idx (PREFIX.idx: PREFIX.bin), newly
 * allocated; NULL when out of memory. */
char *dsv_meg_bin_of(const char *idx);

/* Opens the index file and checks every field of it and the .bin's size
 * (megatron.c). @return 0 (dsv_meg_close frees g), or a dsv_err with eb
 * set (g freed). */
int dsv_meg_open(dsv_meg *g, const char *file, dsv_errbuf *eb);
void dsv_meg_close(dsv_meg *g);
/* Reads n entries of width w at byte off of the .idx into buf; field
 * names them for the error. */
int dsv_meg_read_block(const dsv_meg *g, void *buf, uint64_t n, size_t w, uint64_t off,
		       const char *field, dsv_errbuf *eb);

#endif
