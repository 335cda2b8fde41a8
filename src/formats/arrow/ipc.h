/*
 * Arrow IPC files, stream and file forms, as far as dsview serves them
 * (ipc.c): the schema's fields and, for one column, where each record
 * batch keeps its nodes and buffers. The metadata are FlatBuffers read by
 * fb.c; nothing of the Arrow C++ library is used (Debian ships none).
 */
#ifndef DSV_FORMATS_ARROW_IPC_H
#define DSV_FORMATS_ARROW_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"

/* Reads n bytes at off; 0 or a dsv_err. */
typedef int (*dsv_arrow_read)(void *arg, void *buf, size_t n, uint64_t off);

/* Arrow's Type union, the members dsview names. */
enum {
	ARROW_NULL = 1,
	ARROW_INT = 2,
	ARROW_FLOAT = 3,
	ARROW_UTF8 = 5,
	ARROW_LIST = 12,
	ARROW_STRUCT = 13,
	ARROW_UNION = 14,
	ARROW_FIXED_LIST = 16,
	ARROW_LARGE_LIST = 21,
};

/* A top-level column: its name and what it holds. */
typedef struct dsv_arrow_col {
	char name[128];
	int type;          /* the Type union's member */
	dsv_dtype dtype;   /* primitive or the list's values: INVALID when neither */
	int64_t list_size; /* FIXED_LIST: values per row */
	int dict;          /* dictionary-encoded */
	size_t node, buf;  /* its first FieldNode and buffer in a record batch */
	int counted;       /* node and buf are known (no union or view before it) */
	char why[96];      /* why it is not served, or "" */
} dsv_arrow_col;

/* One record batch, for the chosen column: its nodes (the column's, and
 * for a list its values') and its buffers, offsets in the file. */
typedef struct dsv_arrow_batch {
	int64_t length;
	int codec; /* -1: none; 0: LZ4_FRAME; 1: ZSTD */
	int64_t len[2], nulls[2];
	uint64_t off[4], size[4]; /* file offset and stored bytes of each buffer */
} dsv_arrow_batch;

typedef struct dsv_arrow_file {
	int file_form; /* "ARROW1" with a footer, else a stream */
	dsv_arrow_col *cols;
	size_t ncols;
	dsv_arrow_batch *batches; /* the chosen column's, in order */
	size_t nbatches;
} dsv_arrow_file;

/* Reads the schema of the Arrow IPC file of size bytes (both forms), and
 * where column (NULL: none) lies in every record batch. @return 0, or a
 * dsv_err with why naming what is wrong (the message, the field).
 * Free with dsv_arrow_free, also after a failure. */
int dsv_arrow_open(dsv_arrow_read rd, void *arg, uint64_t size, const char *column,
		   dsv_arrow_file *out, char *why, size_t cap);
void dsv_arrow_free(dsv_arrow_file *f);
/* The buffers and nodes the column's type has (for its batches):
 * nbufs of them, nnodes; 0, or -1 for a type dsview does not serve. */
int dsv_arrow_col_layout(const dsv_arrow_col *c, int *nbufs, int *nnodes);

#endif
