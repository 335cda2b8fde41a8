/*
 * MATLAB Level-5 MAT-files (v5, v6; v7's compressed variables named, not
 * read): the walk of tagged elements that the EEGLAB format (eeglab.c)
 * needs to find its variables, for its unit test and fuzz target.
 */
#ifndef DSV_FORMATS_MAT5_H
#define DSV_FORMATS_MAT5_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"

#define DSV_MAT_HEADER 128
#define DSV_MAT_MAX_DIMS 8

/* Element types (mi*) and array classes (mx*) of the format. */
enum {
	DSV_MI_INT8 = 1,
	DSV_MI_UINT8 = 2,
	DSV_MI_INT16 = 3,
	DSV_MI_UINT16 = 4,
	DSV_MI_INT32 = 5,
	DSV_MI_UINT32 = 6,
	DSV_MI_SINGLE = 7,
	DSV_MI_DOUBLE = 9,
	DSV_MI_INT64 = 12,
	DSV_MI_UINT64 = 13,
	DSV_MI_MATRIX = 14,
	DSV_MI_COMPRESSED = 15,
	DSV_MI_UTF8 = 16,
	DSV_MI_UTF16 = 17,
};
enum {
	DSV_MX_CELL = 1,
	DSV_MX_STRUCT = 2,
	DSV_MX_CHAR = 4,
	DSV_MX_SINGLE = 7,
};

/* Where a file's bytes come from: read n bytes at off into buf (0, or a
 * dsv_err), the file being size bytes. */
typedef struct dsv_mat {
	int (*read)(void *arg, void *buf, size_t n, uint64_t off);
	void *arg;
	uint64_t size;
} dsv_mat;

/* One variable, or one field of a struct: a matrix element. */
typedef struct dsv_mat_var {
	char name[64];
	int cls;     /* mx class; 0: an empty element */
	int complex; /* has an imaginary part */
	int ndims;
	uint64_t dims[DSV_MAT_MAX_DIMS];
	uint64_t numel;
	uint64_t body, end; /* its subelements after the name, to end */
	/* a numeric or char array's real part: its storage type (mi*), which
	 * may be smaller than its class, and its bytes */
	int type;
	uint64_t data_off, data_len;
	/* a struct's fields: how many, each name's length, where the names are */
	size_t nfields, field_len;
	uint64_t names_off;
} dsv_mat_var;

/* Bytes of one value of storage type t; 0 for types that are not numbers. */
size_t dsv_mat_type_size(int t);

/* Checks the 128-byte header (text, version 0x0100, little-endian "IM").
 * @return 0, DSV_ERR_FORMAT or DSV_ERR_UNSUPPORTED (big-endian), eb's
 * where naming the part at fault. */
int dsv_mat_check_header(const dsv_mat *m, dsv_errbuf *eb);

/* The top-level variable called name, found by walking the file's
 * elements. @return 0, DSV_ERR_NOTFOUND, DSV_ERR_UNSUPPORTED (the file
 * holds compressed variables, and this one was not found before them),
 * or DSV_ERR_FORMAT (an element that is malformed, eb naming it). */
int dsv_mat_find(const dsv_mat *m, const char *name, dsv_mat_var *v, dsv_errbuf *eb);

/* Field `field` of the first n elements (column-major) of struct st, into
 * out[0 .. n), in one walk. @return 0, DSV_ERR_NOTFOUND (no such field, or
 * fewer elements) or DSV_ERR_FORMAT. */
int dsv_mat_field(const dsv_mat *m, const dsv_mat_var *st, const char *field, dsv_mat_var *out,
		  uint64_t n, dsv_errbuf *eb);

/* The first value of a real numeric array, as float64. @return 0 or
 * DSV_ERR_FORMAT (not one, or empty). */
int dsv_mat_scalar(const dsv_mat *m, const dsv_mat_var *v, double *out, dsv_errbuf *eb);

/* A char array (one row) as ASCII in out (bytes that are not, as '?').
 * @return 0 or DSV_ERR_FORMAT (not a char array, or longer than cap). */
int dsv_mat_string(const dsv_mat *m, const dsv_mat_var *v, char *out, size_t cap, dsv_errbuf *eb);

#endif
