/*
 * A mount's index cache (source/index.h): which file holds it, loaded
 * before the mount's sources are opened and written after, when they all
 * opened and it changed. The file is in the index cache's directory
 * (--index-cache, the manifest's index_cache), else in the disk cache's
 * (--disk-cache, disk_cache), one a mount source, named by a hash of
 * the source's real path; the directory is made (mode 0700) when
 * missing, and the file is its owner's alone (0600): it names files. Nothing about it fails a mount: a file that
 * fails its checks, or a directory it cannot be written to, is one log
 * line (a warning), and the sources are opened as without it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/log.h"
#include "formats/formats.h"
#include "manifest/manifest_i.h"

/* --index-cache and --disk-cache, as the command line gave them, or NULL */
static char *opt_index, *opt_disk;

void dsv_manifest_index_dirs(const char *index_dir, const char *disk_dir)
{
	free(opt_index);
	free(opt_disk);
	opt_index = index_dir ? strdup(index_dir) : NULL;
	opt_disk = disk_dir ? strdup(disk_dir) : NULL;
}

/* The directory of m's index cache: the command line's over the
 * manifest's, an index cache's over a disk cache's; NULL: none. */
static const char *index_dir(const dsv_manifest *m)
{
	return opt_index             ? opt_index
	       : m && m->index_cache ? m->index_cache
	       : opt_disk            ? opt_disk
	       : m                   ? m->disk_cache
				     : NULL;
}

void dsv_mf_index_begin(dsv_mf_index *mi, const dsv_manifest *m, const char *source)
{
	const char *dir = index_dir(m), *why;
	char real[PATH_MAX];
	int err;

	*mi = (dsv_mf_index){ 0 };
	if (!dir || !realpath(source, real))
		return;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		dsv_log_warn("index cache %s: %s; the sources are opened without it", dir,
			     strerror(errno));
		return;
	}
	if (asprintf(&mi->file, "%s/index-%016llx.dsvidx", dir,
		     (unsigned long long)dsv_hash_bytes(DSV_HASH_SEED, real, strlen(real))) < 0) {
		mi->file = NULL;
		return;
	}
	if (!(mi->ix = dsv_index_new(real))) {
		free(mi->file);
		mi->file = NULL;
		return;
	}
	err = dsv_index_load(mi->ix, mi->file, &why);
	if (err && err != DSV_ERR_NOTFOUND) {
		if (err == DSV_ERR_CORRUPT || err == DSV_ERR_UNSUPPORTED)
			dsv_index_count_rejected();
		dsv_log_warn("index cache %s: not used (%s); every source is opened and the "
			     "file made again",
			     mi->file, why);
	}
	dsv_format_use_index(mi->ix);
}

void dsv_mf_index_end(dsv_mf_index *mi, int ok)
{
	const char *why;
	if (!mi->ix)
		return;
	dsv_format_use_index(NULL);
	if (ok && dsv_index_changed(mi->ix) && dsv_index_write(mi->ix, mi->file, &why))
		dsv_log_warn("index cache %s: cannot write it (%s); the next mount opens every "
			     "source again",
			     mi->file, why);
	dsv_index_free(mi->ix);
	free(mi->file);
	*mi = (dsv_mf_index){ 0 };
}
