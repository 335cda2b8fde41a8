/*
 * The files a directory mount serves (zeroconf.c): at its top level every
 * file a format names by its extension (not a directory format's) or,
 * for a format with no name of its own, tells by its first bytes, and
 * below it, DSV_MF_DIR_DEPTH directories deep, the files of formats found
 * in trees (DSV_FMT_TREE: the recordings of a BIDS dataset, as
 * sub-01/eeg/sub-01_task-rest_eeg.bdf). Names and directories starting
 * '.' are left out, as are directory formats' directories (x.zarr).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/str.h"
#include "formats/formats.h"
#include "manifest/manifest_i.h"

#define DSV_MF_DIR_DEPTH 8

typedef struct file_list {
	char **names;
	size_t n, cap;
} file_list;

static int add(file_list *l, char *name)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **nn = realloc(l->names, cap * sizeof(*nn));
		if (!nn) {
			free(name);
			return DSV_ERR_NOMEM;
		}
		l->names = nn;
		l->cap = cap;
	}
	l->names[l->n++] = name;
	return 0;
}

const dsv_format *dsv_mf_entry_format(const char *dir, const char *name)
{
	const dsv_format *f = dsv_format_by_name(name, NULL);
	char *path = NULL;
	if (f || name[0] == '.' || asprintf(&path, "%s/%s", dir, name) < 0)
		return f;
	f = dsv_format_detect(path, DSV_DETECT_MAGIC, NULL);
	free(path);
	return f && !f->by_name ? f : NULL;
}

/* A subdirectory to walk: a directory, not a directory format's. */
static int walkable(const char *path)
{
	struct stat st;
	int kind;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && !dsv_format_detect(path, 0, &kind);
}

/* The files of dir/rel ("" at the top) into l, as paths below dir. */
static int walk(const char *dir, const char *rel, int depth, file_list *l, dsv_errbuf *eb)
{
	char *here = NULL;
	if (asprintf(&here, "%s%s%s", dir, *rel ? "/" : "", rel) < 0)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	DIR *d = opendir(here);
	struct dirent *de;
	int err = 0;

	if (!d) {
		err = depth ? 0 /* a subdirectory we may not read: passed over */
			    : dsv_errf_at(eb, errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, dir,
					  NULL, "%s", strerror(errno));
		free(here);
		return err;
	}
	while (!err && (de = readdir(d))) {
		char *name = NULL, *path = NULL;
		if (de->d_name[0] == '.')
			continue;
		/* a format told by its magic (an llm.c shard) is a top-level file's */
		const dsv_format *f = depth ? dsv_format_by_name(de->d_name, NULL)
					    : dsv_mf_entry_format(here, de->d_name);
		if (asprintf(&name, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < 0 ||
		    asprintf(&path, "%s/%s", here, de->d_name) < 0) {
			free(name);
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
			break;
		}
		if (f && !(f->traits & DSV_FMT_DIR) && (!depth || (f->traits & DSV_FMT_TREE))) {
			if (add(l, name))
				err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
			name = NULL;
		} else if (!f && depth + 1 < DSV_MF_DIR_DEPTH && walkable(path)) {
			err = walk(dir, name, depth + 1, l, eb);
		}
		free(name);
		free(path);
	}
	closedir(d);
	free(here);
	return err;
}

int dsv_mf_dir_files(const char *dir, char ***names, size_t *n, dsv_errbuf *eb)
{
	file_list l = { 0 };
	int err = walk(dir, "", 0, &l, eb);
	if (err) {
		for (size_t i = 0; i < l.n; i++)
			free(l.names[i]);
		free(l.names);
		l.names = NULL;
		l.n = 0;
	}
	dsv_natural_sort(l.names, l.n);
	*names = l.names;
	*n = l.n;
	return err;
}
