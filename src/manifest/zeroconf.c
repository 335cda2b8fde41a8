/*
 * Zero-configuration manifests: `dsview mount file.npy`, `file.nii`,
 * `file.h5`, a directory, or `data.zarr` (an array or a group: zarr_tree.c),
 * one view per array.
 *
 * An HDF5 file is whatever its users already have: beside the arrays it
 * may hold strings, tables (compound), scalars, names with spaces, and a
 * damaged object here and there. So the mount is partial: every dataset
 * that can be served is, and each one that cannot is recorded in
 * m->skipped with the reason alone (its path is the other field), for
 * /.skipped.json, the mount command's summary line and the log. Only
 * failures of our own (out of memory, internal) end the load, and a
 * file with nothing to serve fails with the reasons. DSV_FROM_FILE_STRICT
 * keeps all-or-nothing: the first dataset that cannot be served fails the
 * load with its message. (A manifest names its datasets itself: there
 * every error stays dsv_mf_fatal; see manifest.c.)
 *
 * Names: each part of a dataset's path is mapped by dsv_name_escape
 * (common/str.h), one-to-one, so "my data" is served as my_x20data.* and
 * V.json keeps the dataset's own path as "hdf5_path". A part whose mapped
 * name passes DSV_VIEW_NAME_MAX bytes is skipped with that reason.
 */
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/str.h"
#include "net/net.h"
#include "dsview/h5info.h"
#include "formats/formats.h"
#include "formats/h5/h5_format.h"
#include "formats/h5/h5_vds.h"
#include "formats/raw/raw.h"
#include "manifest/manifest_i.h"
#include "source/source.h"
#include "view/view_i.h"

/* Adds a view named name of the n sources srcs (taken, in order; srcs
 * itself is not), to m only once it is finished: a view that fails
 * dsv_view_finish is freed and m is as before. hdf5_path: the dataset's
 * own path (for V.json), or NULL. */
