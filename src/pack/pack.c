/*
 * dsview pack: input rows -> LZ4 (32004) + Fletcher32 chunks -> a standard
 * HDF5 file, written safely. See include/dsview/pack.h for the contract.
 *
 * Shape of the work:
 *
 *   workers (threads)                      writer (the calling thread)
 *   take chunk i = next++          ---->   waits for slot[w % K] to be ready,
 *   read its rows from the source          H5Dwrite_chunk()s it, frees the
 *   compress into slot[i % K]              slot, reports progress, w++
 *
 * A worker may only take chunk i while i < written + K, so slot i % K is
 * free and at most K = 2 x threads compressed chunks exist at once:
 * memory stays flat however large the input. HDF5 (a serial build) is
 * only called by the writer, under the global HDF5 lock, because workers
 * reading an HDF5 input through the library fallback take that lock too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "dsview/codec.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "dsview/view.h"
#include "h5/h5.h"

#define SAMPLE_CHUNKS 8
#define META_RESERVE (256u << 10) /* HDF5 superblock, object headers, heaps */

/* Reads arbitrary element ranges of a source, one decoded chunk cached. */
typedef struct reader {
	const dsv_source *src;
	size_t esize;
	uint64_t cached; /* index of the chunk in buf, UINT64_MAX if none */
	void *buf;
	size_t buf_cap;
	void *scratch;
	size_t scratch_cap;
} reader;

typedef struct slot {
	void *buf;
	size_t size;
	int ready;
} slot;

typedef struct packer {
	const dsv_pack_opts *o;
	const dsv_source *src;
	const dsv_source_info *in;
	uint64_t row_bytes, chunk_rows, chunk_bytes, nchunks;
	size_t slot_cap;

	pthread_mutex_t mu;
	pthread_cond_t cv_ready; /* a slot became ready, or failure */
	pthread_cond_t cv_space; /* a slot was written, or failure */
	slot *slots;
	unsigned nslots;
	uint64_t next, written;
	int err; /* first failure: workers stop taking chunks */
	uint64_t err_chunk; /* the chunk p->eb names: the lowest that failed */
	dsv_errbuf eb;
} packer;

void dsv_pack_opts_init(dsv_pack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->raw_dtype = DSV_DTYPE_INVALID;
	o->codec = DSV_PACK_LZ4;
	o->level = -1;
}

