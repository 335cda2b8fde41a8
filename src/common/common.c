/* Error strings, dtype tables, size parsing and the error buffer. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/str.h"
#include "dsview/dsview.h"

static const char *const err_names[DSV_ERR__COUNT] = {
	[0] = "success",
	[-DSV_ERR_NOMEM] = "out of memory",
	[-DSV_ERR_IO] = "I/O error",
	[-DSV_ERR_FORMAT] = "malformed input",
	[-DSV_ERR_UNSUPPORTED] = "unsupported",
	[-DSV_ERR_CORRUPT] = "corrupt chunk",
	[-DSV_ERR_CHECKSUM] = "checksum mismatch",
	[-DSV_ERR_TRUNCATED] = "data past end of file",
	[-DSV_ERR_INVALID] = "invalid argument",
	[-DSV_ERR_NOTFOUND] = "not found",
	[-DSV_ERR_OVERFLOW] = "size overflow",
	[-DSV_ERR_INTERNAL] = "internal error",
	[-DSV_ERR_INTERRUPTED] = "interrupted",
};

const char *dsv_strerror(int err)
{
	if (err > 0 || -err >= DSV_ERR__COUNT)
		return "unknown error";
	return err_names[-err];
}

static const struct {
	const char *name;
	const char *descr;
	size_t size;
} dtypes[DSV_DTYPE__COUNT] = {
	[DSV_U8] = { "uint8", "|u1", 1 },    [DSV_I8] = { "int8", "|i1", 1 },
	[DSV_U16] = { "uint16", "<u2", 2 },  [DSV_I16] = { "int16", "<i2", 2 },
	[DSV_U32] = { "uint32", "<u4", 4 },  [DSV_I32] = { "int32", "<i4", 4 },
	[DSV_U64] = { "uint64", "<u8", 8 },  [DSV_I64] = { "int64", "<i8", 8 },
	[DSV_F16] = { "float16", "<f2", 2 }, [DSV_F32] = { "float32", "<f4", 4 },
	[DSV_F64] = { "float64", "<f8", 8 }, [DSV_BF16] = { "bfloat16", "<u2", 2 },
};

size_t dsv_dtype_size(dsv_dtype t)
{
	return (unsigned)t < DSV_DTYPE__COUNT ? dtypes[t].size : 0;
}

const char *dsv_dtype_name(dsv_dtype t)
{
	return (unsigned)t < DSV_DTYPE__COUNT ? dtypes[t].name : "invalid";
}

const char *dsv_dtype_npy_descr(dsv_dtype t)
{
	return (unsigned)t < DSV_DTYPE__COUNT ? dtypes[t].descr : "";
}

int dsv_dtype_is_output(dsv_dtype t)
{
	return t == DSV_F32 || t == DSV_BF16 || t == DSV_F16 || dsv_dtype_is_int(t);
}

int dsv_dtype_is_int(dsv_dtype t)
{
	return (unsigned)t <= DSV_I64; /* the enum lists the integers first */
}

int dsv_dtype_is_float(dsv_dtype t)
{
	return t == DSV_F16 || t == DSV_F32 || t == DSV_F64 || t == DSV_BF16;
}

dsv_dtype dsv_dtype_parse(const char *s)
{
	static const struct {
		const char *alias;
		dsv_dtype t;
	} aliases[] = {
		{ "u1", DSV_U8 },     { "i1", DSV_I8 },      { "u2", DSV_U16 },
		{ "i2", DSV_I16 },    { "u4", DSV_U32 },     { "i4", DSV_I32 },
		{ "u8", DSV_U64 },    { "i8", DSV_I64 },     { "f2", DSV_F16 },
		{ "f4", DSV_F32 },    { "f8", DSV_F64 },     { "half", DSV_F16 },
		{ "float", DSV_F32 }, { "double", DSV_F64 }, { "bf16", DSV_BF16 },
		{ "f32", DSV_F32 },   { "f16", DSV_F16 },
	};
	if (!s)
		return DSV_DTYPE_INVALID;
	if (*s == '<' || *s == '|' || *s == '=')
		s++;
	for (int t = 0; t < DSV_DTYPE__COUNT; t++)
		if (!strcmp(s, dtypes[t].name))
			return (dsv_dtype)t;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(s, aliases[i].alias))
			return aliases[i].t;
	return DSV_DTYPE_INVALID;
}