static int add_view_of(dsv_manifest *m, const char *name, const char *hdf5_path, dsv_source **srcs,
		       size_t n, dsv_dtype dtype, dsv_errbuf *eb)
{
	dsv_view *v = dsv_view_new(name);
	dsv_view **nv = realloc(m->views, (m->nviews + 1) * sizeof(*nv));
	size_t k = 0;
	int err;
	if (nv)
		m->views = nv;
	int bad = !v || !nv || (hdf5_path && !(v->decl->hdf5_path = strdup(hdf5_path)));
	while (!bad && k < n && !(bad = dsv_view_add_source(v, srcs[k]) != 0))
		k++; /* the view owns it */
	if (bad) {
		for (; k < n; k++)
			dsv_source_close(srcs[k]);
		dsv_view_free(v);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	v->dtype = dtype;
	v->decl->dtype_given = m->dtype_given;
	if ((err = dsv_view_finish(v, eb))) {
		dsv_view_free(v);
		return err;
	}
	m->views[m->nviews++] = v;
	return 0;
}

/* A view of s (taken), as add_view_of. */
int dsv_mf_add_file_view(dsv_manifest *m, const char *name, const char *hdf5_path, dsv_source *s,
			 dsv_dtype dtype, dsv_errbuf *eb)
{
	return add_view_of(m, name, hdf5_path, &s, 1, dtype, eb);
}

/* A view of the dataset dset of path, a file of format f's: itself, or
 * the parts it is made of (an HDF5 virtual dataset's, dsv_h5_open_parts). */
static int add_h5_view(dsv_manifest *m, const dsv_format *f, const char *name, const char *path,
		       const char *dset, dsv_dtype dtype, dsv_errbuf *eb)
{
	dsv_source **parts;
	size_t n;
	int err = dsv_format_open_parts(f, path, dset, &parts, &n, eb);
	if (!err)
		err = add_view_of(m, name, dset, parts, n, dtype, eb);
	free(parts);
	return err;
}

/* The view name of the dataset at HDF5 path dset ("/a b/c" gives
 * "a_x20b/c"), newly allocated in *out. @return 0, DSV_ERR_NOMEM, or
 * DSV_ERR_INVALID when a part's mapped name is longer than
 * DSV_VIEW_NAME_MAX (*part_len: its length). */
int dsv_mf_map_name(const char *dset, char **out, size_t *part_len)
{
	size_t len = strlen(dset), n = 0;
	char *name = malloc(4 * len + 1), *copy = strdup(dset), *save = NULL;
	int err = 0;

	*out = NULL;
	if (!name || !copy) {
		free(name);
		free(copy);
		return DSV_ERR_NOMEM;
	}
	for (char *part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		if (n)
			name[n++] = '/';
		size_t k = dsv_name_escape(name + n, 4 * len + 1 - n, part);
		if (k > DSV_VIEW_NAME_MAX) {
			*part_len = k;
			err = DSV_ERR_INVALID;
			break;
		}
		n += k;
	}
	name[n] = '\0';
	free(copy);
	if (err || n == 0) {
		free(name);
		return err ? err : DSV_ERR_INVALID;
	}
	*out = name;
	return 0;
}

/* Errors that end a load whatever else: ours, not the file's. */
int dsv_mf_fatal(int err, unsigned flags)
{
	return err == DSV_ERR_NOMEM || err == DSV_ERR_INTERNAL || (flags & DSV_FROM_FILE_STRICT);
}

/* The view name of the file at path: its name less strip bytes (".npy"),
 * mapped as HDF5 names are, in a new string *out. @return 0,
 * DSV_ERR_NOMEM, or DSV_ERR_INVALID with eb saying why (empty, or longer
 * than DSV_VIEW_NAME_MAX once mapped). */
int dsv_mf_file_view_name(const char *path, size_t strip, char **out, dsv_errbuf *eb)
{
	size_t plen = dsv_url_shown_len(path); /* a URL's query is no part of it */
	const char *base = path + plen;
	while (base > path && base[-1] != '/')
		base--;
	size_t len = (size_t)(path + plen - base) - strip, cap = 4 * len + 1, n = 0;
	char *stem = strndup(base, len), *name = malloc(cap), show[4 * 160 + 4];
	int err = 0;

	*out = NULL;
	if (!stem || !name)
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	else if ((n = dsv_name_escape(name, cap, stem)) > DSV_VIEW_NAME_MAX || n == 0)
		err = dsv_errf_at(eb, DSV_ERR_INVALID, dsv_shown(path, plen, 160, show), NULL,
				  "file name is not a valid view name (%zu bytes once mapped; at "
				  "most %d)",
				  n, DSV_VIEW_NAME_MAX);
	free(stem);
	if (err)
		free(name);
	else
		*out = name;
	return err;
}

/* Every dataset of the file at path (an HDF5 file, or another format of
 * datasets f: a .npz), each as a view or in m->skipped. in: NULL for a file mount; in a directory mount, the file's name, whose
 * mapped form prefixes every view name (the file becomes a directory).
 * *first gets the first dataset's error (for a file of one). @return 0,
 * an error of the whole file (not listed, no datasets), or a dsv_mf_fatal one. */
static int h5_views(dsv_manifest *m, const dsv_format *f, const char *path, const char *in,
		    dsv_dtype dtype, unsigned flags, dsv_errbuf *first, dsv_errbuf *eb)
{
	int strict = flags & DSV_FROM_FILE_STRICT;
	char **names = NULL, *prefix = NULL, label[4400];
	dsv_h5_unlisted *bad = NULL;
	size_t n = 0, nbad = 0, links[2] = { 0, 0 };
	int h5 = f == &dsv_format_h5;
	int err = h5 ? dsv_h5_list_all(path, &names, &n, links, &bad, &nbad, eb)
		     : f->list(path, &names, &n, eb);

	first->code = 0;
	if (err)
		return err;
	if (in)
		err = dsv_mf_file_view_name(path, 0, &prefix, eb);
	if (!err && n == 0 && nbad == 0 && links[0] + links[1])
		err = dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				  "no datasets of its own (%zu soft and %zu "
				  "external links, not followed; name a soft link's target in a "
				  "manifest)",
				  links[0], links[1]);
	else if (!err && n == 0 && nbad == 0)
		err = dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "no datasets");
	for (size_t i = 0; !err && i < nbad; i++) {
		const char *sp = dsv_mf_skip_path(in, bad[i].path, label, sizeof(label));
		if (strict)
			err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, bad[i].path, "%s",
					  bad[i].reason);
		else if (dsv_mf_skip(m, sp, bad[i].reason, "unreadable"))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		else if (!first->code)
			dsv_errf_at(first, DSV_ERR_FORMAT, path, bad[i].path, "%s", bad[i].reason);
	}
	for (size_t i = 0; !err && i < n; i++) {
		dsv_errbuf sub;
		char *name = NULL, *full = NULL, kind[24], show[4 * 64 + 4];
		size_t part_len = 0;
		int e = dsv_mf_map_name(names[i], &name, &part_len);
		if (e == DSV_ERR_INVALID)
			dsv_errf_at(&sub, e, path, names[i],
				    "name too long once mapped to a view name "
				    "(a part of %zu bytes, at most %d)",
				    part_len, DSV_VIEW_NAME_MAX);
		else if (!e && prefix && asprintf(&full, "%s/%s", prefix, name) < 0)
			e = dsv_errf(&sub, DSV_ERR_NOMEM, "out of memory");
		else if (!e)
			e = add_h5_view(m, f, full ? full : name, path, names[i], dtype, &sub);
		free(name);
		free(full);
		if (!e)
			continue;
		if (dsv_mf_fatal(e, flags)) {
			if (part_len) /* today's wording, with the mapped length */
				err = dsv_errf_at(eb, e, path, NULL,
						  "dataset name '%s' is not a valid view name "
						  "(%zu bytes once mapped; at most %d a part)",
						  dsv_shown(names[i], strlen(names[i]), 64, show),
						  part_len, DSV_VIEW_NAME_MAX);
			else
				err = dsv_errf(eb, e, "%s",
					       e == DSV_ERR_NOMEM ? "out of memory" : sub.msg);
			break;
		}
		char *value = NULL;
		if (part_len)
			snprintf(kind, sizeof(kind), "name");
		else if (h5)
			dsv_mf_skip_kind(path, names[i], kind, sizeof(kind), &value);
		else
			snprintf(kind, sizeof(kind), "unsupported");
		if (dsv_mf_skip_value(m, dsv_mf_skip_path(in, names[i], label, sizeof(label)),
				      sub.reason, kind, value))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		else if (!first->code)
			*first = sub;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(prefix);
	dsv_h5_unlisted_free(bad, nbad);
	return err;
}

