/*
 * A manifest's source line: one file ("x.npy", "x.nii", "x.h5:/dset", "x.h5:dset",
 * a Zarr array's directory, a raw file with source_dtype and source_shape),
 * or a glob(3) pattern in its file part ("/data/s*.h5:/betas") that
 * expands to every match, in natural order, each opened as a source of the
 * view, in the format the registry (formats/formats.h) tells.
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/str.h"
#include "formats/formats.h"
#include "formats/raw/raw.h"
#include "source/source.h"
#include "manifest/manifest_i.h"
#include "view/view_i.h"

/* Adds s (taken) to v, checked against its first source. */
static int add_checked(dsv_view *v, dsv_source *s, dsv_errbuf *eb)
{
	int err = dsv_view_add_source(v, s);
	if (err) {
		dsv_source_close(s);
		return dsv_errf(eb, err, "out of memory");
	}
	return v->nsources > 1 ? dsv_view_check_source(v, v->nsources - 1, eb) : 0;
}

/* The sources spec's file[:dataset] of format f is made of into v: one,
 * or an HDF5 virtual dataset's parts. */
static int open_parts(dsv_view *v, const dsv_format *f, const char *file, const char *dataset,
		      dsv_errbuf *eb)
{
	dsv_source **parts;
	size_t n, k = 0;
	int err = dsv_format_open_parts(f, file, dataset, &parts, &n, eb);

	for (; !err && k < n; k++) /* each taken, added or closed */
		err = add_checked(v, parts[k], eb);
	for (; k < n; k++)
		dsv_source_close(parts[k]);
	free(parts);
	return err;
}

/* Opens one source (a resolved path, "file.h5:/dset" included) into the
 * view: the format the registry tells, or, for a file no format claims,
 * raw elements where the line gives their dtype and shape.
 * @return 0, or a dsv_err with eb set. */
static int open_one(dsv_view *v, const char *path, const dsv_raw_spec *raw, dsv_errbuf *eb)
{
	dsv_source *s = NULL;
	char *file, *dataset;
	struct stat st;
	int err;
	const dsv_format *f = dsv_format_of_spec(path, 0, &file, &dataset, NULL, &err);

	if (err)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (f)
		err = open_parts(v, f, file, dataset, eb);
	else if (raw)
		err = dsv_source_open_raw(path, raw->dtype, raw->ndim, raw->shape, &s, eb);
	else if (!dsv_url_scheme_len(file) && stat(file, &st) < 0)
		err = dsv_errf_at(eb, errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, file, NULL,
				  "%s", strerror(errno));
	else
		err = dsv_format_raw.open(path, NULL, &s, eb);
	free(file);
	free(dataset);
	if (!err && s)
		err = add_checked(v, s, eb);
	return err;
}

/* A source spec whose file part is a glob pattern (and no file of that
 * name): every file it matches, in natural order ("s2" before "s10"),
 * each with the spec's dataset. @return 0, or a dsv_err with eb set. */
static int open_glob(dsv_view *v, const char *file, const char *dataset, const dsv_raw_spec *raw,
		     dsv_errbuf *eb)
{
	glob_t g;
	int rc = glob(file, GLOB_ERR, NULL, &g), err = 0;

	if (rc == GLOB_NOMATCH)
		return dsv_errf_at(eb, DSV_ERR_NOTFOUND, file, NULL, "the pattern matches no file");
	if (rc)
		return dsv_errf_at(eb, rc == GLOB_NOSPACE ? DSV_ERR_NOMEM : DSV_ERR_IO, file, NULL,
				   "cannot expand the pattern");
	dsv_natural_sort(g.gl_pathv, g.gl_pathc);
	for (size_t k = 0; !err && k < g.gl_pathc; k++) {
		char *one;
		if (asprintf(&one, "%s%s%s", g.gl_pathv[k], dataset ? ":" : "",
			     dataset ? dataset : "") < 0)
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		else {
			err = open_one(v, one, raw, eb);
			free(one);
		}
	}
	globfree(&g);
	return err;
}

int dsv_view_open_spec(dsv_view *v, const char *path, const dsv_raw_spec *raw, dsv_errbuf *eb)
{
	char *file, *dataset;
	struct stat st;
	int err;

	if (dsv_spec_split(path, &file, &dataset))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	/* an object URL is never a pattern ('?' starts its query) */
	if (!dsv_url_scheme_len(file) && dsv_has_glob(file) && stat(file, &st) < 0)
		err = open_glob(v, file, dataset, raw, eb);
	else
		err = open_one(v, path, raw, eb);
	free(file);
	free(dataset);
	return err;
}
