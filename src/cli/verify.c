/*
 * dsview verify: decodes every chunk of every source and reports the bad
 * ones.
 *
 * The work is every chunk of every source in one global order (source 0's
 * chunks, then source 1's, ...). Worker threads take indices from one
 * atomic counter, so a slow chunk never holds the others up, and read each
 * chunk exactly as a mount would: dsv_source_read_chunk does the pread,
 * the Fletcher32 check and the LZ4/zstd/LZF decode with its size checked, or goes
 * through the HDF5 library for fallback sources (serialised by the HDF5
 * lock, so those gain nothing from threads, and lose nothing either).
 * Each worker owns its buffers, sized for the largest chunk of any source.
 * Bad chunks are collected under a mutex and printed at the end, sorted
 * (verify_report.c), so the output does not depend on the thread count.
 *
 * A dataset dsview refuses to open cannot be checked; verify says so and
 * fails, since someone running verify wants to know.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/raw_opts.h"
#include "cli/target.h"
#include "cli/verify_i.h"
#include "common/clock.h"
#include "dsview/source.h"
#include "dsview/view.h"
#include "formats/formats.h"
#include "source/source.h"

static const char verify_usage[] =
	"usage: dsview verify [--threads N] [--disk-cache DIR] PATH\n"
	"       dsview verify --source-dtype T --source-shape S [--source-offset N] RAWFILE\n"
	"\n"
	"Reads and decodes every chunk, as a mount would, and checks every\n"
	"checksum. PATH: an HDF5 file (every dataset), one dataset of it\n"
	"(file.h5:/path/dset), a .npy, a .nii, an .edf/.bdf/.set/.vhdr recording, a\n"
	"Zarr array, a Zarr group (every array), or a manifest (every source of\n"
	"every view, each once); a Zarr array or group may be an s3:// prefix. Bad\n"
	"chunks are printed one per line, sorted, with the row range and the\n"
	"reason (for data the HDF5 library decodes, the rows of the file's own bad\n"
	"chunk); a dataset dsview refuses to serve is reported as not checked.\n"
	"Then one summary line.\n"
	"\n"
	"Exit status: 0 every dataset checked and every chunk good, 1 a bad chunk\n"
	"(or PATH cannot be opened), 3 no bad chunk but some datasets not checked\n"
	"(listed), 2 an internal failure.\n"
	"\n"
	"options:\n"
	"  --threads N   decoding threads (default: all cores)\n"
	"  --disk-cache DIR     keep the stored bytes that objects' GETs fetch\n"
	"                (s3://, https://) in DIR, as mount does (a manifest's\n"
	"                disk_cache too): a mount of them next reads DIR\n"
	"  --disk-cache-size S  the most DIR holds (default " DSV_DEFAULT_DISK_CACHE_TEXT
	")\n" DSV_CLI_RAW_USAGE "  -h, --help    this help\n";

/* Exit status: nothing damaged, but some datasets were not checked. */
#define EXIT_UNCHECKED 3

/* Worker buffers together stay under this, whatever the chunk size. */
#define VERIFY_BUFFER_BUDGET (1ull << 30)

static int add_source(vjob *j, dsv_source *s, int owned, const char *label, const char *reason)
{
	if (j->nsrcs == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 8;
		vsrc *p = realloc(j->srcs, cap * sizeof(*p));
		if (!p)
			return DSV_ERR_NOMEM;
		j->srcs = p;
		j->cap = cap;
	}
	vsrc *v = &j->srcs[j->nsrcs];
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->owned = owned;
	v->label = strdup(label);
	v->reason = reason ? strdup(reason) : NULL;
	if (!v->label || (reason && !v->reason)) {
		free(v->label);
		free(v->reason);
		return DSV_ERR_NOMEM;
	}
	j->nsrcs++;
	return 0;
}

static void job_free(vjob *j)
{
	for (size_t i = 0; i < j->nsrcs; i++) {
		if (j->srcs[i].owned)
			dsv_source_close(j->srcs[i].s);
		free(j->srcs[i].label);
		free(j->srcs[i].reason);
	}
	free(j->srcs);
	free(j->bads);
}

/* Every dataset of a file of datasets (HDF5), or the one named, opened as
 * its format's. */