/* "a:b: c", or "a: c" when b is empty, cut to cap (a message, so a cut
 * one is still worth showing). */
static void compose(char *dst, size_t cap, const char *a, const char *b, const char *c)
{
	size_t n = 0;
	const char *parts[5] = { a, b[0] ? ":" : "", b, ": ", c };
	for (int i = 0; i < 5; i++)
		for (const char *p = parts[i]; *p && n + 1 < cap; p++)
			dst[n++] = *p;
	dst[n] = '\0';
}

static void errbuf_reset(dsv_errbuf *eb, int err)
{
	eb->code = err;
	eb->file[0] = eb->where[0] = eb->key[0] = '\0';
	eb->line = 0;
}

void dsv_errbuf_clear(dsv_errbuf *eb)
{
	if (eb) {
		errbuf_reset(eb, 0);
		eb->reason[0] = eb->msg[0] = '\0';
	}
}

int dsv_errf(dsv_errbuf *eb, int err, const char *fmt, ...)
{
	if (eb) {
		va_list ap;
		errbuf_reset(eb, err);
		va_start(ap, fmt);
		vsnprintf(eb->reason, sizeof(eb->reason), fmt, ap);
		va_end(ap);
		snprintf(eb->msg, sizeof(eb->msg), "%s", eb->reason);
	}
	return err;
}

int dsv_errf_key(dsv_errbuf *eb, int err, const char *key, const char *fmt, ...)
{
	if (eb) {
		va_list ap;
		errbuf_reset(eb, err);
		snprintf(eb->key, sizeof(eb->key), "%s", key);
		va_start(ap, fmt);
		vsnprintf(eb->reason, sizeof(eb->reason), fmt, ap);
		va_end(ap);
		snprintf(eb->msg, sizeof(eb->msg), "%s", eb->reason);
	}
	return err;
}

int dsv_errf_at(dsv_errbuf *eb, int err, const char *file, const char *where, const char *fmt, ...)
{
	if (eb) {
		va_list ap;
		errbuf_reset(eb, err);
		/* a URL without its query: no signature in an error line */
		snprintf(eb->file, sizeof(eb->file), "%.*s",
			 file ? (int)dsv_url_shown_len(file) : 0, file ? file : "");
		snprintf(eb->where, sizeof(eb->where), "%s", where ? where : "");
		va_start(ap, fmt);
		vsnprintf(eb->reason, sizeof(eb->reason), fmt, ap);
		va_end(ap);
		compose(eb->msg, sizeof(eb->msg), eb->file, eb->where, eb->reason);
	}
	return err;
}

void dsv_errbuf_at_line(dsv_errbuf *eb, const char *manifest, int line)
{
	char inner[sizeof(eb->msg)];
	if (!eb)
		return;
	char where[16];
	memcpy(inner, eb->msg, sizeof(inner));
	snprintf(eb->file, sizeof(eb->file), "%s", manifest);
	snprintf(where, sizeof(where), "%d", line);
	eb->line = line;
	compose(eb->msg, sizeof(eb->msg), manifest, where, inner);
}

int dsv_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return DSV_ERR_INVALID;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return DSV_ERR_INVALID;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	default: return DSV_ERR_INVALID;
	}
	if (*end) {
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
		if (*end)
			return DSV_ERR_INVALID;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return DSV_ERR_OVERFLOW;
	*out = (uint64_t)v << shift;
	return 0;
}
