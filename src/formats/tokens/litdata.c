/*
 * LitData datasets of tokens (litdata optimize(..., item_loader=
 * TokensLoader()), as LitGPT prepares TinyStories and others): a
 * directory of chunk files and the index.json that lists them, in order
 * ("chunks": [{"filename", "dim", ...}], "config": {"item_loader",
 * "data_format": ["no_header_tensor:<torch dtype index>"], "compression",
 * ...}). A chunk file is u32 item count n, u32 offsets[n + 1] (byte
 * offsets in the file, the first just past themselves), then the items,
 * each a run of tokens: so a chunk's tokens are one run from offsets[0]
 * to offsets[n]. The dataset is one token stream across its chunks, in
 * the index's order (one run a chunk: source/runs.c). The directory is
 * the source (a directory format: index.json says so); compressed or
 * encrypted chunks and other item loaders are refused with the reason.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/bytes.h"
#include "common/str.h"
#include "formats/tokens/tokens.h"
#include "source/source_i.h"

#define LIT_INDEX "index.json"
#define LIT_FORMAT "no_header_tensor:"
/* items a chunk may hold: its offsets are read whole */
#define LIT_MAX_ITEMS (1u << 26)

/* litdata's _TORCH_DTYPES_MAPPING: the index a data_format names */
static dsv_dtype lit_dtype(long k)
{
	switch (k) {
	case 0:
	case 1: return DSV_F32;
	case 2:
	case 3: return DSV_F64;
	case 11: return DSV_U8;
	case 12: return DSV_I8;
	case 13:
	case 14: return DSV_I16;
	case 15:
	case 16: return DSV_I32;
	case 17:
	case 18: return DSV_I64;
	case 20: return DSV_U16;
	default: return DSV_DTYPE_INVALID;
	}
}

static char *index_path(const char *dir)
{
	char *p = NULL;
	size_t n = strlen(dir);
	if (asprintf(&p, "%s%s" LIT_INDEX, dir, n && dir[n - 1] == '/' ? "" : "/") < 0)
		return NULL;
	return p;
}

static int lit_by_dir(const char *path)
{
	struct stat st;
	char *idx = dsv_url_scheme_len(path) ? NULL : index_path(path);
	int found = 0;
	if (idx && stat(idx, &st) == 0 && S_ISREG(st.st_mode)) {
		/* a LitData index, or one that is not JSON at all (its open
		 * says so); other tools' index.json are not claimed */
		json_error_t jerr;
		json_t *j = json_load_file(idx, 0, &jerr);
		found = !j || (json_is_array(json_object_get(j, "chunks")) &&
			       json_is_object(json_object_get(j, "config")));
		json_decref(j);
	}
	free(idx);
	return found ? DSV_FMT_ARRAY : 0;
}

/* The config: TokensLoader items, no compression or encryption, and the
 * dtype its one data_format names. */
static int read_config(const char *idx, const json_t *cfg, dsv_dtype *dtype, dsv_errbuf *eb)
{
	const char *loader = json_string_value(json_object_get(cfg, "item_loader"));
	const json_t *fmt = json_object_get(cfg, "data_format"), *comp;
	const char *f = json_string_value(json_array_get(fmt, 0));

	if (!loader || strcmp(loader, "TokensLoader"))
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, idx, NULL,
				   "config.item_loader is %s: dsview serves TokensLoader chunks "
				   "(one token stream), not items of other loaders",
				   loader ? loader : "missing");
	if ((comp = json_object_get(cfg, "compression")) && !json_is_null(comp))
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, idx, NULL,
				   "config.compression is %s: compressed chunks have no random "
				   "access; optimize again with compression=None",
				   json_string_value(comp) ? json_string_value(comp) : "set");
	if ((comp = json_object_get(cfg, "encryption")) && !json_is_null(comp))
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, idx, NULL,
				   "config.encryption is set: encrypted chunks are not read");
	if (json_array_size(fmt) != 1 || !f || strncmp(f, LIT_FORMAT, strlen(LIT_FORMAT)))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, idx, NULL,
				   "config.data_format is not one \"" LIT_FORMAT "<dtype>\"");
	char *end;
	long k = strtol(f + strlen(LIT_FORMAT), &end, 10);
	if (*end || (*dtype = lit_dtype(k)) == DSV_DTYPE_INVALID)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, idx, NULL,
				   "config.data_format %s names a dtype dsview does not serve", f);
	return 0;
}

/* Chunk c's file (opened into r->file: its descriptor is the cache's,
 * under its budget) and its one run of tokens. */
