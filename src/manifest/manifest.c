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
#include <sys/stat.h>
#include <ini.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/defaults.h"
#include "common/str.h"
#include "manifest/manifest_i.h"

/* A line longer than inih's buffer (Debian's libinih is built with 200
 * bytes; a presigned URL as a source is longer) that reads "key = value"
 * or "key: value": inih gets the key and an empty value into str, and
 * the value is kept whole in c->long_value for handler(), trimmed as inih
 * trims one (blanks around it, from a ';' after a blank on a comment). A
 * comment line gets inih a bare ';'. @return str, or NULL when the line
 * is neither (then it is reported as too long). */
static char *long_line(parse_ctx *c, const char *p, const char *end, char *str, int num)
{
	if (*p == ';' || *p == '#')
		return memcpy(str, ";\n", 3);
	const char *sep = p + strcspn(p, "=:"), *v;
	if (sep >= end || sep - p + 4 > num)
		return NULL;
	for (v = sep + 1; v < end && isspace((unsigned char)*v); v++)
		;
	const char *e = v;
	while (e < end && !(*e == ';' && e > v && isspace((unsigned char)e[-1])))
		e++;
	while (e > v && isspace((unsigned char)e[-1]))
		e--;
	free(c->long_value);
	if (!(c->long_value = strndup(v, (size_t)(e - v))))
		return NULL;
	c->long_line = c->line;
	memcpy(str, p, (size_t)(sep - p + 1));
	memcpy(str + (sep - p + 1), "\n", 2);
	return str;
}

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
		size_t len = (size_t)(close - p - 1),
		       keep = len < sizeof(c->sect) ? len : sizeof(c->sect) - 1;
		memcpy(c->sect, p + 1, keep);
		c->sect[keep] = '\0';
		c->sect_len = len;
		c->sect_nul = memchr(p + 1, '\0', len) != NULL;
		memcpy(str, "[s]\n", 5);
		return str;
	}
	if (n > (size_t)num - 1 && p < end && long_line(c, p, end, str, num))
		return str;
	if (n > (size_t)num - 1) {
		if (!c->too_long)
			c->too_long = c->line;
		n = (size_t)num - 1;
	}
	memcpy(str, c->buf, n);
	str[n] = '\0';
	return str;
}

int dsv_mf_fail(parse_ctx *c, int line, const char *fmt, ...)
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

static pending_view *find_view(parse_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nviews; i++)
		if (!strcmp(c->views[i].v->name, name))
			return &c->views[i];
	return NULL;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	parse_ctx *c = user;
	if (c->err)
		return 1;
	if (c->long_line == c->line) /* reader() kept the value whole */
		value = c->long_value;
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
				return dsv_mf_fail(c, c->line,
						   "key '%s' outside any [view] section", name);
			if (c->sect_len > DSV_VIEW_NAME_MAX || c->sect_nul ||
			    !dsv_view_name_ok(c->sect))
				return dsv_mf_fail(c, c->section_line,
						   "invalid view name '%s' (%zu bytes; letters, "
						   "digits, _, -, . only; at most %d bytes)",
						   dsv_shown(c->sect, c->sect_len, 64, show),
						   c->sect_len, DSV_VIEW_NAME_MAX);
			if (find_view(c, c->sect))
				return dsv_mf_fail(c, c->section_line, "view '%s' is defined twice",
						   c->sect);
			pending_view *nv = realloc(c->views, (c->nviews + 1) * sizeof(*nv));
			if (!nv)
				return dsv_mf_fail(c, c->line, "out of memory");
			c->views = nv;
			memset(&nv[c->nviews], 0, sizeof(*nv));
			nv[c->nviews].v = dsv_view_new(c->sect);
			nv[c->nviews].line = c->section_line;
			if (!nv[c->nviews].v)
				return dsv_mf_fail(c, c->line, "out of memory");
			c->nviews++;
		}
	}
	if (c->in_dsview)
		return dsv_mf_dsview_key(c, name, value);
	return dsv_mf_view_key(c, &c->views[c->nviews - 1], name, value);
}

char *dsv_mf_resolve(const char *dir, const char *spec)
{
	char *out;
	if (spec[0] == '/' || dsv_url_scheme_len(spec) || !dir)
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
	double **one = pv->nmean == 1 ? &v->decl->mean : &v->decl->std;
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
		return dsv_mf_fail(c, pv->mean_file ? pv->mean_line : pv->std_line,
				   "mean and std must both be @files or both be numbers");
	if ((pv->rows_file && !(v->decl->rows_file = dsv_mf_resolve(c->dir, pv->rows_file))) ||
	    (pv->mean_file && !(v->decl->mean_file = dsv_mf_resolve(c->dir, pv->mean_file))) ||
	    (pv->std_file && !(v->decl->std_file = dsv_mf_resolve(c->dir, pv->std_file))))
		return dsv_mf_fail(c, pv->line, "out of memory");
	return 1;
}

/* rows = documents and its keys: seq_len given, pad_token -1 unless
 * given. @return 1, or 0 after the error. */