/* Every dataset of the file of datasets at path (format f), each as a
 * view or in m->skipped. */
static int from_h5(dsv_manifest *m, const dsv_format *f, const char *path, dsv_dtype dtype,
		   unsigned flags, dsv_errbuf *eb)
{
	dsv_errbuf first; /* the first dataset's error, for a file of one */
	int err = h5_views(m, f, path, NULL, dtype, flags, &first, eb);

	if (!err && m->nviews == 0 && m->nskipped == 1)
		err = dsv_errf(eb, first.code, "%s", first.msg);
	else if (!err && m->nviews == 0)
		err = dsv_mf_nothing_served(m, path, eb);
	if (!err && m->nskipped && dsv_mf_skipped_render(m))
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	return err;
}

/* The view name of a file below a directory mount's top level: its path
 * there (rel) less strip bytes (".bdf"), each part mapped as HDF5 names
 * are ("sub-01/eeg/sub-01_task-rest_eeg"), in a new string *out. */
static int tree_view_name(const char *rel, size_t strip, char **out, dsv_errbuf *eb)
{
	char *stem = strndup(rel, strlen(rel) - strip);
	size_t part_len = 0;
	int err = stem ? dsv_mf_map_name(stem, out, &part_len) : DSV_ERR_NOMEM;
	free(stem);
	if (err == DSV_ERR_INVALID)
		return dsv_errf_at(eb, err, rel, NULL,
				   "name too long once mapped to a view name (a part of %zu "
				   "bytes, at most %d)",
				   part_len, DSV_VIEW_NAME_MAX);
	return err ? dsv_errf(eb, err, "out of memory") : 0;
}

/* The signals of a recording its source leaves out (an EEG file's other
 * sample rates and annotations: its attributes' "skipped_signals"), each
 * in m->skipped as "label" (in: the file's name in a directory mount,
 * then "file:label") with the reason. */
static int skip_signals(dsv_manifest *m, const char *in, const dsv_source *s)
{
	const char *attrs = dsv_source_get_info(s)->attrs;
	json_t *o = attrs ? json_loads(attrs, 0, NULL) : NULL, *k;
	json_t *list = json_object_get(o, "skipped_signals");
	char label[4400];
	size_t i;
	int err = 0;
	json_array_foreach(list, i, k)
	{
		const char *l = json_string_value(json_object_get(k, "label"));
		const char *why = json_string_value(json_object_get(k, "reason"));
		if (!err && l && why &&
		    dsv_mf_skip(m, dsv_mf_skip_path(in, l, label, sizeof(label)), why,
				DSV_SKIP_SIGNAL))
			err = DSV_ERR_NOMEM;
	}
	json_decref(o);
	return err;
}

