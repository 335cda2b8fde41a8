/*
 * Manifest parsing (INI through inih); zero-configuration manifests are
 * made in zeroconf.c.
 *
 * inih reports no line numbers in Debian's build, so we feed it through our
 * own line reader and count lines there: the handler runs while the line it
 * is given is the last one read. The reader also takes section names (see
 * reader()). Keys are collected first and sources opened after the whole
 * file parsed, because source_dtype/source_shape may follow the source
 * lines they apply to.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/str.h"
#include "view/view_i.h"

typedef struct pending_view {
	dsv_view *v;
	int line;          /* section header line */
	char **specs;      /* source specs as written */
	int *spec_lines;
	size_t nspecs;
	int has_raw_dtype, raw_dtype_line, raw_ndim, raw_shape_line;
	dsv_dtype raw_dtype;
	int64_t raw_shape[DSV_MAX_DIMS];
	int mean_line, std_line, axis_line, dtype_line, clip_line;
	int nmean, nstd;
	char *mean_file, *std_file, *rows_file; /* '@' values, as written */
	int rows_line, window_line, stride_line, waxis_line, layout_line, per_source_line;
} pending_view;

typedef struct parse_ctx {
	const char *path;
	char *dir;
	FILE *f;
	int line;
	int section_line; /* line of the last [section] header */
	char sect[DSV_VIEW_NAME_MAX + 2]; /* its name; a longer one is cut short */
	size_t sect_len;  /* the whole name's length */
	int sect_nul;     /* the name holds a NUL byte */
	char *buf;        /* the physical line (getline) */
	size_t cap;
	int too_long;
	int err;
	dsv_errbuf *eb;
	dsv_manifest *m;
	pending_view *views;
	size_t nviews;
	int cur_section_line;
	int started;
	int in_dsview;
} parse_ctx;

/* Reads one physical line whole and hands inih what it should parse.
 * Section names are taken here: inih keeps them in a 50-byte buffer and
 * cuts longer ones short without a word (a 60-byte [name] mounted under its
 * first 49 bytes), and its line buffer (num) is too short for "[" + a
 * DSV_VIEW_NAME_MAX-byte name + "]". So for a header the name is kept in
 * c->sect, NUL bytes and all, and inih gets "[s]"; handler() uses ours. Any
 * other line goes to inih as it is, and one longer than its buffer is
 * reported rather than let the tail be parsed as a line of its own. */
static char *reader(char *str, int num, void *stream)
{
	parse_ctx *c = stream;
	if (num < 8)
		return NULL;
	ssize_t got = getline(&c->buf, &c->cap, c->f);
	if (got < 0)
		return NULL;
	size_t n = (size_t)got;
	const char *p = c->buf, *end = c->buf + n, *close = NULL;
	c->line++;
	if (c->line == 1 && n >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
		p += 3; /* a UTF-8 BOM, which inih skips too */
	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p < end && *p == '[') {
		c->section_line = c->line;
		close = memchr(p + 1, ']', (size_t)(end - p - 1));
	}
	if (close) {
		size_t len = (size_t)(close - p - 1), keep = len < sizeof(c->sect) ? len : sizeof(c->sect) - 1;
		memcpy(c->sect, p + 1, keep);
		c->sect[keep] = '\0';
		c->sect_len = len;
		c->sect_nul = memchr(p + 1, '\0', len) != NULL;
		memcpy(str, "[s]\n", 5);
		return str;
	}
	if (n > (size_t)num - 1) {
		if (!c->too_long)
			c->too_long = c->line;
		n = (size_t)num - 1;
	}
	memcpy(str, c->buf, n);
	str[n] = '\0';
	return str;
}

__attribute__((format(printf, 3, 4)))
static int fail(parse_ctx *c, int line, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->err) {
		c->err = DSV_ERR_FORMAT;
		dsv_errf(c->eb, DSV_ERR_FORMAT, "%s", msg);
		dsv_errbuf_at_line(c->eb, c->path, line);
	}
	return 0;
}

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

static pending_view *find_view(parse_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nviews; i++)
		if (!strcmp(c->views[i].v->name, name))
			return &c->views[i];
	return NULL;
}