static int check_documents(parse_ctx *c, pending_view *pv)
{
	if (!pv->docs_line) {
		int line = pv->seq_len_line ? pv->seq_len_line : pv->pad_line;
		return line ? dsv_mf_fail(c, line, "%s needs rows = documents",
					  pv->seq_len_line ? "seq_len" : "pad_token")
			    : 1;
	}
	if (!pv->seq_len_line)
		return dsv_mf_fail(c, pv->docs_line,
				   "rows = documents needs seq_len = L: a view's rows have one "
				   "shape, so each document is cut or padded to L tokens");
	if (pv->has_raw_dtype)
		return dsv_mf_fail(c, pv->docs_line,
				   "rows = documents serves a Megatron index's documents, not a "
				   "raw source's rows");
	if (!pv->pad_line)
		pv->docs.pad = -1;
	return 1;
}

static int open_view_sources(parse_ctx *c, pending_view *pv)
{
	dsv_errbuf eb;
	dsv_view *v = pv->v;
	if (pv->nspecs == 0)
		return dsv_mf_fail(c, pv->line, "view '%s' has no source", v->name);
	if ((pv->has_raw_dtype != 0) != (pv->raw.ndim != 0))
		return dsv_mf_fail(c, pv->has_raw_dtype ? pv->raw_dtype_line : pv->raw_shape_line,
				   "source_dtype and source_shape must be given together");
	if (pv->raw_offset_line && !pv->has_raw_dtype)
		return dsv_mf_fail(c, pv->raw_offset_line,
				   "source_offset needs source_dtype and source_shape (a raw "
				   "source)");
	if (!check_documents(c, pv))
		return 0;
	if (!v->has_window && (pv->stride_line || pv->waxis_line))
		return dsv_mf_fail(c, pv->stride_line ? pv->stride_line : pv->waxis_line,
				   "%s needs window = W",
				   pv->stride_line ? "stride" : "window_axis");
	if (v->has_window && !pv->stride_line)
		v->stride = v->win;
	if (v->has_window && !pv->waxis_line)
		v->win_axis = -1;
	if (!resolve_files(c, pv))
		return 0;
	dsv_spec_opts so = { pv->has_raw_dtype ? &pv->raw : NULL,
			     pv->docs_line ? &pv->docs : NULL };
	for (size_t i = 0; i < pv->nspecs; i++) {
		char *path = dsv_mf_resolve(c->dir, pv->specs[i]);
		int err;
		if (!path)
			return dsv_mf_fail(c, pv->spec_lines[i], "out of memory");
		err = dsv_view_open_spec(v, path, &so, &eb);
		free(path);
		if (err)
			return dsv_mf_fail(c, pv->spec_lines[i], "%s", eb.msg);
	}
	if (dsv_dtype_is_int(v->dtype) &&
	    (v->decl->scale != 1.0 || v->decl->offset != 0.0 || pv->mean_line || pv->std_line))
		return dsv_mf_fail(c, pv->dtype_line,
				   "an integer output (%s) takes no scale, offset, mean or "
				   "std",
				   dsv_dtype_name(v->dtype));
	if ((pv->nmean != 0) != (pv->nstd != 0))
		return dsv_mf_fail(c, pv->nmean ? pv->mean_line : pv->std_line,
				   "mean and std must be given together");
	if (pv->nmean != pv->nstd && pv->nmean != 1 && pv->nstd != 1)
		return dsv_mf_fail(c, pv->std_line, "std has %d values but mean has %d", pv->nstd,
				   pv->nmean);
	if (pv->nmean != pv->nstd && expand_scalar(pv) != 0)
		return dsv_mf_fail(c, pv->line, "out of memory");
	v->decl->nchan = pv->nmean;
	if (dsv_view_finish(v, &eb))
		return dsv_mf_fail(c, line_of_key(pv, eb.key), "%s", eb.msg);
	return 1;
}

dsv_manifest *dsv_manifest_new(const char *path)
{
	dsv_manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	strcpy(m->gpu, DSV_DEFAULT_GPU);
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
	free(m->disk_cache);
	free(m->index_cache);
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
		return dsv_errf_at(eb, errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, path, NULL,
				   "%s", strerror(errno));
	c.m = dsv_manifest_new(path);
	const char *slash = strrchr(path, '/');
	c.dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : NULL;
	if (!c.m || (slash && !c.dir)) {
		fclose(c.f);
		dsv_manifest_free(c.m);
		free(c.dir);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	struct stat st;
	if (fstat(fileno(c.f), &st) == 0)
		c.m->mtime = st.st_mtim; /* a view's files change when it does */
	rc = ini_parse_stream(reader, &c, handler, &c);
	fclose(c.f);
	free(c.buf);
	free(c.long_value);
	if (c.too_long && !c.err)
		dsv_mf_fail(&c, c.too_long, "line too long (at most %d characters)",
			    INI_MAX_LINE - 2);
	if (rc > 0 && !c.err)
		dsv_mf_fail(&c, rc, "syntax error (expected [view], key = value, or a ; comment)");
	if (!c.err && c.nviews == 0)
		dsv_mf_fail(&c, c.line ? c.line : 1, "no [view] section");
	dsv_mf_index mi = { 0 };
	if (!c.err)
		dsv_mf_index_begin(&mi, c.m, path);
	for (size_t i = 0; !c.err && i < c.nviews; i++)
		open_view_sources(&c, &c.views[i]);
	dsv_mf_index_end(&mi, !c.err);

	if (!c.err) {
		c.m->views = calloc(c.nviews, sizeof(dsv_view *));
		if (!c.m->views)
			dsv_mf_fail(&c, 1, "out of memory");
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
