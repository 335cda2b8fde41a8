/*
 * The reader: the engine in the calling process, without a mount
 * (dsview/reader.h). Opening takes the mount's steps without FUSE: the
 * options read with the manifest's own [dsview] key parser, the disk
 * cache set, the source opened as `dsview mount` opens it, an engine
 * started without a sink (nothing is made ahead of a reader that is in
 * this process: it asks for what it reads).
 *
 * Fork: a child made by fork inherits the reader but not the parent's
 * threads, curl connections or device context, and possibly locks other
 * threads held. pthread_atfork's child handler counts forks; a call that
 * finds its reader opened in an earlier generation opens the source
 * again (dsv_reader_engine) and leaves the parent's engine untouched (its memory
 * is shared with the parent until written; freeing it could take a lock
 * a parent's thread held). The HDF5 locks are taken around every fork
 * (src/formats/h5/lib.c), so the library's state the child inherits is
 * whole.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/cgroup.h"
#include "common/defaults.h"
#include "common/log.h"
#include "common/str.h"
#include "manifest/manifest.h"
#include "net/net.h"
#include "reader/reader_i.h"

static atomic_uint fork_gen;
static pthread_mutex_t reopen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
	atomic_fetch_add(&fork_gen, 1);
	pthread_mutex_init(&reopen_lock, NULL); /* a parent's thread may have held it */
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, child_after_fork);
}

/* One option "key=value" (or "strict") of len bytes at s into r and o
 * (a scratch manifest holding [dsview]'s keys). @return 0, or a dsv_err
 * with eb set. */
static int take_option(dsv_reader *r, dsv_manifest *o, const char *s, size_t len, dsv_errbuf *eb)
{
	char key[64], *value;
	char *opt = strndup(s, len);
	int err = 0;

	if (!opt)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	value = strchr(opt, '=');
	if (value)
		*value++ = '\0';
	snprintf(key, sizeof(key), "%s", opt);
	if (!strcmp(key, "strict") && (!value || !strcmp(value, "1") || !strcmp(value, "true"))) {
		r->flags |= DSV_FROM_FILE_STRICT;
	} else if (!value) {
		err = dsv_errf_key(eb, DSV_ERR_INVALID, key, "option '%s': expected key=value",
				   key);
	} else if (!strcmp(key, "log_level")) {
		int level = dsv_log_parse_level(value);
		if (level < 0)
			err = dsv_errf_key(eb, DSV_ERR_INVALID, key,
					   "log_level '%s' must be error, warning or info", value);
		else
			dsv_log_set_level(level);
	} else if (!strcmp(key, "dtype")) {
		r->dtype = dsv_dtype_parse(value);
		r->has_dtype = 1;
		if (!dsv_dtype_is_output(r->dtype))
			err = dsv_errf_key(eb, DSV_ERR_INVALID, key,
					   "dtype '%s' must be float32, bfloat16, float16 or an "
					   "integer type (int8 ... uint64)",
					   value);
	} else if ((err = dsv_manifest_set(o, NULL, key, value, DSV_NET_FROM_OPTION, eb))) {
		if (err == DSV_ERR_NOTFOUND)
			err = dsv_errf_key(eb, DSV_ERR_INVALID, key,
					   "unknown option '%s' (expected dtype, strict, "
					   "log_level, " DSV_MANIFEST_KEYS ")",
					   key);
		else
			eb->code = err = DSV_ERR_INVALID;
	}
	free(opt);
	return err;
}

/* options ("k=v,k=v", NULL: none) into r and o. @return 0 or a dsv_err. */
static int parse_options(dsv_reader *r, dsv_manifest *o, const char *options, dsv_errbuf *eb)
{
	const char *s = options;
	int err;

	r->dtype = dsv_dtype_parse(DSV_DEFAULT_DTYPE);
	dsv_log_set_level(DSV_LOG_WARN); /* a library says what goes wrong, not what it does */
	while (s && *s) {
		size_t len = strcspn(s, ",");
		if (len && (err = take_option(r, o, s, len, eb)))
			return err;
		s += len + (s[len] == ',');
	}
	r->threads = o->has_threads ? o->threads : DSV_DEFAULT_READER_THREADS;
	return 0;
}

/* The disk cache of objects' bytes: the options' directory, else the
 * manifest's (m NULL: before it is read). @return 0 or a dsv_err. */
