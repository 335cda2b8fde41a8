/* The PATH argument of info and verify; see target.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/str.h"
#include "cli/target.h"
#include "net/net.h"
#include "formats/formats.h"
#include "formats/raw/raw.h"

/* What t's format makes it; dir: a directory format's DSV_FMT_*. */
static void set_format(dsv_target *t, const dsv_format *f, int dir)
{
	t->format = f;
	t->kind = dir == DSV_FMT_GROUP           ? DSV_TARGET_GROUP
		  : f->traits & DSV_FMT_DATASETS ? DSV_TARGET_DATASETS
						 : DSV_TARGET_ARRAY;
}

/* t (its file set) as the registry tells it, or, where no format claims
 * it, a manifest (.ini). @return 0, or DSV_ERR_INVALID with eb set. */
static int classify(dsv_target *t, const dsv_format *f, int dir, dsv_errbuf *eb)
{
	char what[512];
	if (f)
		set_format(t, f, dir);
	else if (dsv_has_ext(t->file, ".ini") && !dsv_url_scheme_len(t->file))
		t->kind = DSV_TARGET_MANIFEST;
	else
		return dsv_errf_at(eb, DSV_ERR_INVALID, t->file, NULL,
				   "not a manifest (.ini), %s; a raw file needs --source-dtype and "
				   "--source-shape",
				   dsv_format_nouns(DSV_FMT_RAW, what, sizeof(what)));
	return 0;
}

/* t->file's size: an object's by a HEAD, a file's by stat; a directory (a
 * Zarr array's or group's) has none. */
static int find_size(dsv_target *t, dsv_errbuf *eb)
{
	struct stat st;
	dsv_net_obj *o;
	int err, url = dsv_url_scheme_len(t->file) != 0;
	if (url && t->format && (t->format->traits & DSV_FMT_DIR))
		return 0; /* a prefix, not an object: no HEAD */
	if (url) {
		if ((err = dsv_net_open(t->file, &o, eb)))
			return err;
		t->file_bytes = dsv_net_size(o);
		dsv_net_close(o);
		return 0;
	}
	if (stat(t->file, &st) < 0) {
		int e = errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO;
		return dsv_errf_at(eb, e, t->file, NULL, "%s", strerror(errno));
	}
	if (S_ISDIR(st.st_mode) && t->format && (t->format->traits & DSV_FMT_DIR))
		return 0;
	if (!S_ISREG(st.st_mode))
		return dsv_errf_at(eb, DSV_ERR_INVALID, t->file, NULL, "not a regular file");
	t->file_bytes = (uint64_t)st.st_size;
	return 0;
}

int dsv_target_parse(const char *spec, int raw, dsv_target *t, dsv_errbuf *eb)
{
	const dsv_format *f = NULL;
	struct stat st;
	int dir = 0, err = 0;

	memset(t, 0, sizeof(*t));
	/* "file.h5:/dset", split as a source spec is, unless raw or the whole
	 * spec is itself a file. */
	if (raw || (!dsv_url_scheme_len(spec) && stat(spec, &st) == 0)) {
		if (!(t->file = strdup(spec)))
			err = DSV_ERR_NOMEM;
		else if (!raw)
			f = dsv_format_detect(spec, DSV_DETECT_MAGIC, &dir);
	} else
		f = dsv_format_of_spec(spec, DSV_DETECT_MAGIC, &t->file, &t->dataset, &dir, &err);
	if (err)
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	else if (raw)
		set_format(t, &dsv_format_raw, 0);
	else
		err = classify(t, f, dir, eb);
	/* a file that is not there, or not a file: that says more than its
	 * format does */
	dsv_errbuf sub;
	int size_err = err == DSV_ERR_NOMEM ? 0 : find_size(t, err ? &sub : eb);
	if (size_err && err)
		*eb = sub;
	if (size_err)
		err = size_err;
	if (err)
		dsv_target_free(t);
	return err;
}

void dsv_target_free(dsv_target *t)
{
	if (!t)
		return;
	free(t->file);
	free(t->dataset);
	t->file = t->dataset = NULL;
}

const char *dsv_target_label(char *buf, size_t cap, const char *file, const char *dataset)
{
	if (dataset)
		snprintf(buf, cap, "%s:%s", dsv_cli_path_escaped(file, 1), dsv_cli_shown(dataset));
	else
		snprintf(buf, cap, "%s", dsv_cli_path_escaped(file, 1));
	return buf;
}
