/*
 * A manifest's source line: one file ("x.npy", "x.nii", "x.h5:/dset", "x.h5:dset",
 * a Zarr array's directory, a raw file with source_dtype and source_shape),
 * or a glob(3) pattern in its file part ("/data/s*.h5:/betas") that
 * expands to every match, in natural order (wildcards may stand in
 * directories too, as in a BIDS tree's sub-NN/eeg/ folders), each opened as a source of the
 * view, in the format the registry (formats/formats.h) tells; a glob's
 * files are opened by a few threads at once.
 */
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/str.h"
#include "formats/formats.h"
#include "formats/raw/raw.h"
#include "formats/tokens/tokens.h"
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

/* What one source spec opened: its source, or an HDF5 virtual dataset's
 * parts, parts[0 .. n), each owned, and the array. */
typedef struct opened {
	dsv_source **parts;
	size_t n;
} opened;

/* Adds o's sources (taken: added or closed) to v in order. */
static int add_opened(dsv_view *v, opened *o, dsv_errbuf *eb)
{
	size_t k = 0;
	int err = 0;
	for (; !err && k < o->n; k++)
		err = add_checked(v, o->parts[k], eb);
	for (; k < o->n; k++)
		dsv_source_close(o->parts[k]);
	free(o->parts);
	*o = (opened){ 0 };
	return err;
}

/* Opens one source (a resolved path, "file.h5:/dset" included) into o:
 * the format the registry tells, or, for a file no format claims, raw
 * elements where the line gives their dtype and shape. Sources of
 * different paths may be opened in parallel threads.
 * @return 0, or a dsv_err with eb set. */
static int open_sources(const char *path, const dsv_spec_opts *so, opened *o, dsv_errbuf *eb)
{
	dsv_source *s = NULL;
	char *file, *dataset;
	struct stat st;
	int err;
	/* a name no format claims: its first bytes (an llm.c token file's
	 * .bin), unless the line says it is raw */
	const dsv_raw_layout *raw = so ? so->raw : NULL;
	const dsv_format *f = dsv_format_of_spec(path, raw ? 0 : DSV_DETECT_MAGIC, &file, &dataset,
						 NULL, &err);

	*o = (opened){ 0 };
	if (err)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (so && so->docs && f != &dsv_format_megatron)
		err = dsv_errf_at(eb, DSV_ERR_INVALID, file, NULL,
				  "rows = documents: not a Megatron index (.idx), whose documents "
				  "it serves");
	else if (so && so->docs)
		err = dsv_megatron_open_documents(file, so->docs, &s, eb);
	else if (f)
		err = dsv_format_open_parts(f, file, dataset, &o->parts, &o->n, eb);
	else if (raw)
		err = dsv_format_open_raw(path, raw, &s, eb);
	else if (!dsv_url_scheme_len(file) && stat(file, &st) < 0)
		err = dsv_errf_at(eb, errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, file, NULL,
				  "%s%s", strerror(errno), dsv_source_open_hint(errno));
	else
		err = dsv_format_raw.open(path, NULL, &s, eb);
	free(file);
	free(dataset);
	if (!err && s) {
		if (!(o->parts = malloc(sizeof(*o->parts)))) {
			dsv_source_close(s);
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		}
		o->parts[0] = s;
		o->n = 1;
	}
	return err;
}

/* A glob's matches opened by a few threads, each taking the next file:
 * their headers are read in parallel (a view of thousands of files
 * waits on the disk, not on one read at a time). */
typedef struct batch {
	char **files;
	const char *dataset;
	const dsv_spec_opts *so;
	opened *out;
	size_t n;
	pthread_mutex_t lock;
	size_t failed; /* the first file in order that failed (n: none), under lock */
	int err;
	dsv_errbuf eb; /* its error */
} batch;

/* Opens file k of the batch (dsv_mf_parallel's work); nonzero once a
 * file before it failed: nothing after a failure is added. */