static int collect_datasets(vjob *j, const dsv_target *t, dsv_errbuf *eb)
{
	char **names = NULL, label[4200];
	size_t n = 0;
	int err;

	/* A cut or damaged file fails the source's open or the listing
	 * with the library's own reason (dsv_h5_open_failed). */
	if (t->dataset) {
		dsv_source *s;
		if ((err = t->format->open(t->file, t->dataset, &s, eb)))
			return err;
		const dsv_source_info *si = dsv_source_get_info(s);
		err = add_source(j, s, 1,
				 dsv_target_label(label, sizeof(label), si->path, si->dataset),
				 NULL);
		if (err) {
			dsv_source_close(s);
			return dsv_errf(eb, err, "out of memory");
		}
		return 0;
	}
	if ((err = t->format->list(t->file, &names, &n, eb)))
		return err;
	for (size_t i = 0; !err && i < n; i++) {
		dsv_source *s = NULL;
		dsv_errbuf oeb;
		dsv_target_label(label, sizeof(label), t->file, names[i]);
		int oerr = t->format->open(t->file, names[i], &s, &oeb);
		if (oerr == DSV_ERR_NOMEM || oerr == DSV_ERR_INTERNAL) {
			err = dsv_errf(eb, oerr, "%s", oeb.msg);
			break;
		}
		err = add_source(j, s, 1, label,
				 oerr ? dsv_cli_reason(&oeb, t->file, names[i]) : NULL);
		if (err) {
			dsv_source_close(s);
			err = dsv_errf(eb, err, "out of memory");
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

/* Every source of every view, each once; the manifest keeps ownership. */
static int collect_manifest(vjob *j, const dsv_manifest *m, dsv_errbuf *eb)
{
	char label[4200];
	for (size_t i = 0; i < m->nviews; i++) {
		dsv_view_info vi;
		const dsv_view_info *v = &vi;
		dsv_view_get_info(m->views[i], &vi);
		for (size_t k = 0; k < v->nsources; k++) {
			const dsv_source_info *si = dsv_source_get_info(v->sources[k]);
			int seen = 0;
			for (size_t q = 0; q < j->nsrcs && !seen; q++)
				seen = dsv_source_same_file(dsv_source_get_info(j->srcs[q].s), si);
			if (seen)
				continue;
			if (add_source(
				    j, v->sources[k], 0,
				    dsv_target_label(label, sizeof(label), si->path, si->dataset),
				    NULL))
				return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		}
	}
	return 0;
}

/* A Zarr group's arrays, and those it cannot serve as not checked. */
static int collect_group(vjob *j, const dsv_manifest *m, dsv_errbuf *eb)
{
	char label[4200];
	int err = collect_manifest(j, m, eb);
	for (size_t i = 0; i < m->nskipped && !err; i++) {
		snprintf(label, sizeof(label), "%s/%s", m->path, m->skipped[i].path);
		if (add_source(j, NULL, 0, label, m->skipped[i].reason))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	return err;
}

/* The source holding global chunk g: the last with first <= g (a source
 * with no chunks shares its first with the next one, so it is skipped). */
static size_t find_source(const vjob *j, uint64_t g)
{
	size_t lo = 0, hi = j->nsrcs;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (j->srcs[mid].first <= g)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* eb (may be NULL): which grid chunk failed, as dsv_source_read_chunk says. */
static void record_bad(vjob *j, size_t src, const dsv_chunk_ref *ref, int err, int table,
		       const dsv_errbuf *eb)
{
	pthread_mutex_lock(&j->lock);
	if (j->nbad == j->bad_cap) {
		size_t cap = j->bad_cap ? 2 * j->bad_cap : 16;
		vbad *p = realloc(j->bads, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&j->lock);
			atomic_store(&j->internal, DSV_ERR_NOMEM);
			return;
		}
		j->bads = p;
		j->bad_cap = cap;
	}
	j->bads[j->nbad++] = (vbad){ .src = src, .ref = *ref, .err = err, .table = table };
	if (ref->grid && eb && eb->code) /* the grid chunk that failed (for Zarr, its file) */
		snprintf(j->bads[j->nbad - 1].file, sizeof(j->bads[0].file), "%.*s",
			 (int)sizeof(j->bads[0].file) - 1, eb->msg);
	pthread_mutex_unlock(&j->lock);
}

typedef struct band_ctx {
	vjob *j;
	size_t si;
	uint64_t esize;
} band_ctx;

static void band_done(void *arg, const dsv_chunk_ref *part, int err, const dsv_errbuf *eb)
{
	band_ctx *b = arg;
	if (err)
		record_bad(b->j, b->si, part, err, 0, eb);
	else
		atomic_fetch_add(&b->j->bytes, part->nelems * b->esize);
}

/* A fallback chunk, or a grid's band of several chunk-rows, that failed,
 * band by band of the file's own chunks:
 * records the bad bands (the rows a mount fails too) and counts the good
 * ones' bytes. @return 0, or -1 if it cannot be narrowed down. */
static int narrow_fallback(vjob *j, size_t si, const dsv_chunk_ref *ref, void *dst)
{
	const dsv_source *s = j->srcs[si].s;
	band_ctx b = { j, si, dsv_dtype_size(dsv_source_get_info(s)->dtype) };
	uint64_t band = dsv_source_fallback_band(s);

	if (!band || band >= ref->nelems)
		return -1;
	(void)dsv_source_read_fallback_bands(s, ref, 0, ref->nelems, dst, j->dst_cap, band_done,
					     &b);
	return 0;
}

static void *worker(void *arg)
{
	vjob *j = arg;
	/* +1: malloc(0) may return NULL, and a zero-size source is fine. */
	void *dst = malloc(j->dst_cap + 1);
	dsv_errbuf *eb = malloc(sizeof(*eb)); /* which grid chunk failed */

	if (!dst || !eb)
		atomic_store(&j->internal, DSV_ERR_NOMEM);
	while (dst && eb && !atomic_load(&j->internal)) {
		uint64_t g = atomic_fetch_add(&j->next, 1);
		if (g >= j->total)
			break;
		size_t si = find_source(j, g);
		const vsrc *v = &j->srcs[si];
		dsv_chunk_ref ref = { .index = g - v->first };
		dsv_errbuf_clear(eb);
		int err = dsv_source_chunk(v->s, g - v->first, &ref);
		if (!err)
			err = dsv_source_decode_chunk(v->s, &ref, dst, j->dst_cap, eb);
		int table = !err && (err = dsv_source_check_lz4_table(v->s, &ref)) != 0;
		if (err && !((ref.fallback || ref.grid) && !dsv_verify_internal(err) &&
			     narrow_fallback(j, si, &ref, dst) == 0))
			record_bad(j, si, &ref, err, table, eb);
		else if (!err)
			atomic_fetch_add(&j->bytes,
					 ref.nelems *
						 dsv_dtype_size(dsv_source_get_info(v->s)->dtype));
		atomic_fetch_add(&j->done, 1);
	}
	free(eb);
	free(dst);
	pthread_mutex_lock(&j->lock);
	j->finished++;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* Runs the workers, drawing progress until they are done. @return the
 * number of threads started (0: none could be). */
static int run_workers(vjob *j, int nthreads)
{
	pthread_t *tids = calloc((size_t)nthreads, sizeof(*tids));
	dsv_progress bar;
	int started = 0;

	if (!tids)
		return 0;
	for (; started < nthreads; started++)
		if (pthread_create(&tids[started], NULL, worker, j))
			break;
	if (started == 0) {
		free(tids);
		return 0;
	}
	dsv_progress_start(&bar, "verify", j->total, "chunks");
	pthread_mutex_lock(&j->lock);
	while (j->finished < started) {
		struct timespec ts;
		dsv_deadline_ms(&ts, 100);
		pthread_cond_timedwait(&j->cond, &j->lock, &ts);
		pthread_mutex_unlock(&j->lock);
		dsv_progress_update(&bar, atomic_load(&j->done), atomic_load(&j->bytes), 0, 0);
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	/* the finished bar, once, even when it all took under 0.1 s */
	dsv_progress_update(&bar, atomic_load(&j->done), atomic_load(&j->bytes), 0, 1);
	dsv_progress_end(&bar);
	free(tids);
	return started;
}

int dsv_cmd_verify(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 'T' },
		{ "disk-cache", required_argument, NULL, 'K' },
		{ "disk-cache-size", required_argument, NULL, 'k' },
		{ "dtype", required_argument, NULL, 'D' },
		DSV_CLI_RAW_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	vjob j = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	dsv_manifest *m = NULL;
	dsv_target t;
	dsv_errbuf eb;
	const char *disk_arg = NULL, *disk_size_arg = NULL, *dtype_arg = NULL;
	dsv_cli_raw raw_args = { 0 };
	dsv_raw_layout raw;
	int c, err, nthreads = 0, rc = EXIT_OK, is_raw;
	uint64_t refused = 0, checked = 0;
	char a[32];

	dsv_cli_getopt_start();
	while ((c = dsv_cli_getopt("verify", argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 'T':
			if (dsv_cli_int_arg("--threads", optarg, 1, 1024, &nthreads))
				return EXIT_USER;
			break;
		case 'K': disk_arg = optarg; break;
		case 'k': disk_size_arg = optarg; break;
		case 'D': dtype_arg = optarg; break;
		case 'h': fputs(verify_usage, stdout); return EXIT_OK;
		default:
			if (dsv_cli_raw_opt(c, optarg, &raw_args))
				break;
			return EXIT_USER;
		}
	}
	if (dsv_cli_operands("verify", argc, argv, 1, 1, "PATH"))
		return EXIT_USER;
	if (dsv_cli_disk_cache(NULL, disk_arg, disk_size_arg) ||
	    (is_raw = dsv_cli_raw_layout("verify", argv[optind], &raw_args, dtype_arg, &raw)) < 0)
		return EXIT_USER;
	if ((err = dsv_target_parse(argv[optind], is_raw, &t, &eb))) {
		dsv_cli_error("%s", eb.msg);
		return err == DSV_ERR_NOMEM ? EXIT_INTERNAL : EXIT_USER;
	}

	switch (t.kind) {
	case DSV_TARGET_DATASETS: err = collect_datasets(&j, &t, &eb); break;
	case DSV_TARGET_MANIFEST:
		if (!(err = dsv_manifest_load(t.file, &m, &eb)) &&
		    dsv_cli_disk_cache(m, disk_arg, disk_size_arg)) {
			rc = EXIT_USER;
			goto out;
		}
		if (!err)
			err = collect_manifest(&j, m, &eb);
		break;
	case DSV_TARGET_GROUP:
		if (!(err = dsv_manifest_from_file(t.file, DSV_F32, 0, &m, &eb)))
			err = collect_group(&j, m, &eb);
		break;
	case DSV_TARGET_ARRAY: {
		/* dsv_target_parse gives raw only when asked for it */
		dsv_source *s;
		if (!(err = is_raw ? dsv_source_open_raw_layout(t.file, &raw, &s, &eb)
				   : t.format->open(t.file, NULL, &s, &eb)) &&
		    (err = add_source(&j, s, 1, t.file, NULL))) {
			dsv_source_close(s);
			err = dsv_errf(&eb, err, "out of memory");
		}
		break;
	}
	}
	if (err) {
		dsv_cli_error("%s", eb.msg);
		rc = err == DSV_ERR_NOMEM || err == DSV_ERR_INTERNAL ? EXIT_INTERNAL : EXIT_USER;
		goto out;
	}

	for (size_t i = 0; i < j.nsrcs; i++) {
		vsrc *vs = &j.srcs[i];
		vs->first = j.total;
		if (!vs->s) {
			refused++;
			continue;
		}
		const dsv_source_info *si = dsv_source_get_info(vs->s);
		size_t dst = (size_t)(si->chunk_elems * dsv_dtype_size(si->dtype));
		size_t scratch = dsv_source_scratch_size(vs->s);
		j.total += si->nchunks;
		j.dst_cap = dst > j.dst_cap ? dst : j.dst_cap;
		j.scratch_cap = scratch > j.scratch_cap ? scratch : j.scratch_cap;
		checked++;
	}
	if (nthreads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = n > 0 ? (int)(n < 1024 ? n : 1024) : 1;
	}
	uint64_t per_worker = (uint64_t)j.dst_cap + j.scratch_cap + 2;
	if ((uint64_t)nthreads > VERIFY_BUFFER_BUDGET / per_worker)
		nthreads = (int)(VERIFY_BUFFER_BUDGET / per_worker);
	if ((uint64_t)nthreads > j.total)
		nthreads = (int)j.total;
	if (nthreads < 1)
		nthreads = 1;

	double t0 = dsv_now();
	if (j.total && !(nthreads = run_workers(&j, nthreads))) {
		dsv_cli_error("cannot start threads");
		rc = EXIT_INTERNAL;
		goto out;
	}
	double secs = dsv_now() - t0;
	int internal = atomic_load(&j.internal);

	int bad_internal = dsv_verify_report(&j);
	if (bad_internal)
		internal = bad_internal;

	uint64_t bytes = atomic_load(&j.bytes);
	const char *what = t.kind == DSV_TARGET_DATASETS ? "dataset" : "source";
	printf("%s: ", argv[optind]);
	if (refused)
		printf("%llu of ", (unsigned long long)checked);
	printf("%llu %s%s, %llu chunk%s, %s decoded in %.2f s (%.2f GB/s, %d thread%s): ",
	       (unsigned long long)(checked + refused), what, checked + refused == 1 ? "" : "s",
	       (unsigned long long)j.total, j.total == 1 ? "" : "s",
	       dsv_fmt_bytes(a, sizeof(a), bytes), secs,
	       secs > 0 ? (double)bytes / secs / 1e9 : 0.0, nthreads, nthreads == 1 ? "" : "s");
	if (!j.nbad && !refused && !internal) {
		printf("OK\n");
	} else {
		const char *sep = "";
		if (j.nbad || !refused) {
			printf("%zu bad chunk%s", j.nbad, j.nbad == 1 ? "" : "s");
			sep = ", ";
		}
		if (refused)
			printf("%s%llu %s%s not checked", sep, (unsigned long long)refused, what,
			       refused == 1 ? "" : "s");
		printf("\n");
		/* a script can tell damage from "not applicable" (strings, ...) */
		rc = j.nbad ? EXIT_USER : EXIT_UNCHECKED;
	}
	if (internal) {
		fflush(stdout);
		dsv_cli_error("%s: verify failed: %s", argv[optind], dsv_strerror(internal));
		rc = EXIT_INTERNAL;
	}
out:
	fflush(stdout);
	job_free(&j);
	dsv_manifest_free(m);
	dsv_target_free(&t);
	return rc;
}