static int handle_dsview_key(parse_ctx *c, const char *name, const char *value)
{
	dsv_manifest *m = c->m;
	long long n;
	if (!strcmp(name, "cache_size")) {
		if (dsv_parse_size(value, &m->cache_size))
			return fail(c, c->line, "cache_size '%s' is not a size (e.g. 2G, 512M, 0)", value);
		m->has_cache_size = 1;
	} else if (!strcmp(name, "threads")) {
		if (parse_int(value, &n) || n < 1 || n > 256)
			return fail(c, c->line, "threads '%s' must be an integer from 1 to 256", value);
		m->threads = (int)n;
		m->has_threads = 1;
	} else if (!strcmp(name, "gpu")) {
		int dev;
		if (strlen(value) >= sizeof(m->gpu) || dsv_parse_gpu(value, &dev))
			return fail(c, c->line, "gpu '%s' must be auto, off or a device number", value);
		strcpy(m->gpu, value);
		m->has_gpu = 1;
	} else {
		return fail(c, c->line, "unknown key '%s' in [dsview] (expected cache_size, threads, gpu)", name);
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
		return fail(c, c->line, "%s '@' needs a file name", name);
	free(*out);
	if (!(*out = strdup(p)))
		return fail(c, c->line, "out of memory");
	return 1;
}

/* window, stride, window_axis, layout, per_source, rows: the keys of
 * SPEC 12. @return 1 handled, 0 failed, -1 not one of them. */
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
		if (parse_slice(value, sl))
			return fail(c, c->line, "rows '%s' must be a:b, a:b:step (Python slice, step not "
				    "0) or @index.npy", value);
		v->rows_kind = DSV_ROWS_SLICE;
		v->rows_start = sl[0];
		v->rows_stop = sl[1];
		v->rows_step = sl[2];
	} else if (!strcmp(name, "window") || !strcmp(name, "stride")) {
		int w = name[0] == 'w';
		if (parse_int(value, &n) || n < 1)
			return fail(c, c->line, "%s '%s' must be a positive integer", name, value);
		*(w ? &v->win : &v->stride) = (uint64_t)n;
		*(w ? &pv->window_line : &pv->stride_line) = c->line;
		v->has_window |= w;
	} else if (!strcmp(name, "window_axis")) {
		if (parse_int(value, &n) || n < -DSV_MAX_DIMS || n >= DSV_MAX_DIMS)
			return fail(c, c->line, "window_axis '%s' is not an axis", value);
		v->win_axis = (int)n;
		pv->waxis_line = c->line;
	} else if (!strcmp(name, "layout")) {
		if (!strcasecmp(value, "CHW"))
			v->layout_chw = 1;
		else if (!strcasecmp(value, "HWC") || !strcasecmp(value, "none"))
			v->layout_chw = 0;
		else
			return fail(c, c->line, "layout '%s' must be CHW (or HWC, as stored)", value);
		pv->layout_line = c->line;
	} else if (!strcmp(name, "per_source")) {
		if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1"))
			v->per_source = 1;
		else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcmp(value, "0"))
			v->per_source = 0;
		else
			return fail(c, c->line, "per_source '%s' must be true or false", value);
		pv->per_source_line = c->line;
	} else {
		return -1;
	}
	return 1;
}