static int open_one_of(void *arg, size_t k)
{
	batch *b = arg;
	dsv_errbuf eb;
	char *one;
	int err;

	pthread_mutex_lock(&b->lock);
	int past = k > b->failed;
	pthread_mutex_unlock(&b->lock);
	if (past)
		return 1;
	if (asprintf(&one, "%s%s%s", b->files[k], b->dataset ? ":" : "",
		     b->dataset ? b->dataset : "") < 0)
		err = dsv_errf(&eb, DSV_ERR_NOMEM, "out of memory");
	else {
		err = open_sources(one, b->so, &b->out[k], &eb);
		free(one);
	}
	pthread_mutex_lock(&b->lock);
	if (err && k < b->failed) {
		b->failed = k;
		b->err = err;
		b->eb = eb;
	}
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* Opens files (each with dataset) and adds their sources to v in their
 * order. @return 0, or the first failure in order with eb set. */
static int open_files(dsv_view *v, char **files, size_t n, const char *dataset,
		      const dsv_spec_opts *so, dsv_errbuf *eb)
{
	batch b = { .files = files, .dataset = dataset, .so = so, .n = n, .failed = n };
	int err = 0;

	if (!(b.out = calloc(n ? n : 1, sizeof(*b.out))))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&b.lock, NULL);
	dsv_format_prepare_spec(files, n, dataset);
	dsv_mf_parallel(n, open_one_of, &b);
	pthread_mutex_destroy(&b.lock);
	for (size_t k = 0; k < n; k++) {
		if (!err && k == b.failed) {
			err = b.err;
			*eb = b.eb;
		}
		if (!err)
			err = add_opened(v, &b.out[k], eb);
		for (size_t j = 0; err && j < b.out[k].n; j++)
			dsv_source_close(b.out[k].parts[j]);
		if (err)
			free(b.out[k].parts);
	}
	free(b.out);
	return err;
}

/* A source spec whose file part is a glob pattern (and no file of that
 * name): every file it matches, in natural order ("s2" before "s10"),
 * each with the spec's dataset. @return 0, or a dsv_err with eb set. */
static int open_glob(dsv_view *v, const char *file, const char *dataset, const dsv_spec_opts *so,
		     dsv_errbuf *eb)
{
	glob_t g;
	int rc = glob(file, GLOB_ERR, NULL, &g), err;

	if (rc == GLOB_NOMATCH)
		return dsv_errf_at(eb, DSV_ERR_NOTFOUND, file, NULL, "the pattern matches no file");
	if (rc)
		return dsv_errf_at(eb, rc == GLOB_NOSPACE ? DSV_ERR_NOMEM : DSV_ERR_IO, file, NULL,
				   "cannot expand the pattern");
	dsv_natural_sort(g.gl_pathv, g.gl_pathc);
	err = open_files(v, g.gl_pathv, g.gl_pathc, dataset, so, eb);
	globfree(&g);
	return err;
}

/* A source spec whose s3:// URL holds a pattern: every object it
 * matches (s3glob.c), in natural order, each with the spec's dataset. */
static int open_s3_glob(dsv_view *v, const char *file, const char *dataset, const dsv_spec_opts *so,
			dsv_errbuf *eb)
{
	char **urls;
	size_t n;
	int err = dsv_s3_glob(file, &urls, &n, eb);
	if (err)
		return err;
	err = open_files(v, urls, n, dataset, so, eb);
	for (size_t i = 0; i < n; i++)
		free(urls[i]);
	free(urls);
	return err;
}

int dsv_view_open_spec(dsv_view *v, const char *path, const dsv_spec_opts *so, dsv_errbuf *eb)
{
	char *file, *dataset;
	struct stat st;
	int err;

	if (dsv_spec_split(path, &file, &dataset))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	/* an object URL is a pattern by '*' and '[' alone ('?' starts its query) */
	if (!dsv_url_scheme_len(file) && dsv_has_glob(file) && stat(file, &st) < 0)
		err = open_glob(v, file, dataset, so, eb);
	else if (!strncmp(file, "s3://", 5) && strpbrk(file + 5, "*["))
		err = open_s3_glob(v, file, dataset, so, eb);
	else {
		opened o;
		err = open_sources(path, so, &o, eb);
		if (!err)
			err = add_opened(v, &o, eb);
	}
	free(file);
	free(dataset);
	return err;
}