static const char *codec_name(dsv_pack_codec c)
{
	return c == DSV_PACK_LZ4 ? "lz4" : c == DSV_PACK_LZ4HC ? "lz4hc" : "none";
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int stopped(const dsv_pack_opts *o)
{
	return o->stop && *o->stop;
}

/* ---- reading rows ---- */

static int reader_init(reader *r, const dsv_source *s)
{
	const dsv_source_info *in = dsv_source_get_info(s);
	memset(r, 0, sizeof(*r));
	r->src = s;
	r->esize = dsv_dtype_size(in->dtype);
	r->cached = UINT64_MAX;
	r->buf_cap = (size_t)(in->chunk_elems * r->esize);
	r->scratch_cap = dsv_source_scratch_size(s);
	r->buf = r->buf_cap ? malloc(r->buf_cap) : NULL;
	r->scratch = r->scratch_cap ? malloc(r->scratch_cap) : NULL;
	if ((r->buf_cap && !r->buf) || (r->scratch_cap && !r->scratch))
		return DSV_ERR_NOMEM;
	return 0;
}

static void reader_free(reader *r)
{
	free(r->buf);
	free(r->scratch);
}

/* Copies elements [e0, e0 + n) of the source to dst. Plain chunks are read
 * straight into dst; others are decoded whole once and copied from. On
 * failure *bad is the chunk that failed. */
static int read_elems(reader *r, uint64_t e0, uint64_t n, char *dst, uint64_t *bad)
{
	const dsv_source_info *in = dsv_source_get_info(r->src);
	uint64_t ce = in->chunk_elems;

	while (n) {
		uint64_t j = e0 / ce, skip, take;
		dsv_chunk_ref ref;
		int err = dsv_source_chunk(r->src, j, &ref);

		*bad = j;
		if (err)
			return err;
		skip = e0 - ref.elem_start;
		take = ref.nelems - skip < n ? ref.nelems - skip : n;
		if (!ref.fallback && ref.codec == DSV_CODEC_NONE && !ref.fletcher32) {
			err = dsv_source_pread(r->src, dst, (size_t)(take * r->esize),
					       ref.offset + skip * r->esize);
		} else {
			if (r->cached != j) {
				r->cached = UINT64_MAX;
				err = dsv_source_read_chunk(r->src, &ref, r->buf, r->buf_cap,
							    r->scratch, r->scratch_cap);
				if (!err)
					r->cached = j;
			}
			if (!err)
				memcpy(dst, (char *)r->buf + skip * r->esize, (size_t)(take * r->esize));
		}
		if (err)
			return err;
		dst += take * r->esize;
		e0 += take;
		n -= take;
	}
	return 0;
}

/* Reads chunk i's rows into raw (zero-padded to a full chunk: HDF5 stores
 * edge chunks whole) and encodes them into out. @return the stored size or
 * a negative dsv_err. */
static int64_t make_chunk(packer *p, reader *r, uint64_t i, char *raw, void *out,
			  uint64_t *bad)
{
	const dsv_pack_opts *o = p->o;
	uint64_t row0 = i * p->chunk_rows;
	uint64_t rows = p->in->nrows - row0 < p->chunk_rows ? p->in->nrows - row0 : p->chunk_rows;
	uint64_t used = rows * p->row_bytes;
	int64_t n;
	int err;

	err = read_elems(r, row0 * p->in->row_elems, rows * p->in->row_elems, raw, bad);
	if (err)
		return err;
	if (used < p->chunk_bytes)
		memset(raw + used, 0, (size_t)(p->chunk_bytes - used));
	switch (o->codec) {
	case DSV_PACK_LZ4:
		n = dsv_lz4_encode_fast(out, p->slot_cap - 4, raw, (size_t)p->chunk_bytes, 0,
					o->level);
		break;
	case DSV_PACK_LZ4HC:
		n = dsv_lz4_encode(out, p->slot_cap - 4, raw, (size_t)p->chunk_bytes, 0, o->level);
		break;
	default:
		memcpy(out, raw, (size_t)p->chunk_bytes);
		n = (int64_t)p->chunk_bytes;
	}
	if (n < 0)
		return (int)n;
	dsv_fletcher32_append(out, (size_t)n);
	return n + 4;
}

/* Records a worker's failure. Chunks are handed out in order and a worker
 * finishes the chunk it holds, so after the join the message names the
 * lowest chunk that failed, whichever thread got there first. */
static void fail_locked(packer *p, int err, uint64_t chunk, uint64_t bad_in)
{
	if (p->err && (p->err == DSV_ERR_NOMEM || chunk >= p->err_chunk))
		return;
	p->err = err;
	p->err_chunk = chunk;
	uint64_t r0 = chunk * p->chunk_rows;
	uint64_t r1 = r0 + p->chunk_rows < p->in->nrows ? r0 + p->chunk_rows : p->in->nrows;
	if (err == DSV_ERR_NOMEM)
		dsv_errf(&p->eb, err, "out of memory");
	else
		dsv_errf(&p->eb, err, "%s: rows %llu-%llu (source chunk %llu): %s",
			 p->o->input, (unsigned long long)r0, (unsigned long long)(r1 - 1),
			 (unsigned long long)bad_in, dsv_strerror(err));
	pthread_cond_broadcast(&p->cv_ready);
	pthread_cond_broadcast(&p->cv_space);
}

static void *worker(void *arg)
{
	packer *p = arg;
	reader r;
	char *raw = malloc(p->chunk_bytes ? (size_t)p->chunk_bytes : 1);
	int err = reader_init(&r, p->src);

	pthread_mutex_lock(&p->mu);
	if (err || !raw)
		fail_locked(p, DSV_ERR_NOMEM, 0, 0);
	for (;;) {
		while (!p->err && !stopped(p->o) && p->next < p->nchunks &&
		       p->next >= p->written + p->nslots)
			pthread_cond_wait(&p->cv_space, &p->mu);
		if (p->err || stopped(p->o) || p->next >= p->nchunks)
			break;
		uint64_t i = p->next++, bad = 0;
		slot *s = &p->slots[i % p->nslots];
		pthread_mutex_unlock(&p->mu);

		int64_t n = make_chunk(p, &r, i, raw, s->buf, &bad);

		pthread_mutex_lock(&p->mu);
		if (n < 0) {
			fail_locked(p, (int)n, i, bad);
			break;
		}
		s->size = (size_t)n;
		s->ready = 1;
		pthread_cond_broadcast(&p->cv_ready);
	}
	pthread_mutex_unlock(&p->mu);
	reader_free(&r);
	free(raw);
	return NULL;
}

/* ---- the output file ---- */

static int default_name(const char *input, char *out, size_t cap)
{
	const char *colon = strstr(input, ":/"), *base, *end;

	if (colon) {
		const char *next;
		while ((next = strstr(colon + 1, ":/")))
			colon = next;
		end = input + strlen(input);
		base = strrchr(colon + 1, '/') + 1;
	} else {
		base = strrchr(input, '/');
		base = base ? base + 1 : input;
		end = strrchr(base, '.');
		if (!end || end == base)
			end = base + strlen(base);
	}
	if ((size_t)(end - base) >= cap)
		return -1;
	memcpy(out, base, (size_t)(end - base));
	out[end - base] = '\0';
	return 0;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int pid_alive(long pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%ld", pid);
	return access(p, F_OK) == 0;
}

/* Removes temporaries of earlier packs to this output whose process is
 * gone (a pack killed with SIGKILL cannot clean up after itself). */
static void remove_stale_temps(const char *dir, const char *base)
{
	size_t blen = strlen(base), ilen = strlen(DSV_PACK_TMP_INFIX);
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid;
		if (strncmp(e->d_name, base, blen) ||
		    strncmp(e->d_name + blen, DSV_PACK_TMP_INFIX, ilen))
			continue;
		pid = strtol(e->d_name + blen + ilen, &end, 10);
		if (end == e->d_name + blen + ilen || *end != '-' || strlen(end + 1) != 6 ||
		    pid <= 0 || pid_alive(pid))
			continue;
		(void)unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* Creates OUTPUT.tmp-PID-XXXXXX with O_EXCL; fills path, returns the fd. */
static int create_temp(const char *output, char *path, size_t cap, dsv_errbuf *eb)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned seed = (unsigned)ts.tv_nsec ^ (unsigned)getpid() << 16;
	for (int tries = 0; tries < 100; tries++) {
		char rnd[7];
		for (int k = 0; k < 6; k++)
			rnd[k] = alnum[rand_r(&seed) % (sizeof(alnum) - 1)];
		rnd[6] = '\0';
		if ((size_t)snprintf(path, cap, "%s%s%ld-%s", output, DSV_PACK_TMP_INFIX,
				     (long)getpid(), rnd) >= cap)
			return dsv_errf(eb, DSV_ERR_INVALID, "%s: path too long", output);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST) {
			int e = errno;
			return dsv_errf(eb, DSV_ERR_IO, "cannot create %s: %s", path, strerror(e));
		}
	}
	return dsv_errf(eb, DSV_ERR_IO, "cannot create a temporary file next to %s", output);
}

static char *store_json(const dsv_pack_opts *o, const dsv_source_info *in, uint64_t chunk_rows,
			uint64_t chunk_bytes)
{
	json_t *shape = json_array(), *j;
	char *s;

	for (int k = 0; k < in->ndim; k++)
		json_array_append_new(shape, json_integer((json_int_t)in->shape[k]));
	j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:o, s:s, s:i, s:I, s:I, s:I, s:b}",
		      "format", DSV_STORE_FORMAT, "format_version", DSV_STORE_FORMAT_VERSION,
		      "dsview_version", DSV_VERSION_STRING, "source", o->input,
		      "source_kind", dsv_source_kind_name(in->kind),
		      "dtype", dsv_dtype_name(in->dtype), "shape", shape,
		      "codec", codec_name(o->codec), "level", o->level,
		      "chunk_rows", (json_int_t)chunk_rows, "chunk_bytes", (json_int_t)chunk_bytes,
		      "raw_bytes", (json_int_t)(in->nelems * dsv_dtype_size(in->dtype)),
		      "fletcher32", 1);
	if (!j)
		return NULL;
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* Under the HDF5 lock: the file, the dataset and its attribute. */
static int h5_create(const char *tmp, const char *name, const dsv_source_info *in,
		     uint64_t chunk_rows, const dsv_pack_opts *o, const char *json,
		     hid_t *file, hid_t *dset, dsv_errbuf *eb)
{
	hsize_t dims[DSV_MAX_DIMS], cdims[DSV_MAX_DIMS];
	hid_t space = -1, dcpl = -1, ftype = -1, atype = -1, aspace = -1, attr = -1;
	unsigned cd[1] = { 0 }; /* LZ4 block size: 0 = the plugin's default */
	int err = DSV_ERR_INTERNAL;

	for (int k = 0; k < in->ndim; k++) {
		dims[k] = in->shape[k];
		cdims[k] = k == 0 ? chunk_rows : in->shape[k];
	}
	*dset = -1;
	*file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (*file < 0)
		return dsv_errf(eb, DSV_ERR_IO, "%s: HDF5 cannot create the file", tmp);
	if ((space = H5Screate_simple(in->ndim, dims, NULL)) < 0 ||
	    (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
	    H5Pset_chunk(dcpl, in->ndim, cdims) < 0 ||
	    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0 ||
	    (o->codec != DSV_PACK_NONE &&
	     H5Pset_filter(dcpl, DSV_H5Z_FILTER_LZ4, H5Z_FLAG_OPTIONAL, 1, cd) < 0) ||
	    H5Pset_fletcher32(dcpl) < 0 || (ftype = dsv_h5_type(in->dtype)) < 0)
		goto out;
	*dset = H5Dcreate2(*file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (*dset < 0)
		goto out;
	if ((atype = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(atype, H5T_VARIABLE) < 0 ||
	    H5Tset_cset(atype, H5T_CSET_UTF8) < 0 || (aspace = H5Screate(H5S_SCALAR)) < 0 ||
	    (attr = H5Acreate2(*dset, DSV_STORE_ATTR, atype, aspace, H5P_DEFAULT,
			       H5P_DEFAULT)) < 0 ||
	    H5Awrite(attr, atype, &json) < 0)
		goto out;
	err = 0;
out:
	if (attr >= 0)
		H5Aclose(attr);
	if (aspace >= 0)
		H5Sclose(aspace);
	if (atype >= 0)
		H5Tclose(atype);
	if (ftype >= 0)
		H5Tclose(ftype);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	if (err)
		dsv_errf(eb, err, "%s: HDF5 cannot create dataset %s", tmp, name);
	return err;
}

/* Bytes the store will take: exact without compression, else estimated
 * from up to SAMPLE_CHUNKS chunks spread over the input. */
static int estimate_size(packer *p, uint64_t *need)
{
	reader r;
	char *raw = malloc((size_t)p->chunk_bytes), *out = malloc(p->slot_cap);
	uint64_t n = p->nchunks < SAMPLE_CHUNKS ? p->nchunks : SAMPLE_CHUNKS, sum = 0, bad;
	int err = reader_init(&r, p->src);

	if (!err && (!raw || !out))
		err = DSV_ERR_NOMEM;
	for (uint64_t k = 0; !err && k < n; k++) {
		uint64_t i = n > 1 ? k * (p->nchunks - 1) / (n - 1) : 0;
		int64_t got = p->o->codec == DSV_PACK_NONE ? (int64_t)p->chunk_bytes + 4
							   : make_chunk(p, &r, i, raw, out, &bad);
		if (got < 0)
			err = (int)got;
		else
			sum += (uint64_t)got;
	}
	reader_free(&r);
	free(raw);
	free(out);
	if (err)
		return err;
	/* 5% for chunks that compress worse than the sample */
	*need = (n ? sum / n * p->nchunks / 100 * 105 : 0) + META_RESERVE +
		p->nchunks * 64 /* chunk index entries */;
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

/* ---- dsv_pack ---- */

static int open_input(const dsv_pack_opts *o, dsv_source **src, dsv_errbuf *eb)
{
	if (o->raw_dtype != DSV_DTYPE_INVALID)
		return dsv_source_open_raw(o->input, o->raw_dtype, o->raw_ndim, o->raw_shape, src,
					   eb);
	return dsv_source_open(o->input, src, eb);
}

static int check_output(const dsv_pack_opts *o, const char *dir, dsv_errbuf *eb)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		int e = errno;
		return dsv_errf(eb, e == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO,
				"%s: output directory %s: %s", o->output, dir, strerror(e));
	}
	if (!S_ISDIR(st.st_mode))
		return dsv_errf(eb, DSV_ERR_INVALID, "%s: %s is not a directory", o->output, dir);
	if (access(dir, W_OK) < 0) {
		int e = errno;
		return dsv_errf(eb, DSV_ERR_IO, "%s: cannot write to %s: %s", o->output, dir,
				strerror(e));
	}
	if (lstat(o->output, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return dsv_errf(eb, DSV_ERR_INVALID, "%s: is a directory", o->output);
		if (!o->force)
			return dsv_errf(eb, DSV_ERR_INVALID,
					"%s: already exists (use --force to replace it)", o->output);
	}
	return 0;
}

/* The writer loop: chunks in order into the dataset. */
static int write_chunks(packer *p, hid_t dset, dsv_pack_result *res, dsv_errbuf *eb)
{
	const dsv_pack_opts *o = p->o;
	hsize_t off[DSV_MAX_DIMS] = { 0 };
	dsv_pack_progress pr = { .rows_total = p->in->nrows };
	struct timespec last = { 0 };
	int err = 0;

	for (uint64_t w = 0; w < p->nchunks; w++) {
		slot *s = &p->slots[w % p->nslots];

		pthread_mutex_lock(&p->mu);
		while (!s->ready && !p->err && !stopped(o)) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 100 * 1000 * 1000;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&p->cv_ready, &p->mu, &until);
		}
		if (p->err && !s->ready)
			err = p->err;
		pthread_mutex_unlock(&p->mu);
		if (err)
			return err; /* the worker's message is in p->eb */
		if (stopped(o))
			return dsv_errf(eb, DSV_ERR_INTERNAL, "interrupted");

		off[0] = w * p->chunk_rows;
		errno = 0;
		dsv_h5_lock();
		herr_t rc = H5Dwrite_chunk(dset, H5P_DEFAULT, 0, off, s->size, s->buf);
		dsv_h5_unlock();
		if (rc < 0) {
			int e = errno;
			return dsv_errf(eb, DSV_ERR_IO, "%s: writing chunk %llu failed: %s", o->output,
					(unsigned long long)w,
					e ? strerror(e) : "HDF5 write error");
		}
		pr.stored_bytes += s->size;
		pr.rows_done = off[0] + p->chunk_rows < p->in->nrows ? off[0] + p->chunk_rows
								     : p->in->nrows;
		pr.raw_bytes = pr.rows_done * p->row_bytes;

		pthread_mutex_lock(&p->mu);
		s->ready = 0;
		p->written = w + 1;
		pthread_cond_broadcast(&p->cv_space);
		pthread_mutex_unlock(&p->mu);

		if (o->progress) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - last.tv_sec) * 1000000000L + now.tv_nsec - last.tv_nsec >
			    100000000L) {
				o->progress(&pr, o->progress_arg);
				last = now;
			}
		}
	}
	if (o->progress)
		o->progress(&pr, o->progress_arg);
	res->stored_bytes = pr.stored_bytes;
	return 0;
}

