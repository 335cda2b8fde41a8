/*
 * The keys of a manifest's sections (docs/manifest.md): each value parsed and
 * checked where it is written, so an error names its line; what needs the
 * sources (shapes, windows, arrays) is checked once they are open
 * (dsv_view_finish).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/defaults.h"
#include "common/str.h"
#include "manifest/manifest_i.h"
#include "net/net.h"

/* Parses whitespace- or comma-separated doubles; @return count or -1. */
static int parse_doubles(const char *s, double *out, int max)
{
	int n = 0;
	char *end;
	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == ',')
			s++;
		if (!*s)
			return n;
		if (n >= max)
			return -1;
		errno = 0;
		out[n] = strtod(s, &end);
		if (end == s || errno == ERANGE || !isfinite(out[n]))
			return -1;
		n++;
		s = end;
	}
}

static int parse_int(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	if (end == s || *end || errno)
		return -1;
	*out = v;
	return 0;
}

int dsv_manifest_set(dsv_manifest *m, const char *dir, const char *name, const char *value,
		     int from, dsv_errbuf *eb)
{
	long long n;
	if (!strcmp(name, "cache_size")) {
		if (dsv_parse_size(value, &m->cache_size))
			return dsv_errf(eb, DSV_ERR_FORMAT,
					"cache_size '%s' is not a size (e.g. 2G, 512M, 0)", value);
		m->has_cache_size = 1;
	} else if (!strcmp(name, "threads")) {
		if (parse_int(value, &n) || n < 1 || n > DSV_MAX_THREADS)
			return dsv_errf(
				eb, DSV_ERR_FORMAT,
				"threads '%s' must be an integer from 1 to " DSV_MAX_THREADS_TEXT,
				value);
		m->threads = (int)n;
		m->has_threads = 1;
	} else if (!strcmp(name, "gpu")) {
		int dev;
		if (strlen(value) >= sizeof(m->gpu) || dsv_parse_gpu(value, &dev))
			return dsv_errf(eb, DSV_ERR_FORMAT,
					"gpu '%s' must be auto, off or a device number", value);
		strcpy(m->gpu, value);
		m->has_gpu = 1;
	} else if (!strcmp(name, "gpu_cache")) {
		if (dsv_parse_size(value, &m->gpu_cache))
			return dsv_errf(eb, DSV_ERR_FORMAT,
					"gpu_cache '%s' is not a size (e.g. 16G, 0)", value);
		m->has_gpu_cache = 1;
	} else if (!strcmp(name, "disk_cache")) {
		if (!*value)
			return dsv_errf(eb, DSV_ERR_FORMAT, "disk_cache must name a directory");
		free(m->disk_cache);
		if (!(m->disk_cache = dsv_mf_resolve(dir, value)))
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	} else if (!strcmp(name, "index_cache")) {
		if (!*value)
			return dsv_errf(eb, DSV_ERR_FORMAT, "index_cache must name a directory");
		free(m->index_cache);
		if (!(m->index_cache = dsv_mf_resolve(dir, value)))
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	} else if (!strcmp(name, "disk_cache_size")) {
		if (dsv_parse_size(value, &m->disk_cache_size) || !m->disk_cache_size)
			return dsv_errf(eb, DSV_ERR_FORMAT,
					"disk_cache_size '%s' is not a size above 0 (e.g. 100G)",
					value);
		m->has_disk_cache_size = 1;
	} else if (strstr(name, "secret") || strstr(name, "access_key") || strstr(name, "token")) {
		return dsv_errf(eb, DSV_ERR_FORMAT,
				"'%s': credentials are never read from a manifest or an option; "
				"name a profile of ~/.aws/credentials (s3_profile) or set "
				"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
				name);
	} else if (!strncmp(name, "s3_", 3)) {
		dsv_errbuf neb;
		if (dsv_net_setting(name + 3, value, from, &neb))
			return dsv_errf(eb, neb.code ? neb.code : DSV_ERR_FORMAT, "%s", neb.reason);
	} else {
		return dsv_errf(eb, DSV_ERR_NOTFOUND, "unknown key '%s'", name);
	}
	return 0;
}

int dsv_mf_dsview_key(parse_ctx *c, const char *name, const char *value)
{
	dsv_errbuf eb;
	if (dsv_manifest_set(c->m, c->dir, name, value, DSV_NET_FROM_MANIFEST, &eb)) {
		if (eb.code == DSV_ERR_NOMEM)
			return dsv_mf_fail(c, c->line, "out of memory");
		if (eb.code == DSV_ERR_NOTFOUND)
			return dsv_mf_fail(
				c, c->line,
				"unknown key '%s' in [dsview] (expected " DSV_MANIFEST_KEYS ")",
				name);
		return dsv_mf_fail(c, c->line, "%s", eb.reason);
	}
	return 1;
}

