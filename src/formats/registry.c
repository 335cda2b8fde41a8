/* The registry of formats; see formats.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/str.h"
#include "formats/formats.h"
#include "formats/arrow/arrow.h"
#include "formats/bv/bv.h"
#include "formats/edf/edf.h"
#include "formats/eeglab/eeglab.h"
#include "formats/h5/h5_format.h"
#include "formats/nifti/nifti.h"
#include "formats/npy/npy.h"
#include "formats/raw/raw.h"
#include "formats/tokens/tokens.h"
#include "formats/zarr/zarr.h"
#include "source/source.h"

/* Every format dsview reads, in the order they are asked. */
static const dsv_format *const formats[] = {
	&dsv_format_npy,     &dsv_format_nifti, &dsv_format_h5,   &dsv_format_npz,
	&dsv_format_arrow,   &dsv_format_zarr,  &dsv_format_edf,  &dsv_format_mat73,
	&dsv_format_eeglab,  &dsv_format_bv,    &dsv_format_llmc, &dsv_format_megatron,
	&dsv_format_litdata, &dsv_format_raw,
};
#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

/* f's magic is in the local file at path. */
static int magic_says(const dsv_format *f, const char *path)
{
	int fd = dsv_url_scheme_len(path) ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	int yes = fd >= 0 && f->by_magic(fd);
	if (fd >= 0)
		close(fd);
	return yes;
}

/* The file format (not a directory's) whose name name has, with traits
 * want among its own; of formats that share a name, the one whose magic
 * the file holds. */
static const dsv_format *by_name(const char *name, unsigned want)
{
	for (size_t i = 0; i < NFORMATS; i++) {
		const dsv_format *f = formats[i];
		if (!(f->traits & DSV_FMT_DIR) && (f->traits & want) == want && f->by_name &&
		    f->by_name(name) && (!(f->traits & DSV_FMT_SHARED_NAME) || magic_says(f, name)))
			return f;
	}
	return NULL;
}

/* The format whose magic the local regular file at path holds. */
static const dsv_format *by_magic(const char *path)
{
	const dsv_format *found = NULL;
	struct stat st;
	int fd = dsv_url_scheme_len(path) ? -1 : dsv_source_open_path(path);
	if (fd < 0)
		return NULL;
	int regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	for (size_t i = 0; regular && i < NFORMATS && !found; i++)
		if (formats[i]->by_magic && formats[i]->by_magic(fd))
			found = formats[i];
	close(fd);
	return found;
}

const dsv_format *dsv_format_detect(const char *path, unsigned how, int *dir)
{
	const dsv_format *f = by_name(path, 0);
	int d = 0;
	for (size_t i = 0; !f && i < NFORMATS; i++)
		if ((formats[i]->traits & DSV_FMT_DIR) && (d = formats[i]->by_dir(path)))
			f = formats[i];
	if (!f && (how & DSV_DETECT_MAGIC))
		f = by_magic(path);
	if (dir)
		*dir = d;
	return f;
}

const dsv_format *dsv_format_by_name(const char *name, size_t *ext)
{
	for (int dirs = 0; dirs < 2; dirs++)
		for (size_t i = 0; i < NFORMATS; i++) {
			const dsv_format *f = formats[i];
			size_t n = !(f->traits & DSV_FMT_DIR) == !dirs &&
						   !(f->traits & DSV_FMT_SHARED_NAME) && f->by_name
					   ? f->by_name(name)
					   : 0;
			if (n) {
				if (ext)
					*ext = n;
				return f;
			}
		}
	if (ext)
		*ext = 0;
	return NULL;
}

void dsv_format_prepare(char *const *files, size_t n)
{
	char **mine = malloc((n ? n : 1) * sizeof(*mine));
	for (size_t i = 0; mine && i < NFORMATS; i++) {
		size_t m = 0;
		if (!formats[i]->prepare)
			continue;
		for (size_t k = 0; k < n; k++)
			if (by_name(files[k], 0) == formats[i])
				mine[m++] = files[k];
		if (m)
			formats[i]->prepare(mine, m);
	}
	free(mine);
}

