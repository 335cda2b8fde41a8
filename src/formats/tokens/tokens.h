/* Token files of LLM trainers, each served as one 1-D token stream
 * (info.tokens): llm.c's .bin (llmc.c), Megatron-Core's .bin + .idx
 * (megatron.c), LitData's TokensLoader chunks with their index.json
 * (litdata.c); tokens.c holds what they share. */
#ifndef DSV_FORMATS_TOKENS_H
#define DSV_FORMATS_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#include "source/format.h"

extern const dsv_format dsv_format_llmc;
extern const dsv_format dsv_format_megatron;
extern const dsv_format dsv_format_litdata;

/* A Megatron index's documents as rows (a manifest's rows = documents,
 * seq_len, pad_token): each document's first seq_len tokens, the rest of
 * a shorter one pad. */
typedef struct dsv_doc_rows {
	uint64_t seq_len;
	int64_t pad;
} dsv_doc_rows;
/* Opens the Megatron index idx as (documents, seq_len) rows of its tokens
 * (meg_docs.c). @return 0 or a dsv_err with eb set. */
int dsv_megatron_open_documents(const char *idx, const dsv_doc_rows *d, dsv_source **out,
				dsv_errbuf *eb);

/* Opens path (dataset NULL) as a token stream of count elements of dtype
 * at byte off of the file, one run: the run checked against the file's
 * size. why: what info says of it (copied). @return 0 or a dsv_err. */
int dsv_tokens_open_run(const char *path, dsv_dtype dtype, uint64_t off, uint64_t count,
			const char *why, dsv_source **out, dsv_errbuf *eb);
/* Reads the first n bytes of file into buf (what: the header's name, for
 * the error of a shorter file); *size gets the file's size. */
int dsv_tokens_read_head(const char *file, void *buf, size_t n, const char *what, uint64_t *size,
			 dsv_errbuf *eb);
/* Marks s, opened by a token format, a token stream whose info says why. */
void dsv_tokens_mark(dsv_source *s, const char *why);

/* tokens_index.c: the index cache's hooks (source/format.h's save and
 * load) of a token stream in one run of a file: its dtype, offset,
 * count, what info says, and the stamp of the file the run is in. The
 * loads check each against that file as it is now (llm.c's: the file
 * named, its 1024-byte header; Megatron's: the .bin beside the .idx
 * named, stat'ed, not read). */
int dsv_tokens_index_save(const dsv_source *s, dsv_index_buf *out);
int dsv_llmc_index_load(const char *file, const char *dataset, const void *blob, size_t len,
			const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb);
int dsv_meg_index_load(const char *file, const char *dataset, const void *blob, size_t len,
		       const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb);

#endif