static int handle_view_key(parse_ctx *c, pending_view *pv, const char *name, const char *value)
{
	int shape_key = handle_shape_key(c, pv, name, value);
	if (shape_key >= 0)
		return shape_key;

	dsv_view *v = pv->v;
	double d[DSV_MAX_DIMS + 2];
	long long n;
	if (!strcmp(name, "source")) {
		if (!*value)
			return fail(c, c->line, "empty source");
		if (pv->nspecs >= DSV_VIEW_MAX_SOURCES)
			return fail(c, c->line, "too many sources (at most %d)", DSV_VIEW_MAX_SOURCES);
		char **s = realloc(pv->specs, (pv->nspecs + 1) * sizeof(*s));
		int *l = s ? realloc(pv->spec_lines, (pv->nspecs + 1) * sizeof(*l)) : NULL;
		if (s)
			pv->specs = s;
		if (l)
			pv->spec_lines = l;
		if (!s || !l || !(pv->specs[pv->nspecs] = strdup(value)))
			return fail(c, c->line, "out of memory");
		pv->spec_lines[pv->nspecs++] = c->line;
	} else if (!strcmp(name, "dtype")) {
		v->dtype = dsv_dtype_parse(value);
		if (!dsv_dtype_is_output(v->dtype))
			return fail(c, c->line, "dtype '%s' must be float32, bfloat16, float16 or an "
				    "integer type (int8 ... int64, uint8 ... uint64)", value);
		pv->dtype_line = c->line;
	} else if (!strcmp(name, "scale") || !strcmp(name, "offset")) {
		if (parse_doubles(value, d, 1) != 1)
			return fail(c, c->line, "%s '%s' is not a finite number", name, value);
		*(name[0] == 's' ? &v->scale : &v->offset) = d[0];
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
			return fail(c, c->line, "%s '%s' must be a list of finite numbers", name, value);
		}
		if (!is_mean) {
			for (int i = 0; i < k; i++)
				if (vals[i] == 0) {
					free(vals);
					return fail(c, c->line, "std contains 0 (value %d)", i + 1);
				}
		}
		free(is_mean ? v->mean : v->std);
		*(is_mean ? &v->mean : &v->std) = vals;
		*(is_mean ? &pv->nmean : &pv->nstd) = k;
		*(is_mean ? &pv->mean_line : &pv->std_line) = c->line;
	} else if (!strcmp(name, "channel_axis")) {
		if (parse_int(value, &n) || n < -DSV_MAX_DIMS || n >= DSV_MAX_DIMS)
			return fail(c, c->line, "channel_axis '%s' is not an axis", value);
		v->channel_axis = (int)n;
		v->has_channel_axis = 1;
		pv->axis_line = c->line;
	} else if (!strcmp(name, "clip")) {
		if (parse_doubles(value, d, 2) != 2 || d[0] > d[1])
			return fail(c, c->line, "clip '%s' must be two numbers LOW HIGH with LOW <= HIGH", value);
		v->has_clip = 1;
		pv->clip_line = c->line;
		v->clip_lo = d[0];
		v->clip_hi = d[1];
	} else if (!strcmp(name, "source_dtype")) {
		pv->raw_dtype = dsv_dtype_parse(value);
		if (pv->raw_dtype == DSV_DTYPE_INVALID || pv->raw_dtype == DSV_BF16)
			return fail(c, c->line, "source_dtype '%s' is not a supported source dtype", value);
		pv->has_raw_dtype = 1;
		pv->raw_dtype_line = c->line;
	} else if (!strcmp(name, "source_shape")) {
		const char *p = value;
		int k = 0;
		while (*p) {
			char *end;
			while (*p == ' ' || *p == '\t' || *p == ',')
				p++;
			if (!*p)
				break;
			errno = 0;
			long long x = strtoll(p, &end, 10);
			if (end == p || errno || k >= DSV_MAX_DIMS || (k == 0 ? x < -1 : x <= 0))
				return fail(c, c->line, "source_shape '%s' must be positive integers (the first may be -1)", value);
			pv->raw_shape[k++] = x;
			p = end;
		}
		if (k == 0)
			return fail(c, c->line, "source_shape is empty");
		pv->raw_ndim = k;
		pv->raw_shape_line = c->line;
	} else {
		return fail(c, c->line, "unknown key '%s' (expected source, dtype, scale, offset, mean, "
			    "std, channel_axis, clip, source_dtype, source_shape, rows, window, stride, "
			    "window_axis, layout, per_source)", name);
	}
	return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	parse_ctx *c = user;
	if (c->err)
		return 1;
	if (!c->started || c->section_line != c->cur_section_line) {
		/* a new section starts (the same name twice is a new one too) */
		c->started = 1;
		c->cur_section_line = c->section_line;
		/* inih's section is "" only before the first header; the name
		 * itself is reader()'s c->sect */
		c->in_dsview = *section && !c->sect_nul && !strcmp(c->sect, "dsview");
		if (!c->in_dsview) {
			char show[4 * 64 + 4];
			if (!*section)
				return fail(c, c->line, "key '%s' outside any [view] section", name);
			if (c->sect_len > DSV_VIEW_NAME_MAX || c->sect_nul || !dsv_view_name_ok(c->sect))
				return fail(c, c->section_line, "invalid view name '%s' (%zu bytes; letters, "
					    "digits, _, -, . only; at most %d bytes)",
					    dsv_shown(c->sect, c->sect_len, 64, show), c->sect_len, DSV_VIEW_NAME_MAX);
			if (find_view(c, c->sect))
				return fail(c, c->section_line, "view '%s' is defined twice", c->sect);
			pending_view *nv = realloc(c->views, (c->nviews + 1) * sizeof(*nv));
			if (!nv)
				return fail(c, c->line, "out of memory");
			c->views = nv;
			memset(&nv[c->nviews], 0, sizeof(*nv));
			nv[c->nviews].v = dsv_view_new(c->sect);
			nv[c->nviews].line = c->section_line;
			if (!nv[c->nviews].v)
				return fail(c, c->line, "out of memory");
			c->nviews++;
		}
	}
	if (c->in_dsview)
		return handle_dsview_key(c, name, value);
	return handle_view_key(c, &c->views[c->nviews - 1], name, value);
}