static int run_workers(packer *p, hid_t dset, dsv_pack_result *res, dsv_errbuf *eb)
{
	int nthreads = p->o->threads > 0 ? p->o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t *tids;
	int started = 0, err;

	if (nthreads < 1)
		nthreads = 1;
	if ((uint64_t)nthreads > p->nchunks)
		nthreads = p->nchunks ? (int)p->nchunks : 1;
	p->nslots = 2u * (unsigned)nthreads;
	p->slots = calloc(p->nslots, sizeof(*p->slots));
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!p->slots || !tids) {
		free(tids);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	for (unsigned k = 0; k < p->nslots; k++)
		if (!(p->slots[k].buf = malloc(p->slot_cap))) {
			free(tids);
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		}
	for (; started < nthreads; started++)
		if (pthread_create(&tids[started], NULL, worker, p))
			break;
	if (!started) {
		free(tids);
		return dsv_errf(eb, DSV_ERR_INTERNAL, "cannot start threads");
	}
	res->threads = started;

	err = write_chunks(p, dset, res, eb);
	pthread_mutex_lock(&p->mu);
	if (err && !p->err)
		p->err = err; /* stop the workers */
	pthread_cond_broadcast(&p->cv_space);
	pthread_mutex_unlock(&p->mu);
	for (int k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
	free(tids);
	if (err && !eb->msg[0])
		*eb = p->eb;
	return err;
}

int dsv_pack(const dsv_pack_opts *opts, dsv_pack_result *res, dsv_errbuf *eb)
{
	dsv_pack_opts oc = *opts;
	const dsv_pack_opts *o = &oc;
	packer p = { .o = o };
	dsv_errbuf local;
	dsv_source *src = NULL;
	char name[232], tmp[PATH_MAX + 64], *dir = NULL, *json = NULL, *base;
	hid_t file = -1, dset = -1;
	int fd = -1, err;
	double t0 = now_s();

	memset(res, 0, sizeof(*res));
	if (!eb)
		eb = &local;
	eb->msg[0] = '\0';
	if (oc.level < 0)
		oc.level = oc.codec == DSV_PACK_LZ4 ? 1 : oc.codec == DSV_PACK_LZ4HC ? 9 : 0;
	if (oc.codec == DSV_PACK_NONE)
		oc.level = 0;
	res->level = oc.level;
	tmp[0] = '\0';

	/* Everything that can be checked is checked before a file exists. */
	if (o->codec == DSV_PACK_LZ4 && (o->level < 1 || o->level > DSV_LZ4_MAX_ACCELERATION))
		return dsv_errf(eb, DSV_ERR_INVALID, "lz4: --level is the acceleration, 1 to %d",
				DSV_LZ4_MAX_ACCELERATION);
	if (o->codec == DSV_PACK_LZ4HC && (o->level < 1 || o->level > 12))
		return dsv_errf(eb, DSV_ERR_INVALID, "lz4hc: --level must be 1 to 12");
	if (o->dataset) {
		if (strlen(o->dataset) >= sizeof(name) || !dsv_view_name_ok(o->dataset))
			return dsv_errf(eb, DSV_ERR_INVALID,
					"--dataset '%s': use letters, digits, '_', '-', '.'",
					o->dataset);
		snprintf(name, sizeof(name), "%s", o->dataset);
	} else if (default_name(o->input, name, sizeof(name)) || !dsv_view_name_ok(name)) {
		return dsv_errf(eb, DSV_ERR_INVALID,
				"%s: cannot name the dataset after the input; give --dataset NAME",
				o->input);
	}
	err = open_input(o, &src, eb);
	if (err)
		return err;
	p.src = src;
	p.in = dsv_source_get_info(src);
	if (p.in->ndim < 1) {
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s: a 0-d array has no rows to pack",
			       o->input);
		goto out;
	}
	p.row_bytes = p.in->row_elems * dsv_dtype_size(p.in->dtype);
	if (p.row_bytes == 0) {
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED, "%s: rows of 0 bytes (shape has a 0)",
			       o->input);
		goto out;
	}
	if (p.row_bytes > DSV_PACK_MAX_CHUNK) {
		err = dsv_errf(eb, DSV_ERR_UNSUPPORTED,
			       "%s: a row is %llu bytes, over the %llu-byte chunk limit", o->input,
			       (unsigned long long)p.row_bytes,
			       (unsigned long long)DSV_PACK_MAX_CHUNK);
		goto out;
	}
	{
		uint64_t want = o->chunk_bytes ? o->chunk_bytes : DSV_PACK_DEFAULT_CHUNK;
		uint64_t rows = (want + p.row_bytes / 2) / p.row_bytes;
		if (rows < 1)
			rows = 1;
		if (rows > DSV_PACK_MAX_CHUNK / p.row_bytes)
			rows = DSV_PACK_MAX_CHUNK / p.row_bytes;
		if (p.in->nrows && rows > p.in->nrows)
			rows = p.in->nrows;
		p.chunk_rows = rows;
		p.chunk_bytes = rows * p.row_bytes;
		p.nchunks = (p.in->nrows + rows - 1) / rows;
	}
	p.slot_cap = (o->codec == DSV_PACK_NONE ? (size_t)p.chunk_bytes
						: dsv_lz4_bound((size_t)p.chunk_bytes, 0)) + 4;

	dir = dir_of(o->output);
	if (!dir) {
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		goto out;
	}
	err = check_output(o, dir, eb);
	if (err)
		goto out;
	base = strrchr(o->output, '/');
	remove_stale_temps(dir, base ? base + 1 : o->output);

	/* Enough room for the worst case (nothing compresses) needs no
	 * estimate; otherwise sample chunks and compare with that. */
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0) {
		uint64_t have = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		uint64_t need = p.nchunks * (p.slot_cap + 64) + META_RESERVE;
		if (have < need) {
			err = estimate_size(&p, &need);
			if (err) {
				err = dsv_errf(eb, err, "%s: %s", o->input, dsv_strerror(err));
				goto out;
			}
			if (have < need) {
				err = dsv_errf(eb, DSV_ERR_IO,
					       "%s: not enough free space: %.1f MB free, the store "
					       "needs about %.1f MB",
					       dir, (double)have / 1e6, (double)need / 1e6);
				goto out;
			}
		}
		res->estimated_bytes = need;
	}
	json = store_json(o, p.in, p.chunk_rows, p.chunk_bytes);
	if (!json) {
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		goto out;
	}

	fd = create_temp(o->output, tmp, sizeof(tmp), eb);
	if (fd < 0) {
		err = fd;
		tmp[0] = '\0';
		goto out;
	}
	dsv_h5_lock();
	err = h5_create(tmp, name, p.in, p.chunk_rows, o, json, &file, &dset, eb);
	dsv_h5_unlock();
	if (err)
		goto out;

	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv_ready, NULL);
	pthread_cond_init(&p.cv_space, NULL);
	double tw = now_s();
	err = run_workers(&p, dset, res, eb);
	res->write_seconds = now_s() - tw;
	for (unsigned k = 0; p.slots && k < p.nslots; k++)
		free(p.slots[k].buf);
	free(p.slots);
	pthread_cond_destroy(&p.cv_space);
	pthread_cond_destroy(&p.cv_ready);
	pthread_mutex_destroy(&p.mu);
	if (err)
		goto out;

	/* Close (HDF5 flushes its metadata now), then make it durable. */
	tw = now_s();
	errno = 0;
	dsv_h5_lock();
	herr_t rc = H5Dclose(dset);
	dset = -1;
	rc |= H5Fclose(file);
	file = -1;
	dsv_h5_unlock();
	if (rc < 0) {
		int e = errno;
		err = dsv_errf(eb, DSV_ERR_IO, "%s: finishing the file failed: %s", o->output,
			       e ? strerror(e) : "HDF5 error");
		goto out;
	}
	if (stopped(o)) {
		err = dsv_errf(eb, DSV_ERR_INTERNAL, "interrupted");
		goto out;
	}
	if (fsync(fd) < 0) {
		int e = errno;
		err = dsv_errf(eb, DSV_ERR_IO, "%s: fsync: %s", tmp, strerror(e));
		goto out;
	}
	res->sync_seconds = now_s() - tw;
	struct stat st;
	if (fstat(fd, &st) == 0)
		res->file_bytes = (uint64_t)st.st_size;
	close(fd);
	fd = -1;
	/* Without --force, never replace a file that appeared meanwhile. */
	if (o->force ? rename(tmp, o->output) : renameat2(AT_FDCWD, tmp, AT_FDCWD, o->output,
							   RENAME_NOREPLACE)) {
		int e = errno;
		if (!o->force && e == EINVAL) { /* no RENAME_NOREPLACE here */
			if (link(tmp, o->output) == 0) {
				unlink(tmp);
				goto renamed;
			}
			e = errno;
		}
		err = dsv_errf(eb, DSV_ERR_IO, "%s: %s", o->output,
			       e == EEXIST ? "appeared while packing; not replaced (use --force)"
					   : strerror(e));
		goto out;
	}
renamed:
	tmp[0] = '\0';
	(void)fsync_dir(dir);

	res->rows = p.in->nrows;
	res->chunks = p.nchunks;
	res->chunk_rows = p.chunk_rows;
	res->raw_bytes = p.in->nelems * dsv_dtype_size(p.in->dtype);
	snprintf(res->dataset, sizeof(res->dataset), "/%s", name);
	res->seconds = now_s() - t0;
out:
	if (dset >= 0 || file >= 0) {
		dsv_h5_lock();
		if (dset >= 0)
			H5Dclose(dset);
		if (file >= 0)
			H5Fclose(file);
		dsv_h5_unlock();
	}
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlink(tmp);
	free(json);
	free(dir);
	dsv_source_close(src);
	return err;
}