const dsv_format *dsv_format_refine(const dsv_format *f, const char *path)
{
	for (size_t i = 0; f && !(f->traits & DSV_FMT_SHARED_NAME) && i < NFORMATS; i++) {
		const dsv_format *g = formats[i];
		if ((g->traits & DSV_FMT_SHARED_NAME) && g->by_name(path) && magic_says(g, path))
			return g;
	}
	return f;
}

const dsv_format *dsv_format_named(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

int dsv_spec_split(const char *spec, char **file, char **dataset)
{
	const char *colon = NULL, *p = spec + dsv_url_scheme_len(spec), *next;
	int slash = 1; /* the dataset part starts with '/' */

	while ((next = strstr(p, ":/"))) {
		colon = next;
		p = next + 1;
	}
	if (!colon) { /* "file.h5:name": the last ':' after a file of datasets */
		const char *c = strrchr(spec, ':');
		char *left = c && c[1] ? strndup(spec, (size_t)(c - spec)) : NULL;
		if (left && by_name(left, DSV_FMT_DATASETS)) {
			colon = c;
			slash = 0;
		}
		free(left);
	}
	*file = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
	*dataset = NULL;
	if (colon && slash)
		*dataset = strdup(colon + 1);
	else if (colon && asprintf(dataset, "/%s", colon + 1) < 0)
		*dataset = NULL;
	if (!*file || (colon && !*dataset)) {
		free(*file);
		free(*dataset);
		*file = *dataset = NULL;
		return DSV_ERR_NOMEM;
	}
	return 0;
}

/* The format of datasets file is: by its name, else by its magic, else
 * the first such format, whose open says why the file is not one. */
static const dsv_format *of_datasets(const char *file)
{
	const dsv_format *f = by_name(file, DSV_FMT_DATASETS), *m;
	if (!f && (m = by_magic(file)) && (m->traits & DSV_FMT_DATASETS))
		f = m;
	for (size_t i = 0; !f && i < NFORMATS; i++)
		if (formats[i]->traits & DSV_FMT_DATASETS)
			f = formats[i];
	return f;
}

const dsv_format *dsv_format_of_spec(const char *spec, unsigned how, char **file, char **dataset,
				     int *dir, int *err)
{
	if (dir)
		*dir = 0;
	if ((*err = dsv_spec_split(spec, file, dataset)))
		return NULL;
	return *dataset ? of_datasets(*file) : dsv_format_detect(*file, how, dir);
}

/* The dataset of file to open: *dataset, or where that is NULL and f is
 * a format of datasets, the file's only one, or its default dataset
 * where it has that among others (then also in *only, a new string).
 * @return 0, or a dsv_err with eb set (none of those). */
static int pick_dataset(const dsv_format *f, const char *file, const char **dataset, char **only,
			dsv_errbuf *eb)
{
	char **names = NULL;
	size_t n = 0;
	int err;

	*only = NULL;
	if (*dataset || !(f->traits & DSV_FMT_DATASETS))
		return 0;
	if ((err = f->list(file, &names, &n, eb)))
		return err;
	for (size_t i = 0; n != 1 && f->default_dataset && i < n; i++)
		if (!strcmp(names[i], f->default_dataset)) { /* it goes first, alone */
			char *t = names[0];
			names[0] = names[i];
			names[i] = t;
			for (size_t k = 1; k < n; k++)
				free(names[k]);
			n = 1;
		}
	if (n != 1)
		err = dsv_errf_at(eb, DSV_ERR_INVALID, file, NULL,
				  "has %zu datasets; name one as %s:/dataset", n, file);
	for (size_t i = 0; i < n; i++)
		if (i || err)
			free(names[i]);
	if (!err)
		*dataset = *only = names[0];
	free(names);
	return err;
}

/* dsv_format_open_parts without the index cache. */
static int open_parts(const dsv_format *f, const char *file, const char *dataset, dsv_source ***out,
		      size_t *n, dsv_errbuf *eb)
{
	dsv_source **one = NULL;
	char *only;
	int err = pick_dataset(f, file, &dataset, &only, eb);

	*out = NULL;
	*n = 0;
	if (!err && f->open_parts)
		err = f->open_parts(file, dataset, out, n, eb);
	else if (!err && !(one = malloc(sizeof(*one))))
		err = dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
	else if (!err && !(err = f->open(file, dataset, one, eb))) {
		*out = one;
		*n = 1;
		one = NULL;
	}
	free(one);
	free(only);
	return err;
}

/* The index cache the opens use (dsv_format_use_index), or NULL. */
static dsv_index *the_index;

void dsv_format_use_index(dsv_index *ix)
{
	the_index = ix;
}

/* The index cache's key of file's dataset (as asked: NULL for none):
 * the file, then a NUL and the dataset. @return its length, 0 when out
 * of memory or too long. */
static size_t index_key(const char *file, const char *dataset, char **key)
{
	size_t fl = strlen(file), dl = dataset ? strlen(dataset) + 1 : 0;
	if (fl + dl > DSV_INDEX_KEY_MAX || !(*key = malloc(fl + dl + 1)))
		return 0;
	memcpy(*key, file, fl + 1);
	if (dataset)
		memcpy(*key + fl + 1, dataset, dl);
	return fl + dl;
}

/* The key of file's dataset and the stamp of file as it is now, when
 * the index cache may hold it (a local regular file of a format with a
 * load hook). @return the key's length, 0: not for the index. */
static size_t index_entry(const dsv_format *f, const char *file, const char *dataset,
			  dsv_index_stamp *stamp, char **key)
{
	struct stat st;
	if (!the_index || !f || !f->load || dsv_url_scheme_len(file) || stat(file, &st) ||
	    !S_ISREG(st.st_mode))
		return 0;
	dsv_index_stamp_of(&st, stamp);
	return index_key(file, dataset, key);
}

/* file's dataset from the index cache, when it holds the file as it is
 * now: 1 with *out set, else 0 (open it); *before gets file's stamp as
 * it was before the open (all zero: none). */
static int from_index(const dsv_format *f, const char *file, const char *dataset, dsv_source **out,
		      dsv_index_stamp *before)
{
	const void *blob;
	size_t len, n;
	char *key = NULL;
	dsv_errbuf eb;
	int hit = 0;

	*before = (dsv_index_stamp){ 0 };
	if (!(n = index_entry(f, file, dataset, before, &key)))
		return 0;
	if (dsv_index_find(the_index, key, n, before, f->name, &blob, &len)) {
		hit = f->load(file, dataset, blob, len, before, out, &eb) == 0;
		dsv_index_count_load(hit);
	}
	if (hit)
		dsv_source_settle(*out);
	free(key);
	return hit;
}

/* The stamp an entry of file is kept under: that of the file s opened,
 * when s is file's own; else (a Megatron .idx, whose source is the .bin
 * beside it) file's, when it is the same before the open (*before) and
 * after, so that what the open read is what the stamp says. @return 0,
 * or -1: not kept. */
static int entry_stamp(const char *file, const dsv_source *s, const dsv_index_stamp *before,
		       dsv_index_stamp *out)
{
	struct stat st;
	if (!strcmp(dsv_source_get_info(s)->path, file))
		return dsv_source_stamp(s, out);
	if (!before->size && !before->ino && !before->mtime_ns)
		return -1;
	if (stat(file, &st) || !S_ISREG(st.st_mode))
		return -1;
	dsv_index_stamp_of(&st, out);
	return memcmp(out, before, sizeof(*out)) ? -1 : 0;
}

/* Keeps what opening file's dataset (as asked) learnt of s in the index
 * cache, for the next mount (best effort: a source not kept is opened
 * again then); before: file's stamp before the open (from_index's). */
static void to_index(const dsv_format *f, const char *file, const char *dataset,
		     const dsv_source *s, const dsv_index_stamp *before)
{
	dsv_index_buf b = { 0 };
	dsv_index_stamp stamp;
	char *key = NULL;
	size_t n;

	if (!the_index || !f->save || entry_stamp(file, s, before, &stamp) ||
	    !(n = index_key(file, dataset, &key)))
		return;
	if (!f->save(s, &b))
		(void)dsv_index_add(the_index, key, n, &stamp, f->name, b.p, b.len);
	free(b.p);
	free(key);
}

int dsv_format_open(const dsv_format *f, const char *file, const char *dataset, dsv_source **out,
		    dsv_errbuf *eb)
{
	char *only;
	const char *asked = dataset;
	dsv_index_stamp before;
	int err;

	if (from_index(f, file, dataset, out, &before))
		return 0;
	err = pick_dataset(f, file, &dataset, &only, eb);
	*out = NULL;
	if (!err)
		err = f->open(file, dataset, out, eb);
	if (!err) {
		to_index(f, file, asked, *out, &before);
		dsv_source_settle(*out);
	}
	free(only);
	return err;
}

int dsv_format_open_parts(const dsv_format *f, const char *file, const char *dataset,
			  dsv_source ***out, size_t *n, dsv_errbuf *eb)
{
	dsv_source *got;
	dsv_index_stamp before;
	if (from_index(f, file, dataset, &got, &before)) {
		if (!(*out = malloc(sizeof(**out)))) {
			dsv_source_close(got);
			*n = 0;
			return dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
		}
		(*out)[0] = got;
		*n = 1;
		return 0;
	}
	int err = open_parts(f, file, dataset, out, n, eb);
	if (!err && *n == 1)
		to_index(f, file, dataset, (*out)[0], &before);
	for (size_t i = 0; !err && i < *n; i++)
		dsv_source_settle((*out)[i]);
	return err;
}

int dsv_format_open_raw(const char *file, const dsv_raw_layout *l, dsv_source **out, dsv_errbuf *eb)
{
	char spec[96 + 24 * DSV_MAX_DIMS];
	size_t at = (size_t)snprintf(spec, sizeof(spec), "raw %d%s @%llu", (int)l->dtype,
				     l->int24 ? " int24" : "", (unsigned long long)l->offset);
	for (int i = 0; i < l->ndim && i < DSV_MAX_DIMS; i++)
		at += (size_t)snprintf(spec + at, sizeof(spec) - at, " %lld",
				       (long long)l->shape[i]);
	dsv_index_stamp before;
	if (from_index(&dsv_format_raw, file, spec, out, &before))
		return 0;
	int err = dsv_source_open_raw_layout(file, l, out, eb);
	if (!err) {
		to_index(&dsv_format_raw, file, spec, *out, &before);
		dsv_source_settle(*out);
	}
	return err;
}

void dsv_format_prepare_spec(char *const *files, size_t n, const char *dataset)
{
	char **rest = the_index ? malloc((n ? n : 1) * sizeof(*rest)) : NULL;
	size_t m = 0;
	if (!rest) {
		dsv_format_prepare(files, n);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		const dsv_format *f = by_name(files[k], 0);
		dsv_index_stamp stamp;
		char *key = NULL;
		size_t len;
		if (!f || !f->prepare)
			continue; /* nothing to ready */
		len = index_entry(f, files[k], dataset, &stamp, &key);
		if (!len || !dsv_index_has(the_index, key, len, &stamp, f->name))
			rest[m++] = files[k];
		free(key);
	}
	dsv_format_prepare(rest, m);
	free(rest);
}

const char *dsv_format_nouns(unsigned skip, char *buf, size_t cap)
{
	size_t at = 0, left = 0;
	skip |= DSV_FMT_SHARED_NAME; /* the other format of its extension names it */
	for (size_t i = 0; i < NFORMATS; i++)
		left += !(formats[i]->traits & skip);
	buf[0] = '\0';
	for (size_t i = 0; i < NFORMATS && at < cap; i++) {
		if (formats[i]->traits & skip)
			continue;
		left--;
		int n = snprintf(buf + at, cap - at, "%s%s", formats[i]->noun,
				 left > 1    ? ", "
				 : left == 1 ? ", or "
					     : "");
		at += n > 0 ? (size_t)n : 0;
	}
	return buf;
}

int dsv_source_open(const char *spec, dsv_source **out, dsv_errbuf *eb)
{
	char *file, *dataset, what[512];
	int err;
	const dsv_format *f = dsv_format_of_spec(spec, 0, &file, &dataset, NULL, &err);

	*out = NULL;
	if (err)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (f)
		err = dsv_format_open(f, file, dataset, out, eb);
	else
		err = dsv_errf_at(eb, DSV_ERR_INVALID, spec, NULL,
				  "unknown source type (expected %s)",
				  dsv_format_nouns(0, what, sizeof(what)));
	free(file);
	free(dataset);
	return err;
}