static int disk_cache(const dsv_manifest *o, const dsv_manifest *m, dsv_errbuf *eb)
{
	const dsv_manifest *from = o->disk_cache ? o : m;
	uint64_t size;
	if (!from || !from->disk_cache || (m && o->disk_cache))
		return 0;
	size = o->has_disk_cache_size      ? o->disk_cache_size
	       : from->has_disk_cache_size ? from->disk_cache_size
					   : (uint64_t)DSV_DEFAULT_DISK_CACHE_GIB << 30;
	return dsv_net_disk_cache(from->disk_cache, size, eb);
}

/* The engine's settings: the options' over the manifest's over the
 * defaults, as the mount takes them. @return 0 or a dsv_err. */
static int engine_opts(dsv_reader *r, const dsv_manifest *o, const dsv_manifest *m, dsv_errbuf *eb)
{
	uint64_t usable = dsv_usable_mem(dsv_cgroup_mem_limit(0));
	int dev;

	r->eo = (dsv_engine_opts){ 0 };
	r->eo.cache_size = o->has_cache_size   ? o->cache_size
			   : m->has_cache_size ? m->cache_size
					       : dsv_default_cache_size(usable);
	if (r->eo.cache_size > usable)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "cache_size",
				    "cache_size exceeds this machine's memory or memory limit "
				    "(%.1f GiB)",
				    (double)usable / (1u << 30));
	snprintf(r->gpu, sizeof(r->gpu), "%s",
		 o->has_gpu   ? o->gpu
		 : m->has_gpu ? m->gpu
			      : DSV_DEFAULT_GPU);
	r->eo.gpu = r->gpu;
	r->eo.gpu_cache = o->has_gpu_cache ? o->gpu_cache : m->has_gpu_cache ? m->gpu_cache : 0;
	if (r->eo.gpu_cache && !dsv_parse_gpu(r->gpu, &dev) && dev == DSV_GPU_OFF)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "gpu_cache",
				    "gpu_cache needs a GPU, and gpu is off");
	return 0;
}

/* The engine over r's source, started. @return 0 or a dsv_err. */
static int open_engine(dsv_reader *r, dsv_engine **out, dsv_errbuf *eb)
{
	dsv_manifest *m;
	int err;

	/* the index cache of the options, as the command line's */
	dsv_manifest_index_dirs(r->o.index_cache, r->o.disk_cache);
	err = dsv_manifest_open(r->source, r->dtype, r->flags, &m, eb);
	dsv_manifest_index_dirs(NULL, NULL);
	if (err)
		return err;
	if ((err = disk_cache(&r->o, m, eb)) || (err = engine_opts(r, &r->o, m, eb)) ||
	    (err = dsv_engine_new(m, &r->eo, out, eb))) {
		dsv_manifest_free(m);
		return err;
	}
	if ((err = dsv_engine_start(*out, NULL, eb))) {
		dsv_engine_free(*out);
		*out = NULL;
	}
	return err;
}

int dsv_reader_open(const char *source, const char *options, dsv_reader **out, dsv_errbuf *eb)
{
	dsv_reader *r = calloc(1, sizeof(*r));
	dsv_engine *e = NULL;
	int err;

	*out = NULL;
	dsv_errbuf_clear(eb);
	pthread_once(&atfork_once, register_atfork);
	if (!r || !(r->source = strdup(source)) || (options && !(r->options = strdup(options)))) {
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((err = parse_options(r, &r->o, options, eb)))
		goto fail;
	if (r->has_dtype && dsv_has_ext(source, ".ini")) {
		err = dsv_errf_key(
			eb, DSV_ERR_INVALID, "dtype",
			"dtype applies to a SOURCE that is not a manifest; set dtype per "
			"view in %s",
			source);
		goto fail;
	}
	if ((err = disk_cache(&r->o, NULL, eb)) || (err = open_engine(r, &e, eb)))
		goto fail;
	atomic_store(&r->e, e);
	atomic_store(&r->gen, atomic_load(&fork_gen));
	if ((err = dsv_reader_gather_start(r, eb)))
		goto fail;
	*out = r;
	return 0;
fail:
	dsv_reader_close(r);
	return err;
}

void dsv_reader_close(dsv_reader *r)
{
	if (!r)
		return;
	/* a parent's threads and engine are left alone in a child (above) */
	if (atomic_load(&r->gen) == atomic_load(&fork_gen)) {
		dsv_reader_gather_stop(r);
		dsv_engine_free(atomic_load(&r->e));
	}
	free(r->o.disk_cache);
	free(r->o.index_cache);
	free(r->options);
	free(r->source);
	free(r);
}

/* Whether engine e serves the views its parent's old did, in order. */
static int same_views(const dsv_engine *e, const dsv_engine *old)
{
	size_t n = dsv_engine_nviews(e);
	if (n != dsv_engine_nviews(old))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(dsv_engine_view_name(e, i), dsv_engine_view_name(old, i)) ||
		    dsv_engine_file_size(e, DSV_ENGINE_FILE(i, 0)) !=
			    dsv_engine_file_size(old, DSV_ENGINE_FILE(i, 0)))
			return 0;
	return 1;
}