/* rows = a:b or a:b:step, each part an integer or empty (Python's
 * slice); an omitted bound is INT64_MIN. @return 0, or -1. */
static int parse_slice(const char *s, int64_t out[3])
{
	int k = 0;
	out[0] = out[1] = INT64_MIN;
	out[2] = 1;
	for (;;) {
		char *end;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s != ':' && *s) {
			errno = 0;
			long long x = strtoll(s, &end, 10);
			if (end == s || errno || x == INT64_MIN)
				return -1;
			out[k] = x;
			s = end;
			while (*s == ' ' || *s == '\t')
				s++;
		}
		if (!*s)
			break;
		if (*s != ':' || ++k > 2)
			return -1;
		s++;
	}
	return k >= 1 && out[2] != 0 ? 0 : -1;
}

/* A value naming a file ("@path"): the path, copied into *out. */
static int take_file(parse_ctx *c, const char *name, const char *value, char **out)
{
	const char *p = value + 1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return dsv_mf_fail(c, c->line, "%s '@' needs a file name", name);
	free(*out);
	if (!(*out = strdup(p)))
		return dsv_mf_fail(c, c->line, "out of memory");
	return 1;
}

/* A document's tokens a row of rows = documents, at most. */
#define DSV_SEQ_LEN_MAX (1 << 24)

/* window, stride, window_axis, layout, per_source, rows, seq_len,
 * pad_token: the keys of the views. @return 1 handled, 0 failed, -1 not one of them. */
static int handle_shape_key(parse_ctx *c, pending_view *pv, const char *name, const char *value)
{
	dsv_view *v = pv->v;
	long long n;
	if (!strcmp(name, "rows")) {
		int64_t sl[3];
		pv->rows_line = c->line;
		if (value[0] == '@') {
			v->rows_kind = DSV_ROWS_INDEX;
			return take_file(c, name, value, &pv->rows_file);
		}
		if (!strcmp(value, "documents")) {
			pv->docs_line = c->line; /* a Megatron index's: seq_len, pad_token */
			return 1;
		}
		if (parse_slice(value, sl))
			return dsv_mf_fail(
				c, c->line,
				"rows '%s' must be a:b, a:b:step (Python slice, step not "
				"0) or @index.npy",
				value);
		v->rows_kind = DSV_ROWS_SLICE;
		v->decl->rows_start = sl[0];
		v->decl->rows_stop = sl[1];
		v->decl->rows_step = sl[2];
	} else if (!strcmp(name, "seq_len")) {
		if (parse_int(value, &n) || n < 1 || n > DSV_SEQ_LEN_MAX)
			return dsv_mf_fail(c, c->line,
					   "seq_len '%s' must be an integer from 1 to %d", value,
					   DSV_SEQ_LEN_MAX);
		pv->docs.seq_len = (uint64_t)n;
		pv->seq_len_line = c->line;
	} else if (!strcmp(name, "pad_token")) {
		if (parse_int(value, &n))
			return dsv_mf_fail(c, c->line, "pad_token '%s' must be an integer", value);
		pv->docs.pad = n;
		pv->pad_line = c->line;
	} else if (!strcmp(name, "window") || !strcmp(name, "stride")) {
		int w = name[0] == 'w';
		if (parse_int(value, &n) || n < 1)
			return dsv_mf_fail(c, c->line, "%s '%s' must be a positive integer", name,
					   value);
		*(w ? &v->win : &v->stride) = (uint64_t)n;
		*(w ? &pv->window_line : &pv->stride_line) = c->line;
		v->has_window |= w;
	} else if (!strcmp(name, "window_axis")) {
		if (parse_int(value, &n) || n < -DSV_MAX_DIMS || n >= DSV_MAX_DIMS)
			return dsv_mf_fail(c, c->line, "window_axis '%s' is not an axis", value);
		v->win_axis = (int)n;
		pv->waxis_line = c->line;
	} else if (!strcmp(name, "layout")) {
		if (!strcasecmp(value, "CHW"))
			v->layout_chw = 1;
		else if (!strcasecmp(value, "HWC") || !strcasecmp(value, "none"))
			v->layout_chw = 0;
		else
			return dsv_mf_fail(c, c->line,
					   "layout '%s' must be CHW (or HWC, as stored)", value);
		pv->layout_line = c->line;
	} else if (!strcmp(name, "per_source")) {
		if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1"))
			v->decl->per_source = 1;
		else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") ||
			 !strcmp(value, "0"))
			v->decl->per_source = 0;
		else
			return dsv_mf_fail(c, c->line, "per_source '%s' must be true or false",
					   value);
		pv->per_source_line = c->line;
	} else {
		return -1;
	}
	return 1;
}

