/*
 * What the manifest room offers the rooms above beyond the installed
 * dsview/view.h (dsv_manifest_load, dsv_manifest_from_file): one call for
 * whatever a mount takes, and the mount log's words. Not installed.
 */
#ifndef DSV_MANIFEST_MANIFEST_H
#define DSV_MANIFEST_MANIFEST_H

#include <stddef.h>

#include "dsview/source.h"
#include "dsview/view.h"

/* What `dsview mount SOURCE` serves: a manifest (.ini), or any other
 * source as a zero-config mount makes it (dsv_manifest_from_file, with
 * dtype and flags, which a manifest's own settings replace). @return 0
 * or a dsv_err with eb set. */
int dsv_manifest_open(const char *source, dsv_dtype dtype, unsigned flags, dsv_manifest **out,
		      dsv_errbuf *eb);

/* The one view of a raw file laid out as l says (`dsview mount
 * --source-dtype T --source-shape S [--source-offset N]`), named for the
 * file, served as dtype. @return 0 or a dsv_err with eb set. */
int dsv_manifest_from_raw(const char *path, const dsv_raw_layout *l, dsv_dtype dtype,
			  dsv_manifest **out, dsv_errbuf *eb);

/* The keys of a manifest's [dsview] section, as messages list them. */
#define DSV_MANIFEST_KEYS                                                                 \
	"cache_size, threads, gpu, gpu_cache, disk_cache, disk_cache_size, index_cache, " \
	"s3_endpoint, s3_region, s3_profile, s3_addressing"

/* Sets one key of a manifest's [dsview] section in m, checked as the
 * manifest's own line is: a relative disk_cache taken from dir (NULL: as
 * given), an s3_ setting given to net with from (DSV_NET_FROM_*). The
 * library's options are these keys too. @return 0, or a dsv_err with
 * eb's reason set (DSV_ERR_NOTFOUND: not a key of [dsview]; eb says no
 * more, each caller lists DSV_MANIFEST_KEYS its own way). */
int dsv_manifest_set(dsv_manifest *m, const char *dir, const char *key, const char *value, int from,
		     dsv_errbuf *eb);

/* The command line's --index-cache and --disk-cache directories (NULL:
 * not given), where the next dsv_manifest_open keeps its index cache
 * (the index cache's over the manifest's index_cache over the disk
 * cache's over the manifest's disk_cache). */
void dsv_manifest_index_dirs(const char *index_dir, const char *disk_dir);

/* For the mount's log line, "4 string, 2 compound": m->skipped counted by kind, most first, into
 * buf as snprintf. @return buf */
const char *dsv_manifest_skipped_kinds(const dsv_manifest *m, char *buf, size_t cap);
/* The kind of a signal a recording's source leaves out (an EEG file's
 * other sample rates, its annotations): a part of a dataset served, not a
 * dataset skipped. */
#define DSV_SKIP_SIGNAL "signal"
/* How many of m->skipped are datasets (not DSV_SKIP_SIGNAL). */
size_t dsv_manifest_skipped_datasets(const dsv_manifest *m);

#endif