static char *resolve(const char *dir, const char *spec)
{
	char *out;
	if (spec[0] == '/' || !dir)
		return strdup(spec);
	if (asprintf(&out, "%s/%s", dir, spec) < 0)
		return NULL;
	return out;
}

/* mean and std where one is a single number and the other a list: the
 * single one repeated, so both index the channels. @return 0, or -1. */
static int expand_scalar(pending_view *pv)
{
	dsv_view *v = pv->v;
	int n = pv->nmean > pv->nstd ? pv->nmean : pv->nstd;
	double **one = pv->nmean == 1 ? &v->mean : &v->std;
	double *rep = malloc((size_t)n * sizeof(double));
	if (!rep)
		return -1;
	for (int i = 0; i < n; i++)
		rep[i] = (*one)[0];
	free(*one);
	*one = rep;
	pv->nmean = pv->nstd = n;
	return 0;
}

/* The line that set what an error of dsv_view_finish names (eb->key). */
static int line_of_key(const pending_view *pv, const char *key)
{
	static const struct {
		const char *key;
		size_t off;
	} lines[] = {
		{ "mean", offsetof(pending_view, mean_line) },
		{ "std", offsetof(pending_view, std_line) },
		{ "channel_axis", offsetof(pending_view, axis_line) },
		{ "rows", offsetof(pending_view, rows_line) },
		{ "window", offsetof(pending_view, window_line) },
		{ "stride", offsetof(pending_view, stride_line) },
		{ "window_axis", offsetof(pending_view, waxis_line) },
		{ "layout", offsetof(pending_view, layout_line) },
		{ "per_source", offsetof(pending_view, per_source_line) },
		{ "dtype", offsetof(pending_view, dtype_line) },
		{ "clip", offsetof(pending_view, clip_line) },
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int line = *(const int *)((const char *)pv + lines[i].off);
		if (!strcmp(key, lines[i].key) && line)
			return line;
	}
	/* the channel axis by default, a window's axis by default */
	if (!strcmp(key, "channel_axis") && pv->mean_line)
		return pv->mean_line;
	if (!strcmp(key, "window_axis") && pv->window_line)
		return pv->window_line;
	return pv->line;
}

/* The '@' files of a view, resolved against the manifest's directory. */
static int resolve_files(parse_ctx *c, pending_view *pv)
{
	dsv_view *v = pv->v;
	if ((pv->mean_file != NULL) != (pv->std_file != NULL) ||
	    (pv->mean_file && (pv->nmean || pv->nstd)))
		return fail(c, pv->mean_file ? pv->mean_line : pv->std_line,
			    "mean and std must both be @files or both be numbers");
	if ((pv->rows_file && !(v->rows_file = resolve(c->dir, pv->rows_file))) ||
	    (pv->mean_file && !(v->mean_file = resolve(c->dir, pv->mean_file))) ||
	    (pv->std_file && !(v->std_file = resolve(c->dir, pv->std_file))))
		return fail(c, pv->line, "out of memory");
	return 1;
}

