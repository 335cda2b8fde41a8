/*
 * llm.c's token files (dev/data/data_common.py write_datafile): a header
 * of 256 little-endian int32 (magic, version, token count, the rest 0),
 * then the tokens: magic 20240520 version 1, uint16 (GPT-2); magic
 * 20240801 version 7, uint32 (Llama 3). Its eval files (magic 20240522)
 * are examples, not a token stream, and are refused. The name, .bin,
 * says nothing (nanoGPT's headerless .bin files share it): the magic
 * does, where the caller looks at it (a manifest's source, a file mount,
 * info, verify, pack).
 */
#include <stdio.h>

#include "common/bytes.h"
#include "formats/tokens/tokens.h"
#include "source/source_i.h"

#define LLMC_HEADER_INTS 256
#define LLMC_GPT2 20240520u
#define LLMC_LLAMA3 20240801u
#define LLMC_EVAL 20240522u

static int llmc_by_magic(int fd)
{
	uint8_t h[4];
	if (dsv_pread_fd(fd, h, sizeof(h), 0))
		return 0;
	uint32_t m = dsv_load_le32(h);
	return m == LLMC_GPT2 || m == LLMC_LLAMA3 || m == LLMC_EVAL;
}

static int llmc_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	uint8_t h[LLMC_HEADER_INTS * 4];
	uint64_t size;
	(void)dataset;

	*out = NULL;
	int err = dsv_tokens_read_head(file, h, sizeof(h), "llm.c's 1024-byte header", &size, eb);
	if (err)
		return err;
	uint32_t magic = dsv_load_le32(h), version = dsv_load_le32(h + 4);
	int32_t count = (int32_t)dsv_load_le32(h + 8);
	dsv_dtype dtype = magic == LLMC_GPT2 ? DSV_U16 : DSV_U32;
	uint32_t want = magic == LLMC_GPT2 ? 1 : 7;
	char why[64];

	if (magic == LLMC_EVAL)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, file, NULL,
				   "an llm.c eval file (magic %u): multiple-choice examples, not a "
				   "token stream",
				   magic);
	if (magic != LLMC_GPT2 && magic != LLMC_LLAMA3)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, file, NULL,
				   "header magic %u is not llm.c's (%u for GPT-2, %u for Llama 3)",
				   magic, LLMC_GPT2, LLMC_LLAMA3);
	if (version != want)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, file, NULL,
				   "header version %u with magic %u (llm.c writes version %u)",
				   version, magic, want);
	if (count < 0)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, file, NULL,
				   "header token count %d is negative", count);
	if (size != sizeof(h) + (uint64_t)count * dsv_dtype_size(dtype))
		return dsv_errf_at(
			eb,
			size < sizeof(h) + (uint64_t)count * dsv_dtype_size(dtype)
				? DSV_ERR_TRUNCATED
				: DSV_ERR_FORMAT,
			file, NULL,
			"file is %llu bytes but its header's token count %d takes %llu "
			"(1024 + %d x %s)",
			(unsigned long long)size, count,
			(unsigned long long)(sizeof(h) + (uint64_t)count * dsv_dtype_size(dtype)),
			count, dsv_dtype_name(dtype));
	snprintf(why, sizeof(why), "llm.c %s tokens, version %u",
		 magic == LLMC_GPT2 ? "GPT-2" : "Llama 3", version);
	return dsv_tokens_open_run(file, dtype, sizeof(h), (uint64_t)count, why, out, eb);
}

const dsv_format dsv_format_llmc = {
	.name = "llmc",
	.noun = "an llm.c .bin",
	.by_magic = llmc_by_magic,
	.open = llmc_open,
	.save = dsv_tokens_index_save,
	.load = dsv_llmc_index_load,
};
