/*
 * `dsview mount X.zarr` (a directory, or an s3:// or https:// prefix): a
 * Zarr array, or every array of a group at any depth (DSV_ZARR_DEPTH
 * levels at most), each a view named for its path below the group, as
 * zeroconf.c names an HDF5 file's datasets; an array that cannot be
 * opened is skipped with the reason, as there.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/str.h"
#include "formats/formats.h"
#include "manifest/manifest_i.h"
#include "net/net.h"

/* The names one level under the object prefix dir (a listing: its
 * "subdirectories"), those starting '.' left out as a directory's are. */
static int object_children(const char *dir, char ***names, size_t *n, dsv_errbuf *eb)
{
	dsv_net_dir *d;
	int err = dsv_net_dir_open(dir, &d, eb);
	if (!err)
		err = dsv_net_dir_list(d, names, n, eb);
	dsv_net_dir_close(d);
	size_t k = 0;
	for (size_t i = 0; !err && i < *n; i++)
		if ((*names)[i][0] == '.')
			free((*names)[i]);
		else
			(*names)[k++] = (*names)[i];
	*n = err ? 0 : k;
	return err;
}

/* Every Zarr array under dir (a Zarr group, or an array itself), each a
 * view named for its path below dir (rel, "" at the top; parts mapped as
 * HDF5 names are); one that cannot be opened is skipped with the reason.
 * Subdirectories are walked DSV_ZARR_DEPTH deep at most. */
#define DSV_ZARR_DEPTH 8
static int zarr_views(dsv_manifest *m, const char *dir, const char *rel, const char *top,
		      dsv_dtype dtype, unsigned flags, int depth, dsv_errbuf *eb)
{
	dsv_errbuf sub;
	int kind;
	const dsv_format *f = dsv_format_detect(dir, 0, &kind);
	if (f && kind == DSV_FMT_ARRAY) {
		dsv_source *s;
		char *name = NULL;
		size_t part_len = 0, ext;
		dsv_format_by_name(top, &ext);
		int e = *rel ? dsv_mf_map_name(rel, &name, &part_len)
			     : dsv_mf_file_view_name(top, ext, &name, &sub);
		if (e == DSV_ERR_INVALID && *rel)
			dsv_errf_at(&sub, e, dir, NULL, "name too long once mapped to a view name");
		if (!e && !(e = f->open(dir, NULL, &s, &sub)))
			e = dsv_mf_add_file_view(m, name, NULL, s, dtype, &sub);
		free(name);
		if (e && (dsv_mf_fatal(e, flags) || !*rel))
			return dsv_errf(eb, e, "%s", sub.msg);
		if (e && dsv_mf_skip(m, rel, sub.reason, "unreadable"))
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		return 0;
	}
	int url = dsv_url_scheme_len(dir) != 0;
	DIR *d = depth < DSV_ZARR_DEPTH && !url ? opendir(dir) : NULL;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int err = url && depth < DSV_ZARR_DEPTH ? object_children(dir, &names, &n, eb) : 0;
	while (d && !err && (de = readdir(d))) {
		char **nn = de->d_name[0] != '.' ? realloc(names, (n + 1) * sizeof(*nn)) : names;
		if (de->d_name[0] == '.')
			continue;
		if (!nn || !(nn[n] = strdup(de->d_name)))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		else
			n++;
		if (nn)
			names = nn;
	}
	if (d)
		closedir(d);
	dsv_natural_sort(names, n);
	for (size_t i = 0; !err && i < n; i++) {
		char *path = NULL, *r = NULL;
		struct stat st;
		size_t dl = strlen(dir); /* "s3://b/x.zarr/" as given: one '/' */
		if (asprintf(&path, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", names[i]) <
			    0 ||
		    asprintf(&r, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0)
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		else if (url || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
			err = zarr_views(m, path, r, top, dtype, flags, depth + 1, eb);
		free(path);
		free(r);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

int dsv_mf_from_zarr(dsv_manifest *m, const char *path, dsv_dtype dtype, unsigned flags,
		     dsv_errbuf *eb)
{
	int err = zarr_views(m, path, "", path, dtype, flags, 0, eb);
	if (!err && m->nviews == 0)
		err = m->nskipped ? dsv_mf_nothing_served(m, path, eb)
				  : dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
						"no Zarr arrays in it");
	if (!err && m->nskipped && dsv_mf_skipped_render(m))
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	return err;
}
