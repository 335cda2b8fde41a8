/*
 * dsview - a read-only FUSE filesystem serving datasets as transformed arrays.
 *
 * Public basics shared by every module: version, the error enum and its
 * messages, element types, and the error buffer that carries a user-facing
 * message (file and reason) up to the CLI.
 *
 * Thread safety: everything here is pure or reads constant tables.
 */
#ifndef DSVIEW_DSVIEW_H
#define DSVIEW_DSVIEW_H

#include <stddef.h>
#include <stdint.h>

#define DSV_VERSION_MAJOR 0
#define DSV_VERSION_MINOR 1
#define DSV_VERSION_PATCH 0
#define DSV_VERSION_STRING "0.1.0"

/* Core functions return 0 or a negative dsv_err; only the FUSE front end
 * maps them to errno. */
typedef enum dsv_err {
	DSV_OK = 0,
	DSV_ERR_NOMEM = -1,        /* allocation failed */
	DSV_ERR_IO = -2,           /* read error from the backing file */
	DSV_ERR_FORMAT = -3,       /* malformed header or manifest */
	DSV_ERR_UNSUPPORTED = -4,  /* valid input dsview does not serve */
	DSV_ERR_CORRUPT = -5,      /* chunk fails to decode or has the wrong size */
	DSV_ERR_CHECKSUM = -6,     /* Fletcher32 mismatch */
	DSV_ERR_TRUNCATED = -7,    /* data lies past the end of its file */
	DSV_ERR_INVALID = -8,      /* bad argument or value */
	DSV_ERR_NOTFOUND = -9,     /* missing file or dataset */
	DSV_ERR_OVERFLOW = -10,    /* sizes overflow or exceed caps */
	DSV_ERR_INTERNAL = -11,    /* a bug or a library failure */
	DSV_ERR_INTERRUPTED = -12, /* stopped on request (a signal), not failed */
	DSV_ERR__COUNT = 13        /* keep dsv_strerror's table in sync */
} dsv_err;

const char *dsv_strerror(int err);

/* Element types. Sources may be any but BF16; outputs are F32, BF16, F16
 * and every integer type (integer outputs need integer sources). */
typedef enum dsv_dtype {
	DSV_U8,
	DSV_I8,
	DSV_U16,
	DSV_I16,
	DSV_U32,
	DSV_I32,
	DSV_U64,
	DSV_I64,
	DSV_F16,
	DSV_F32,
	DSV_F64,
	DSV_BF16,
	DSV_DTYPE__COUNT,
	DSV_DTYPE_INVALID = -1
} dsv_dtype;

size_t dsv_dtype_size(dsv_dtype t);
/* "uint8" ... "int64", "float16" ... "bfloat16" */
const char *dsv_dtype_name(dsv_dtype t);
/* numpy descr for the little-endian layout; bfloat16 is declared "<u2". */
const char *dsv_dtype_npy_descr(dsv_dtype t);
/* Parses a dtype name ("uint8", "float32", "bfloat16", numpy aliases such as
 * "u1", "<i2", "i8", "f4"). @return DSV_DTYPE_INVALID if unknown. */
dsv_dtype dsv_dtype_parse(const char *s);
/* float32, bfloat16, float16 or an integer type: what a view may serve. */
int dsv_dtype_is_output(dsv_dtype t);
/* uint8 ... int64 */
int dsv_dtype_is_int(dsv_dtype t);
/* float16, float32, float64 or bfloat16 */
int dsv_dtype_is_float(dsv_dtype t);

/*
 * Why a call failed, for the user and for callers. Errors are data: the
 * code and the parts (which file, which dataset or key, which manifest
 * line, the reason alone) are fields, and msg is the one line a person
 * reads, composed from them. A caller that needs to know which file, line
 * or key failed reads the field, never the wording. May be NULL wherever a
 * function takes one.
 */
typedef struct dsv_errbuf {
	int code;          /* the dsv_err the call returned (0: nothing set) */
	char file[4096];   /* the file the error is about, or "" (PATH_MAX) */
	char where[4096];  /* inside the file: an HDF5 dataset path, or "" */
	int line;          /* a manifest's line number, or 0 */
	char key[64];      /* the manifest key at fault ("mean", "source"...), or "" */
	char reason[1024]; /* the reason alone, without file, where or line */
	char msg[1280];    /* for people: "file:where: reason" or "file:line: reason" */
} dsv_errbuf;

/* Sets code and reason (printf-style) and clears the other parts; msg is
 * the reason alone. @return err, so callers write `return dsv_errf(eb, e, ...)`. */
int dsv_errf(dsv_errbuf *eb, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* As dsv_errf for an error about file (and, if not NULL or "", the place
 * where inside it): msg is "file:where: reason" or "file: reason". */
int dsv_errf_at(dsv_errbuf *eb, int err, const char *file, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* As dsv_errf, and names the setting at fault (key: "mean", "std",
 * "channel_axis", ...) so a manifest can blame the line that set it. */
int dsv_errf_key(dsv_errbuf *eb, int err, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Marks an error set by a callee as belonging to line of manifest file:
 * file and line are set, msg becomes "manifest:line: <the callee's msg>";
 * code, where, key and reason are kept. */
void dsv_errbuf_at_line(dsv_errbuf *eb, const char *manifest, int line);
/* Empties eb (code 0, every part ""), for a buffer reused across calls
 * whose code says whether the last one set it. eb may be NULL. */
void dsv_errbuf_clear(dsv_errbuf *eb);

/* Parses "1G", "512M", "64k", "0", "1048576" (binary units). @return 0 ok. */
int dsv_parse_size(const char *s, uint64_t *out);

#define DSV_MAX_DIMS 32

#endif
