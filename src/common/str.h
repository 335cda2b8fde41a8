/*
 * Small string and path helpers every room uses: one home each, so that
 * two copies cannot drift apart (three copies of ends_with, one of them
 * case-insensitive, once made `dsview mount a.NPY` fail while the library
 * opened it).
 *
 * Thread safety: all pure; results are owned by the caller.
 */
#ifndef DSV_COMMON_STR_H
#define DSV_COMMON_STR_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"

/* The text of a macro's value: DSV_STR(DSV_MAX_DIMS) is "32". Usage texts
 * and messages build their numbers from the constants with it. */
#define DSV_STR(x) DSV_STR_(x)
#define DSV_STR_(x) #x

/* True when name ends with ext (".npy"), compared without regard to
 * ASCII case: file extensions are matched as users type them. A URL's
 * query is not its name's end (dsv_url_shown_len). */
int dsv_has_ext(const char *name, const char *ext);

/* The length of url's scheme and "://" when it names an object
 * dsview reads over the network (s3://, https://, http://), else 0. */
size_t dsv_url_scheme_len(const char *url);

/* The length of spec as it may be shown: a URL (dsv_url_scheme_len)
 * up to its query or fragment, which may hold a presigned URL's
 * signature, anything else whole. Messages, status and the mount table
 * name a source by this much of it; extensions are matched on it too. */
size_t dsv_url_shown_len(const char *spec);

/* True when name holds a glob(3) pattern character (*, ? or [). */
int dsv_has_glob(const char *name);

/* strcmp, except that runs of digits compare by their value, so that
 * "session2" sorts before "session10" (natural order). */
int dsv_natural_cmp(const char *a, const char *b);
/* Sorts n strings in natural order, in place. */
void dsv_natural_sort(char **names, size_t n);

/* The --gpu / `gpu =` value: "auto" (*device = DSV_GPU_AUTO), "off"
 * (DSV_GPU_OFF) or a device number 0..INT_MAX. @return 0, or
 * DSV_ERR_INVALID for anything else. */
#define DSV_GPU_AUTO (-1)
#define DSV_GPU_OFF (-2)
int dsv_parse_gpu(const char *s, int *device);

/* A shape as --shape and source_shape take it: integers separated by any
 * run of commas, spaces, tabs, 'x' and parentheses ("1000,64,64,3",
 * "1000 64 64 3", "1000x64x64x3", "(1000, 64, 64, 3)", "(5,)"). 1 to
 * DSV_MAX_DIMS of them, each at least 1, except that the first may be 0
 * (no rows) and any one may be -1 (its length from the file size). @return 0, or
 * DSV_ERR_INVALID (then *ndim and shape are unspecified). */
int dsv_parse_shape(const char *s, int *ndim, int64_t shape[DSV_MAX_DIMS]);
/* What dsv_parse_shape accepts, in words, for a message that reads
 * "NAME 'VALUE' " DSV_SHAPE_RULE. */
#define DSV_SHAPE_RULE                                                      \
	"must be positive integers like 1000,64,64,3 (any one may be -1), " \
	"at most " DSV_STR(DSV_MAX_DIMS)

/* A raw file's header bytes as --source-offset and source_offset take
 * them: a whole number of bytes, 0 or more. @return 0, or
 * DSV_ERR_INVALID. */
int dsv_parse_offset(const char *s, uint64_t *out);
#define DSV_OFFSET_RULE "must be a whole number of bytes (0 or more)"
/* What dsv_raw_dtype_parse accepts, for "NAME 'VALUE' " DSV_RAW_DTYPE_RULE. */
#define DSV_RAW_DTYPE_RULE                                                          \
	"is not a source dtype (uint8, int8, uint16, int16, int24, uint32, int32, " \
	"uint64, int64, float16, float32, float64)"

/* The longest name dsv_name_ok accepts, in bytes. */
#define DSV_NAME_MAX 200

/* True if name is a valid name for a view or a packed dataset: 1 to
 * DSV_NAME_MAX bytes of letters, digits, '_', '-', '.', not starting with
 * '.' (hidden names are reserved: /.stats.json). It is used as a file
 * name in the mount and as an HDF5 dataset name, so it can hold no '/'. */
int dsv_name_ok(const char *name);

/*
 * The reversible map from any name (an HDF5 group or dataset name: any
 * bytes but '/' and NUL) to a valid one, for zero-config mounts. A byte is
 * kept as it is when it is a letter, digit, '_', '-' or '.', except that
 * a leading '.' and a '_' followed by 'x' are escaped too; every other byte
 * becomes "_x" and two upper-case hex digits ("my data" -> "my_x20data",
 * ".hidden" -> "_x2Ehidden", "a_xb" -> "a_x5Fxb", "\xc3\xa9" ->
 * "_xC3_xA9"). So a valid name without "_x" maps to itself, and in a
 * mapped name "_x" always starts an escape: the map is one-to-one and
 * dsv_name_unescape undoes it. A mapped name is valid when it is at most
 * DSV_NAME_MAX bytes (and the source name was not empty).
 *
 * dsv_name_escape writes the map of src to dst as snprintf would (at most
 * dst_cap - 1 bytes, NUL-terminated when dst_cap > 0). @return the mapped
 * name's length, whatever dst_cap.
 */
size_t dsv_name_escape(char *dst, size_t dst_cap, const char *src);
/* The name src is the map of, into dst (dst_cap >= strlen(src) + 1 is
 * always enough). @return its length, or DSV_ERR_INVALID when src is not
 * the map of any name (a bad or needless escape), DSV_ERR_OVERFLOW when
 * dst is too small. */
int dsv_name_unescape(char *dst, size_t dst_cap, const char *src);

/* name[0..n) fit for a one-line message: bytes outside printable ASCII
 * (and '\\') become \xNN, so a name cannot bring a newline or a terminal
 * escape into our errors, and past max bytes the rest is "...". out holds
 * 4 * max + 4 bytes. @return out */
const char *dsv_shown(const char *name, size_t n, size_t max, char *out);

/* Decodes a /proc/self/mountinfo field in place: the kernel writes space,
 * tab, newline and backslash in a path as octal \NNN (fs/proc_namespace.c,
 * mangle()), so "/mnt/a b" reads "/mnt/a\040b". */
void dsv_mountinfo_unescape(char *s);

#endif