/* A file opened ahead of its view (pre_open), or how its open failed. */
typedef struct opened_file {
	dsv_source *s;
	int err;
	dsv_errbuf *eb; /* the failure's words, or NULL */
} opened_file;

/* The view of a file of one array (a .npy, a .nii, a recording), named
 * for the file less its extension (dsv_mf_file_view_name), opened as its format
 * f says (a .nii.gz is refused with the way to convert it): the source o
 * opened ahead (taken), or, with no o, opened now; in: the file's name in
 * a directory mount, else NULL. */
static int file_view(dsv_manifest *m, const dsv_format *f, const char *path, const char *in,
		     dsv_dtype dtype, opened_file *o, dsv_errbuf *eb)
{
	dsv_source *s = o ? o->s : NULL;
	char *name = NULL;
	size_t ext;
	int err;

	if (o)
		o->s = NULL;
	dsv_format_by_name(path, &ext);
	err = in && strchr(in, '/') ? tree_view_name(in, ext, &name, eb)
				    : dsv_mf_file_view_name(path, ext, &name, eb);
	if (!err && o && o->err) {
		*eb = *o->eb;
		err = o->err;
	}
	if (!err && !s)
		err = dsv_format_open(dsv_format_refine(f, path), path, NULL, &s, eb);
	if (!err && skip_signals(m, in, s)) {
		dsv_source_close(s);
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	if (!err)
		err = dsv_mf_add_file_view(m, name, NULL, s, dtype, eb); /* s taken */
	else
		dsv_source_close(s);
	free(name);
	return err;
}

/* The files of a directory opened ahead on threads (dsv_mf_parallel):
 * the single-array formats' (a .npy, a .nii); a file of datasets is
 * opened as it is walked. */
typedef struct pre_open {
	const char *dir;
	char **names;
	opened_file *out;
} pre_open;

static int open_ahead(void *arg, size_t k)
{
	pre_open *p = arg;
	const dsv_format *f = dsv_format_by_name(p->names[k], NULL);
	opened_file *o = &p->out[k];
	dsv_errbuf eb;
	char *path;
	struct stat st;

	/* no format by its name (told by its magic) or a file of datasets:
	 * opened in the walk */
	if (!f || f->traits & DSV_FMT_DATASETS || asprintf(&path, "%s/%s", p->dir, p->names[k]) < 0)
		return 0;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (o->err = dsv_format_open(dsv_format_refine(f, path), path, NULL, &o->s, &eb)) &&
	    !(o->eb = malloc(sizeof(*o->eb))))
		o->err = 0; /* no room for the words: opened again in the walk */
	else if (o->err)
		*o->eb = eb;
	free(path);
	return 0;
}

/* The formats' preparation of dir's files names[0 .. n) (the HDF5 probe
 * of them all at once); skipped when out of memory. */
static void prepare_files(const char *dir, char **names, size_t n)
{
	char **paths = calloc(n ? n : 1, sizeof(*paths));
	size_t k = 0;
	while (paths && k < n && asprintf(&paths[k], "%s/%s", dir, names[k]) >= 0)
		k++;
	if (paths && k == n)
		dsv_format_prepare(paths, n);
	for (size_t i = 0; paths && i < k; i++)
		free(paths[i]);
	free(paths);
}

/* `dsview mount DIR`: every .npy, .nii, token file (a view named for the
 * file, mapped as HDF5 names are) and HDF5 file, .npz or .arrow (a
 * directory named for the file, holding its datasets) of dir, and its
 * recordings at any depth (a BIDS tree: a view named for each one's path,
 * dsv_mf_dir_files), in natural order; what cannot be served, a whole
 * file or one dataset, is skipped as in a file mount, and the load fails
 * only when nothing can be served. */