static int read_chunk(const char *dir, const char *idx, size_t c, const json_t *chunk,
		      dsv_dtype dtype, dsv_run *r, dsv_errbuf *eb)
{
	const char *name = json_string_value(json_object_get(chunk, "filename"));
	const json_t *dim = json_object_get(chunk, "dim");
	size_t es = dsv_dtype_size(dtype);
	char *path = NULL;
	uint8_t head[4];
	dsv_errbuf oeb;
	int err = 0;

	r->file = NULL;
	if (!name || !*name || strchr(name, '/') || !strcmp(name, ".."))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, idx, NULL,
				   "chunks[%zu].filename is missing or not a file name", c);
	if (asprintf(&path, "%s/%s", dir, name) < 0 || !(r->file = dsv_source_alloc(path, NULL))) {
		free(path);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	if (dsv_source_open_file(r->file, &oeb))
		err = dsv_errf_at(eb, DSV_ERR_NOTFOUND, path, NULL,
				  "chunks[%zu] of %s: cannot open it (%s)", c, idx, oeb.reason);
	else if (dsv_source_pread(r->file, head, 4, 0))
		err = dsv_errf_at(eb, DSV_ERR_TRUNCATED, path, NULL, "shorter than its item count");
	uint64_t n = err ? 0 : dsv_load_le32(head), size = r->file->file_size;
	uint8_t *off = NULL;
	if (!err && (n > LIT_MAX_ITEMS || 4 * (n + 2) > size))
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, NULL,
				  "item count %llu does not fit its %llu bytes",
				  (unsigned long long)n, (unsigned long long)size);
	if (!err && !(off = malloc(4 * (n + 1))))
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (!err && dsv_source_pread(r->file, off, 4 * (n + 1), 4))
		err = dsv_errf_at(eb, DSV_ERR_TRUNCATED, path, NULL, "shorter than its offsets");
	for (uint64_t i = 0; !err && i <= n; i++) {
		uint64_t v = dsv_load_le32(off + 4 * i);
		uint64_t prev = i ? dsv_load_le32(off + 4 * (i - 1)) : 4 * (n + 2);
		if ((i == 0 && v != prev) || v < prev || v > size || (v - prev) % es)
			err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, NULL,
					  "offsets[%llu] is %llu (they rise from %llu, in whole "
					  "%s tokens, within its %llu bytes)",
					  (unsigned long long)i, (unsigned long long)v,
					  (unsigned long long)(4 * (n + 2)), dsv_dtype_name(dtype),
					  (unsigned long long)size);
	}
	if (!err) {
		r->off = 4 * (n + 2);
		r->count = (dsv_load_le32(off + 4 * n) - r->off) / es;
		if (json_is_integer(dim) && (uint64_t)json_integer_value(dim) != r->count)
			err = dsv_errf_at(eb, DSV_ERR_FORMAT, idx, NULL,
					  "chunks[%zu].dim is %lld but %s holds %llu tokens", c,
					  (long long)json_integer_value(dim), name,
					  (unsigned long long)r->count);
	}
	free(off);
	free(path);
	return err;
}

static void close_runs(dsv_run *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		dsv_source_close(r[i].file);
	free(r);
}

static int lit_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	char *idx = index_path(file), why[96];
	json_error_t jerr;
	json_t *j = NULL;
	dsv_dtype dtype = DSV_DTYPE_INVALID;
	dsv_run *runs = NULL;
	size_t n = 0, k = 0;
	dsv_source *s = NULL;
	int err = 0;
	(void)dataset;

	*out = NULL;
	if (!idx)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (!(j = json_load_file(idx, 0, &jerr)))
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, idx, NULL, "not JSON: %s (line %d)",
				  jerr.text, jerr.line);
	const json_t *chunks = json_object_get(j, "chunks");
	if (!err && !json_is_array(chunks))
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, idx, NULL, "no chunks list");
	if (!err)
		err = read_config(idx, json_object_get(j, "config"), &dtype, eb);
	n = err ? 0 : json_array_size(chunks);
	if (!err && !(runs = calloc(n ? n : 1, sizeof(*runs))))
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	for (; !err && k < n; k++)
		err = read_chunk(file, idx, k, json_array_get(chunks, k), dtype, &runs[k], eb);
	if (err && runs && k < n)
		k++; /* the chunk that failed may hold its file */
	if (!err && !(s = dsv_source_alloc(idx, NULL)))
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (!err && !(err = dsv_source_open_file(s, eb))) {
		s->info.dtype = dtype;
		err = dsv_source_set_runs(s, runs, n, 1); /* takes runs */
		runs = NULL;
		if (err)
			err = dsv_errf_at(eb, err, idx, NULL, "too many tokens");
	}
	close_runs(runs, k);
	json_decref(j);
	free(idx);
	if (err) {
		dsv_source_close(s);
		return err;
	}
	snprintf(why, sizeof(why), "LitData TokensLoader, %zu chunk%s", n, n == 1 ? "" : "s");
	dsv_tokens_mark(s, why);
	if (!dsv_dtype_is_int(dtype))
		s->info.tokens = 0;
	*out = s;
	return 0;
}

const dsv_format dsv_format_litdata = {
	.name = "litdata",
	.noun = "a LitData directory (index.json)",
	.traits = DSV_FMT_DIR,
	.by_dir = lit_by_dir,
	.open = lit_open,
};