static int open_view_sources(parse_ctx *c, pending_view *pv)
{
	dsv_errbuf eb;
	dsv_view *v = pv->v;
	if (pv->nspecs == 0)
		return fail(c, pv->line, "view '%s' has no source", v->name);
	if ((pv->has_raw_dtype != 0) != (pv->raw_ndim != 0))
		return fail(c, pv->has_raw_dtype ? pv->raw_dtype_line : pv->raw_shape_line,
			    "source_dtype and source_shape must be given together");
	if (!v->has_window && (pv->stride_line || pv->waxis_line))
		return fail(c, pv->stride_line ? pv->stride_line : pv->waxis_line,
			    "%s needs window = W", pv->stride_line ? "stride" : "window_axis");
	if (v->has_window && !pv->stride_line)
		v->stride = v->win;
	if (v->has_window && !pv->waxis_line)
		v->win_axis = -1;
	if (!resolve_files(c, pv))
		return 0;
	dsv_raw_spec raw = { pv->raw_dtype, pv->raw_ndim, pv->raw_shape };
	for (size_t i = 0; i < pv->nspecs; i++) {
		char *path = resolve(c->dir, pv->specs[i]);
		int err;
		if (!path)
			return fail(c, pv->spec_lines[i], "out of memory");
		err = dsv_view_open_spec(v, path, pv->has_raw_dtype ? &raw : NULL, &eb);
		free(path);
		if (err)
			return fail(c, pv->spec_lines[i], "%s", eb.msg);
	}
	if ((pv->nmean != 0) != (pv->nstd != 0))
		return fail(c, pv->nmean ? pv->mean_line : pv->std_line, "mean and std must be given together");
	if (pv->nmean != pv->nstd && pv->nmean != 1 && pv->nstd != 1)
		return fail(c, pv->std_line, "std has %d values but mean has %d", pv->nstd, pv->nmean);
	if (pv->nmean != pv->nstd && expand_scalar(pv) != 0)
		return fail(c, pv->line, "out of memory");
	v->nchan = pv->nmean;
	if (dsv_view_finish(v, &eb))
		return fail(c, line_of_key(pv, eb.key), "%s", eb.msg);
	return 1;
}

dsv_manifest *dsv_manifest_new(const char *path)
{
	dsv_manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	strcpy(m->gpu, "auto");
	m->threads = 0;
	if (!m->path) {
		free(m);
		return NULL;
	}
	return m;
}

void dsv_manifest_free(dsv_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nviews; i++)
		dsv_view_free(m->views[i]);
	free(m->views);
	for (size_t i = 0; i < m->nskipped; i++) {
		free(m->skipped[i].path);
		free(m->skipped[i].reason);
		free(m->skipped[i].value);
	}
	free(m->skipped);
	free(m->skipped_json);
	free(m->path);
	free(m);
}

int dsv_manifest_load(const char *path, dsv_manifest **out, dsv_errbuf *eb)
{
	parse_ctx c = { .path = path, .eb = eb };
	int rc;

	*out = NULL;
	c.f = fopen(path, "r");
	if (!c.f)
		return dsv_errf(eb, errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, "%s: %s", path,
				strerror(errno));
	c.m = dsv_manifest_new(path);
	const char *slash = strrchr(path, '/');
	c.dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : NULL;
	if (!c.m || (slash && !c.dir)) {
		fclose(c.f);
		dsv_manifest_free(c.m);
		free(c.dir);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	rc = ini_parse_stream(reader, &c, handler, &c);
	fclose(c.f);
	free(c.buf);
	if (c.too_long && !c.err)
		fail(&c, c.too_long, "line too long (at most %d characters)", INI_MAX_LINE - 2);
	if (rc > 0 && !c.err)
		fail(&c, rc, "syntax error (expected [view], key = value, or a ; comment)");
	if (!c.err && c.nviews == 0)
		fail(&c, c.line ? c.line : 1, "no [view] section");
	for (size_t i = 0; !c.err && i < c.nviews; i++)
		open_view_sources(&c, &c.views[i]);

	if (!c.err) {
		c.m->views = calloc(c.nviews, sizeof(dsv_view *));
		if (!c.m->views)
			fail(&c, 1, "out of memory");
	}
	for (size_t i = 0; i < c.nviews; i++) {
		for (size_t k = 0; k < c.views[i].nspecs; k++)
			free(c.views[i].specs[k]);
		free(c.views[i].specs);
		free(c.views[i].spec_lines);
		free(c.views[i].mean_file);
		free(c.views[i].std_file);
		free(c.views[i].rows_file);
		if (c.err)
			dsv_view_free(c.views[i].v);
		else
			c.m->views[c.m->nviews++] = c.views[i].v;
	}
	free(c.views);
	free(c.dir);
	if (c.err) {
		dsv_manifest_free(c.m);
		return c.err;
	}
	dsv_manifest_share(c.m);
	*out = c.m;
	return 0;
}
