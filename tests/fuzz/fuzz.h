/*
 * Shared helpers of the fuzz targets. Each target defines
 * LLVMFuzzerTestOneInput; it is linked either with libFuzzer (`make fuzz`,
 * clang, ASan + UBSan) or with replay.c (`make test`, gcc), which runs it on
 * every file of the committed corpus. Entry points that take a path get the
 * bytes through a file in a per-process scratch directory.
 */
#ifndef DSV_FUZZ_H
#define DSV_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scratch directory (created on first use, removed at exit). */
const char *fuzz_dir(void);
/* Writes bytes to fuzz_dir()/name and returns that path (static buffer). */
const char *fuzz_write(const char *name, const void *data, size_t size);
/* Reads every chunk of s (at most 256 of them), as a mount would; errors are
 * expected and ignored. Chunks needing more than 64 MiB are skipped. */
void fuzz_read_chunks(const dsv_source *s);
/* Lists the datasets of the file at path as the named format sees them,
 * opens each and reads its chunks (fuzz_read_chunks). */
void fuzz_open_all(const char *format, const char *path);
/* A little-endian NPY 1.0 file of shape (rows, cols) holding data. */
const char *fuzz_write_npy(const char *name, const char *descr, uint64_t rows, uint64_t cols,
			   const void *data, size_t size);

#endif