static int from_dir(dsv_manifest *m, const char *dir, dsv_dtype dtype, unsigned flags,
		    dsv_errbuf *eb)
{
	char **names = NULL, what[512];
	size_t n = 0;
	int err = dsv_mf_dir_files(dir, &names, &n, eb);

	if (err)
		return err;
	if (!err && n == 0)
		err = dsv_errf_at(eb, DSV_ERR_INVALID, dir, NULL,
				  "no file in it is one dsview reads (%s)",
				  dsv_format_nouns(DSV_FMT_DIR | DSV_FMT_RAW, what, sizeof(what)));
	opened_file *ahead = NULL;
	if (!err) {
		dsv_natural_sort(names, n);
		prepare_files(dir, names, n);
		pre_open p = { dir, names, calloc(n ? n : 1, sizeof(*p.out)) };
		if ((ahead = p.out))
			dsv_mf_parallel(n, open_ahead, &p);
	}
	for (size_t i = 0; !err && i < n; i++) {
		dsv_errbuf sub, first;
		char *path = NULL;
		struct stat st;
		int e = 0;
		if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
			break;
		}
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			free(path);
			continue; /* a directory called x.h5, a dangling link */
		}
		const dsv_format *f = dsv_mf_entry_format(dir, names[i]);
		if (!f) { /* changed since it was listed */
			free(path);
			continue;
		}
		if (f->traits & DSV_FMT_DATASETS)
			e = h5_views(m, f, path, names[i], dtype, flags, &first, &sub);
		else
			e = file_view(m, f, path, names[i], dtype, ahead ? &ahead[i] : NULL, &sub);
		if (e && dsv_mf_fatal(e, flags))
			err = dsv_errf(eb, e, "%s", sub.msg);
		else if (e && dsv_mf_skip(m, names[i], sub.reason, "unreadable"))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		free(path);
	}
	for (size_t i = 0; i < n; i++) {
		if (ahead) {
			dsv_source_close(ahead[i].s); /* not taken: the walk stopped */
			free(ahead[i].eb);
		}
		free(names[i]);
	}
	free(ahead);
	free(names);
	if (!err && m->nviews == 0)
		err = dsv_mf_nothing_served(m, dir, eb);
	if (!err && m->nskipped && dsv_mf_skipped_render(m))
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	return err;
}

int dsv_manifest_from_file(const char *path, dsv_dtype dtype, unsigned flags, dsv_manifest **out,
			   dsv_errbuf *eb)
{
	dsv_manifest *m = dsv_manifest_new(path);
	int err = 0;

	*out = NULL;
	if (!m)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	m->dtype_given = (flags & DSV_FROM_FILE_DTYPE) != 0;
	struct stat st;
	int kind, is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	const dsv_format *f = dsv_format_detect(path, DSV_DETECT_MAGIC, &kind), *named;
	char what[512];
	if ((f && kind) ||
	    (is_dir && (named = dsv_format_by_name(path, NULL)) && (named->traits & DSV_FMT_DIR)))
		err = dsv_mf_from_zarr(m, path, dtype, flags, eb);
	else if (is_dir)
		err = from_dir(m, path, dtype, flags, eb);
	else if (f && (f->traits & DSV_FMT_DATASETS))
		err = from_h5(m, f, path, dtype, flags, eb);
	else if (f) {
		err = file_view(m, f, path, NULL, dtype, NULL, eb);
		if (!err && m->nskipped && dsv_mf_skipped_render(m))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	} else
		err = dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				  "expected a manifest (.ini), %s, or a directory of them",
				  dsv_format_nouns(DSV_FMT_RAW, what, sizeof(what)));
	if (err) {
		dsv_manifest_free(m);
		return err;
	}
	*out = m;
	return 0;
}

int dsv_manifest_from_raw(const char *path, const dsv_raw_layout *l, dsv_dtype dtype,
			  dsv_manifest **out, dsv_errbuf *eb)
{
	dsv_manifest *m = dsv_manifest_new(path);
	opened_file o = { 0 };
	int err;

	*out = NULL;
	if (!m)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	m->dtype_given = 1;
	if ((err = dsv_source_open_raw_layout(path, l, &o.s, eb)) ||
	    (err = file_view(m, &dsv_format_raw, path, NULL, dtype, &o, eb))) {
		dsv_manifest_free(m);
		return err;
	}
	*out = m;
	return 0;
}

int dsv_manifest_open(const char *source, dsv_dtype dtype, unsigned flags, dsv_manifest **out,
		      dsv_errbuf *eb)
{
	dsv_mf_index mi;
	int err;
	if (dsv_has_ext(source, ".ini"))
		return dsv_manifest_load(source, out, eb);
	dsv_mf_index_begin(&mi, NULL, source);
	err = dsv_manifest_from_file(source, dtype, flags, out, eb);
	dsv_mf_index_end(&mi, !err);
	return err;
}