/* The source opened again in a child made by fork: net's connections
 * are the parent's, and a device the parent used is not the child's. */
static int reopen(dsv_reader *r, dsv_errbuf *eb)
{
	dsv_engine *old = atomic_load(&r->e), *e = NULL;
	int err;

	dsv_net_after_fork();
	if (!strcmp(dsv_engine_backend(old), "cuda")) {
		snprintf(r->o.gpu, sizeof(r->o.gpu), "off");
		r->o.has_gpu = r->o.has_gpu_cache = 1;
		r->o.gpu_cache = 0;
	}
	if ((err = open_engine(r, &e, eb)))
		return err;
	if (!same_views(e, old)) {
		dsv_engine_free(e);
		return dsv_errf_at(
			eb, DSV_ERR_IO, r->source, NULL,
			"changed since this process's parent opened it (its views differ)");
	}
	atomic_store(&r->e, e);
	return dsv_reader_gather_start(r, eb);
}

int dsv_reader_engine(dsv_reader *r, dsv_engine **e, dsv_errbuf *eb)
{
	unsigned gen = atomic_load(&fork_gen);
	int err = 0;

	if (atomic_load(&r->gen) == gen) {
		*e = atomic_load(&r->e);
		return 0;
	}
	pthread_mutex_lock(&reopen_lock);
	if (atomic_load(&r->gen) != gen) {
		r->gather = NULL; /* the parent's threads are not here */
		if (!(err = reopen(r, eb)))
			atomic_store(&r->gen, gen);
	}
	pthread_mutex_unlock(&reopen_lock);
	*e = atomic_load(&r->e);
	return err;
}

size_t dsv_reader_nviews(const dsv_reader *r)
{
	return dsv_engine_nviews(atomic_load(&r->e));
}

int dsv_reader_find(const dsv_reader *r, const char *name)
{
	const dsv_engine *e = atomic_load(&r->e);
	for (size_t i = 0; i < dsv_engine_nviews(e); i++)
		if (!strcmp(dsv_engine_view_name(e, i), name))
			return (int)i;
	return -1;
}

int dsv_reader_view_get(const dsv_reader *r, size_t i, dsv_reader_view *out)
{
	const dsv_engine *e = atomic_load(&r->e);
	dsv_view_info vi;
	if (i >= dsv_engine_nviews(e))
		return DSV_ERR_INVALID;
	dsv_engine_view_info(e, i, &vi);
	*out = (dsv_reader_view){ .name = vi.name,
				  .json = dsv_engine_view_json(e, i, NULL),
				  .dtype = vi.dtype,
				  .ndim = vi.ndim,
				  .rows = vi.ndim ? vi.shape[0] : 1,
				  .row_bytes = vi.row_bytes,
				  .nbytes = vi.nbytes };
	memcpy(out->shape, vi.shape, sizeof(out->shape));
	return 0;
}

const char *dsv_reader_skipped_json(const dsv_reader *r)
{
	return dsv_engine_skipped_json(atomic_load(&r->e));
}

int dsv_reader_stats(dsv_reader *r, char *buf, size_t cap)
{
	dsv_engine *e;
	json_t *obj;
	char *text = NULL;
	int n = dsv_reader_engine(r, &e, NULL);

	if (n)
		return n;
	obj = json_object();
	n = DSV_ERR_NOMEM;
	if (obj && !dsv_engine_stats_add(e, obj) &&
	    (text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		n = snprintf(buf, cap, "%s", text);
	free(text);
	json_decref(obj);
	return n;
}