int dsv_mf_view_key(parse_ctx *c, pending_view *pv, const char *name, const char *value)
{
	int shape_key = handle_shape_key(c, pv, name, value);
	if (shape_key >= 0)
		return shape_key;

	dsv_view *v = pv->v;
	double d[DSV_MAX_DIMS + 2];
	long long n;
	if (!strcmp(name, "source")) {
		if (!*value)
			return dsv_mf_fail(c, c->line, "empty source");
		char **s = realloc(pv->specs, (pv->nspecs + 1) * sizeof(*s));
		int *l = s ? realloc(pv->spec_lines, (pv->nspecs + 1) * sizeof(*l)) : NULL;
		if (s)
			pv->specs = s;
		if (l)
			pv->spec_lines = l;
		if (!s || !l || !(pv->specs[pv->nspecs] = strdup(value)))
			return dsv_mf_fail(c, c->line, "out of memory");
		pv->spec_lines[pv->nspecs++] = c->line;
	} else if (!strcmp(name, "dtype")) {
		v->dtype = dsv_dtype_parse(value);
		if (!dsv_dtype_is_output(v->dtype))
			return dsv_mf_fail(c, c->line,
					   "dtype '%s' must be float32, bfloat16, float16 or an "
					   "integer type (int8 ... int64, uint8 ... uint64)",
					   value);
		pv->dtype_line = c->line;
		v->decl->dtype_given = 1;
	} else if (!strcmp(name, "scale") || !strcmp(name, "offset")) {
		if (parse_doubles(value, d, 1) != 1)
			return dsv_mf_fail(c, c->line, "%s '%s' is not a finite number", name,
					   value);
		*(name[0] == 's' ? &v->decl->scale : &v->decl->offset) = d[0];
	} else if ((!strcmp(name, "mean") || !strcmp(name, "std")) && value[0] == '@') {
		int is_mean = name[0] == 'm';
		*(is_mean ? &pv->mean_line : &pv->std_line) = c->line;
		return take_file(c, name, value, is_mean ? &pv->mean_file : &pv->std_file);
	} else if (!strcmp(name, "mean") || !strcmp(name, "std")) {
		int is_mean = name[0] == 'm';
		double *vals = malloc(sizeof(double) * 65536);
		int k = vals ? parse_doubles(value, vals, 65536) : -1;
		if (k <= 0) {
			free(vals);
			return dsv_mf_fail(c, c->line, "%s '%s' must be a list of finite numbers",
					   name, value);
		}
		if (!is_mean) {
			for (int i = 0; i < k; i++)
				if (vals[i] == 0) {
					free(vals);
					return dsv_mf_fail(c, c->line, "std contains 0 (value %d)",
							   i + 1);
				}
		}
		free(is_mean ? v->decl->mean : v->decl->std);
		*(is_mean ? &v->decl->mean : &v->decl->std) = vals;
		*(is_mean ? &pv->nmean : &pv->nstd) = k;
		*(is_mean ? &pv->mean_line : &pv->std_line) = c->line;
	} else if (!strcmp(name, "channel_axis")) {
		if (parse_int(value, &n) || n < -DSV_MAX_DIMS || n >= DSV_MAX_DIMS)
			return dsv_mf_fail(c, c->line, "channel_axis '%s' is not an axis", value);
		v->decl->channel_axis = (int)n;
		v->decl->has_channel_axis = 1;
		pv->axis_line = c->line;
	} else if (!strcmp(name, "clip")) {
		if (parse_doubles(value, d, 2) != 2 || d[0] > d[1])
			return dsv_mf_fail(
				c, c->line,
				"clip '%s' must be two numbers LOW HIGH with LOW <= HIGH", value);
		v->decl->has_clip = 1;
		pv->clip_line = c->line;
		v->decl->clip_lo = d[0];
		v->decl->clip_hi = d[1];
	} else if (!strcmp(name, "source_dtype")) {
		if (dsv_raw_dtype_parse(value, &pv->raw))
			return dsv_mf_fail(c, c->line, "source_dtype '%s' " DSV_RAW_DTYPE_RULE,
					   value);
		pv->has_raw_dtype = 1;
		pv->raw_dtype_line = c->line;
	} else if (!strcmp(name, "source_shape")) {
		if (dsv_parse_shape(value, &pv->raw.ndim, pv->raw.shape))
			return dsv_mf_fail(c, c->line, "source_shape '%s' " DSV_SHAPE_RULE, value);
		pv->raw_shape_line = c->line;
	} else if (!strcmp(name, "source_offset")) {
		if (dsv_parse_offset(value, &pv->raw.offset))
			return dsv_mf_fail(c, c->line, "source_offset '%s' " DSV_OFFSET_RULE,
					   value);
		pv->raw_offset_line = c->line;
	} else {
		return dsv_mf_fail(c, c->line,
				   "unknown key '%s' (expected source, dtype, scale, offset, mean, "
				   "std, channel_axis, clip, source_dtype, source_shape, "
				   "source_offset, rows, seq_len, pad_token, "
				   "window, stride, "
				   "window_axis, layout, per_source)",
				   name);
	}
	return 1;
}
