/*
 * Token streams in one run of a file (llm.c's .bin, a Megatron .idx's
 * .bin) in the index cache (source/index.h), made again with no read of
 * any file. The saved fields, little-endian: u64 dtype, data offset,
 * token count, tokens (1: served as a token stream), the stamp of the
 * file the run is in (size, mtime in ns, inode, device), then what info
 * says (u64 length + its bytes). The run must fill that file to its end
 * exactly, as the opens require: an llm.c file is its 1024-byte header
 * and its tokens, a Megatron .bin its tokens alone.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/arith.h"
#include "formats/tokens/megatron_i.h"
#include "formats/tokens/tokens.h"
#include "source/source_i.h"

/* The longest info text kept (the opens write fewer than 100 bytes). */
#define WHY_MAX 256u
/* llm.c's header: 256 int32 */
#define LLMC_HEAD 1024u

int dsv_tokens_index_save(const dsv_source *s, dsv_index_buf *out)
{
	dsv_index_stamp st;
	size_t n = s->why ? strlen(s->why) : 0;

	if (s->info.kind != DSV_SRC_RUN || s->chunked || s->fallback || s->fmt || s->more->vpread ||
	    s->net || n > WHY_MAX || dsv_source_stamp(s, &st))
		return DSV_ERR_UNSUPPORTED;
	const uint64_t v[8] = { s->info.dtype,  s->data_offset,
				s->info.nelems, (uint64_t)s->info.tokens,
				st.size,        st.mtime_ns,
				st.ino,         st.dev };
	for (size_t k = 0; k < 8; k++)
		dsv_index_put_u64(out, v[k]);
	dsv_index_put_u64(out, n);
	dsv_index_put(out, s->why, n);
	return out->bad ? DSV_ERR_NOMEM : 0;
}

/* What a saved run holds. */
typedef struct run_entry {
	uint64_t dtype, off, count, tokens;
	dsv_index_stamp st;
	char why[WHY_MAX + 1];
} run_entry;

/* blob into e: every field there, the info text printable ASCII, the run
 * filling its file (as e->st sizes it) from off to the end. */
static int get_run(const void *blob, size_t len, run_entry *e)
{
	dsv_index_cur c = { blob, (const unsigned char *)blob + len, 0 };
	uint64_t v[9], bytes, end;
	const unsigned char *w;

	for (size_t k = 0; k < 9; k++)
		v[k] = dsv_index_get_u64(&c);
	if (c.bad || v[8] > WHY_MAX || !(w = dsv_index_get(&c, (size_t)v[8])) || c.p != c.end)
		return DSV_ERR_CORRUPT;
	for (uint64_t i = 0; i < v[8]; i++)
		if (w[i] < 0x20 || w[i] > 0x7e)
			return DSV_ERR_CORRUPT;
	*e = (run_entry){ .dtype = v[0],
			  .off = v[1],
			  .count = v[2],
			  .tokens = v[3],
			  .st = { v[4], v[5], v[6], v[7] } };
	memcpy(e->why, w, (size_t)v[8]);
	e->why[v[8]] = '\0';
	if (e->dtype >= DSV_DTYPE__COUNT || e->dtype == (uint64_t)DSV_DTYPE_INVALID ||
	    e->dtype == (uint64_t)DSV_BF16 || e->tokens > 1 ||
	    dsv_mul_u64(e->count, dsv_dtype_size((dsv_dtype)e->dtype), &bytes) ||
	    dsv_add_u64(e->off, bytes, &end) || end != e->st.size)
		return DSV_ERR_CORRUPT;
	return 0;
}

/* The source of the run e describes in file, unopened (its descriptor
 * cache opens it at the first read, checked against e->st). */
static int make_run(const char *file, const run_entry *e, dsv_source **out)
{
	dsv_source *s = dsv_index_unopened(file, NULL, &e->st);
	uint64_t count = e->count;

	if (!s)
		return DSV_ERR_NOMEM;
	s->info.dtype = (dsv_dtype)e->dtype;
	if (dsv_source_set_shape(s, 1, &count)) {
		dsv_source_close(s);
		return DSV_ERR_CORRUPT;
	}
	s->data_offset = e->off;
	s->info.kind = DSV_SRC_RUN;
	s->info.stored_bytes = e->st.size - e->off;
	dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	dsv_tokens_mark(s, e->why);
	s->info.tokens = (int)e->tokens;
	*out = s;
	return 0;
}

/* The error of an entry that did not load. */
static int refused(int err, const char *file, dsv_errbuf *eb)
{
	if (err == DSV_ERR_NOMEM)
		return dsv_errf_at(eb, err, file, NULL, "out of memory");
	return dsv_errf_at(eb, err, file, NULL, "its entry in the index cache is damaged");
}

int dsv_llmc_index_load(const char *file, const char *dataset, const void *blob, size_t len,
			const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb)
{
	run_entry e;
	int err = get_run(blob, len, &e);

	(void)dataset;
	*out = NULL;
	/* GPT-2's uint16 or Llama 3's uint32 after the header, of this file */
	if (!err && (e.off != LLMC_HEAD || !e.tokens || memcmp(&e.st, st, sizeof(*st)) ||
		     (e.dtype != (uint64_t)DSV_U16 && e.dtype != (uint64_t)DSV_U32)))
		err = DSV_ERR_CORRUPT;
	if (!err)
		err = make_run(file, &e, out);
	return err ? refused(err, file, eb) : 0;
}

/* 1 when dtype is one a Megatron dtype code names. */
static int meg_dtype(uint64_t dtype)
{
	for (int c = 1; c < DSV_MEG_CODES; c++)
		if ((uint64_t)dsv_meg_dtypes[c] == dtype)
			return 1;
	return 0;
}

int dsv_meg_index_load(const char *file, const char *dataset, const void *blob, size_t len,
		       const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb)
{
	run_entry e;
	dsv_index_stamp now;
	struct stat bs;
	char *bin = NULL;
	int err = get_run(blob, len, &e);

	(void)dataset;
	(void)st; /* the .idx's, which the cache found the entry by */
	*out = NULL;
	if (!err && (e.off || !meg_dtype(e.dtype) ||
		     e.tokens != (uint64_t)dsv_dtype_is_int((dsv_dtype)e.dtype)))
		err = DSV_ERR_CORRUPT;
	if (!err && !(bin = dsv_meg_bin_of(file)))
		err = DSV_ERR_NOMEM;
	/* the .bin as it was when the entry was made */
	if (!err && (stat(bin, &bs) || !S_ISREG(bs.st_mode)))
		err = DSV_ERR_NOTFOUND;
	if (!err) {
		dsv_index_stamp_of(&bs, &now);
		if (memcmp(&now, &e.st, sizeof(now)))
			err = DSV_ERR_CORRUPT;
	}
	if (!err)
		err = make_run(bin, &e, out);
	free(bin);
	if (err == DSV_ERR_NOTFOUND)
		return dsv_errf_at(eb, err, file, NULL, "its .bin is gone");
	return err ? refused(err, file, eb) : 0;
}
