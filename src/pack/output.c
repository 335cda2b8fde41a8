/*
 * The output file dsv_pack writes, safely (pack.c has the order): the
 * directory checked (writable, no output there unless --force, room for
 * the store, temporaries of dead packs removed), the store created as
 * OUTPUT.tmp-PID-XXXXXX (O_EXCL) with HDF5, its chunks written in order,
 * then closed, fsynced, renamed into place (without --force never over a
 * file that appeared meanwhile) and the directory fsynced. Closing an
 * output that did not get that far unlinks the temporary.
 *
 * HDF5 (a serial build) is called only on the calling thread, under the
 * global HDF5 lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/clock.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "formats/h5/h5.h"
#include "pack/pack_i.h"

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
			return dsv_errf_at(eb, DSV_ERR_INVALID, output, NULL, "path too long");
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

static char *store_json(const dsv_pack_opts *o, const char *name, const dsv_source_info *in,
			uint64_t chunk_rows, uint64_t chunk_bytes, uint64_t block_bytes)
{
	json_t *shape = json_array(), *j;
	char *s;

	for (int k = 0; k < in->ndim; k++)
		json_array_append_new(shape, json_integer((json_int_t)in->shape[k]));
	j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:o, s:s, s:i, s:I, s:I, s:I, s:b}", "format",
		      DSV_STORE_FORMAT, "format_version", DSV_STORE_FORMAT_VERSION,
		      "dsview_version", DSV_VERSION_STRING, "source", o->input, "source_kind",
		      dsv_source_kind_name(in->kind), "dtype", dsv_dtype_name(in->dtype), "shape",
		      shape, "codec", dsv_pack_codec_get(o->codec)->name, "level", o->level,
		      "chunk_rows", (json_int_t)chunk_rows, "chunk_bytes", (json_int_t)chunk_bytes,
		      "raw_bytes", (json_int_t)(in->nelems * dsv_dtype_size(in->dtype)),
		      "fletcher32", 1);
	if (!j)
		return NULL;
	if (block_bytes)
		json_object_set_new(j, "block_bytes", json_integer((json_int_t)block_bytes));
	if (in->has_scale) { /* the input's own scaling (NIfTI), served from the store too */
		json_object_set_new(j, "scale", json_real(in->scale));
		json_object_set_new(j, "offset", json_real(in->offset));
	}
	if (block_bytes && block_bytes < chunk_bytes) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", DSV_STORE_BLOCKS, name);
		json_object_set_new(j, "block_table", json_string(path));
	}
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* Under the HDF5 lock: the file, the dataset and its attribute. */
static int h5_create(const char *tmp, const char *name, const dsv_source_info *in,
		     uint64_t chunk_rows, uint64_t block_bytes, const dsv_pack_opts *o,
		     const char *json, hid_t *file, hid_t *dset, dsv_errbuf *eb)
{
	hsize_t dims[DSV_MAX_DIMS], cdims[DSV_MAX_DIMS];
	hid_t space = -1, dcpl = -1, ftype = -1, atype = -1, aspace = -1, attr = -1;
	unsigned cd[8];
	size_t ncd = dsv_pack_codec_cd(o->codec, o->level, dsv_dtype_size(in->dtype),
				       chunk_rows * in->row_elems * dsv_dtype_size(in->dtype),
				       block_bytes, cd);
	int err = DSV_ERR_INTERNAL;

	for (int k = 0; k < in->ndim; k++) {
		dims[k] = in->shape[k];
		cdims[k] = k == 0 ? chunk_rows : in->shape[k];
	}
	*dset = -1;
	*file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (*file < 0)
		return dsv_errf_at(eb, DSV_ERR_IO, tmp, NULL, "HDF5 cannot create the file");
	if ((space = H5Screate_simple(in->ndim, dims, NULL)) < 0 ||
	    (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_chunk(dcpl, in->ndim, cdims) < 0 ||
	    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0 ||
	    (o->codec != DSV_PACK_NONE && H5Pset_filter(dcpl, dsv_pack_codec_get(o->codec)->filter,
							H5Z_FLAG_OPTIONAL, ncd, cd) < 0) ||
	    H5Pset_fletcher32(dcpl) < 0 || (ftype = dsv_h5_type(in->dtype)) < 0)
		goto out;
	*dset = H5Dcreate2(*file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (*dset < 0)
		goto out;
	if ((atype = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(atype, H5T_VARIABLE) < 0 ||
	    H5Tset_cset(atype, H5T_CSET_UTF8) < 0 || (aspace = H5Screate(H5S_SCALAR)) < 0 ||
	    (attr = H5Acreate2(*dset, DSV_STORE_ATTR, atype, aspace, H5P_DEFAULT, H5P_DEFAULT)) <
		    0 ||
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
		dsv_errf_at(eb, err, tmp, NULL, "HDF5 cannot create dataset %s", name);
	return err;
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

static int check_output(const dsv_pack_opts *o, const char *dir, dsv_errbuf *eb)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		int e = errno;
		return dsv_errf_at(eb, e == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, o->output, NULL,
				   "output directory %s: %s", dir, strerror(e));
	}
	if (!S_ISDIR(st.st_mode))
		return dsv_errf_at(eb, DSV_ERR_INVALID, o->output, NULL, "%s is not a directory",
				   dir);
	if (access(dir, W_OK) < 0) {
		int e = errno;
		return dsv_errf_at(eb, DSV_ERR_IO, o->output, NULL, "cannot write to %s: %s", dir,
				   strerror(e));
	}
	if (lstat(o->output, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return dsv_errf_at(eb, DSV_ERR_INVALID, o->output, NULL, "is a directory");
		if (!o->force)
			return dsv_errf_at(eb, DSV_ERR_INVALID, o->output, NULL,
					   "already exists (use --force to replace it)");
	}
	return 0;
}

/* Writes chunk w at row0 of the dataset, under the HDF5 lock, and its
 * row of the block table. */
int dsv_pack_out_write(const packer *p, void *arg, uint64_t w, uint64_t row0, const void *buf,
		       size_t size, dsv_errbuf *eb)
{
	out_sets *out = arg;
	hsize_t off[DSV_MAX_DIMS] = { 0 };

	off[0] = row0;
	errno = 0;
	dsv_h5_lock();
	herr_t rc = H5Dwrite_chunk(out->dset, H5P_DEFAULT, 0, off, size, buf);
	dsv_h5_unlock();
	if (rc < 0) {
		int e = errno;
		return dsv_errf_at(eb, DSV_ERR_IO, p->o->output, NULL,
				   "writing chunk %llu failed: %s", (unsigned long long)w,
				   e ? strerror(e) : "HDF5 write error");
	}
	if (out->table.dset >= 0)
		return dsv_pack_table_write(&out->table, w, buf, size - 4, eb);
	return 0;
}

/* Enough room in dir for the worst case (nothing compresses) needs no
 * estimate; otherwise sample chunks and compare with that. */
static int check_space(packer *p, const char *dir, dsv_pack_result *res, dsv_errbuf *eb)
{
	struct statvfs vfs;
	int err;

	if (statvfs(dir, &vfs) != 0)
		return 0;
	uint64_t have = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	uint64_t need = p->nchunks * (p->slot_cap + 64) + META_RESERVE;
	if (have < need) {
		if ((err = dsv_pack_estimate_size(p, &need)))
			return dsv_errf_at(eb, err, p->o->input, NULL, "%s", dsv_strerror(err));
		if (have < need)
			return dsv_errf_at(eb, DSV_ERR_IO, dir, NULL,
					   "not enough free space: %.1f MB free, the store "
					   "needs about %.1f MB",
					   (double)have / 1e6, (double)need / 1e6);
	}
	res->estimated_bytes = need;
	return 0;
}

/* The output's directory: writable, no output there unless --force, no
 * dead packs' temporaries, room for the store. */
int dsv_pack_out_dir(packer *p, dsv_pack_out *f, dsv_pack_result *res, dsv_errbuf *eb)
{
	const dsv_pack_opts *o = p->o;
	int err;

	if (!(f->dir = dir_of(o->output)))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if ((err = check_output(o, f->dir, eb)))
		return err;
	const char *base = strrchr(o->output, '/');
	remove_stale_temps(f->dir, base ? base + 1 : o->output);
	return check_space(p, f->dir, res, eb);
}

/* The temporary with its empty dataset name (and block table). */
int dsv_pack_out_create(const packer *p, dsv_pack_out *f, const char *name, dsv_errbuf *eb)
{
	const dsv_pack_opts *o = p->o;
	int err;

	f->json = store_json(o, name, p->in, p->chunk_rows, p->chunk_bytes, p->block_bytes);
	if (!f->json)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	f->fd = create_temp(o->output, f->tmp, sizeof(f->tmp), eb);
	if (f->fd < 0) {
		f->tmp[0] = '\0';
		return f->fd;
	}
	dsv_h5_lock();
	err = h5_create(f->tmp, name, p->in, p->chunk_rows, p->block_bytes, o, f->json, &f->file,
			&f->sets.dset, eb);
	if (!err && p->block_bytes && p->block_bytes < p->chunk_bytes)
		err = dsv_pack_table_create(&f->sets.table, f->file, name, p->nchunks,
					    (p->chunk_bytes + p->block_bytes - 1) / p->block_bytes,
					    eb);
	dsv_h5_unlock();
	return err;
}

/* Closes the HDF5 handles (HDF5 flushes its metadata now). */
static int close_store(const dsv_pack_opts *o, dsv_pack_out *f, dsv_errbuf *eb)
{
	errno = 0;
	dsv_h5_lock();
	herr_t rc = H5Dclose(f->sets.dset);
	f->sets.dset = -1;
	if (f->sets.table.dset >= 0)
		rc |= H5Dclose(f->sets.table.dset);
	f->sets.table.dset = -1;
	rc |= H5Fclose(f->file);
	f->file = -1;
	dsv_h5_unlock();
	if (rc < 0) {
		int e = errno;
		return dsv_errf_at(eb, DSV_ERR_IO, o->output, NULL, "finishing the file failed: %s",
				   e ? strerror(e) : "HDF5 error");
	}
	return 0;
}

/* Renames the temporary to the output; without --force, never over a
 * file that appeared meanwhile. */
static int place_store(const dsv_pack_opts *o, dsv_pack_out *f, dsv_errbuf *eb)
{
	if (o->force ? rename(f->tmp, o->output)
		     : renameat2(AT_FDCWD, f->tmp, AT_FDCWD, o->output, RENAME_NOREPLACE)) {
		int e = errno;
		if (!o->force && e == EINVAL) { /* no RENAME_NOREPLACE here */
			if (link(f->tmp, o->output) == 0) {
				unlink(f->tmp);
				goto renamed;
			}
			e = errno;
		}
		return dsv_errf_at(eb, DSV_ERR_IO, o->output, NULL, "%s",
				   e == EEXIST
					   ? "appeared while packing; not replaced (use --force)"
					   : strerror(e));
	}
renamed:
	f->tmp[0] = '\0';
	(void)fsync_dir(f->dir);
	return 0;
}

/* The filled store closed, made durable and put in place. */
int dsv_pack_out_finish(const dsv_pack_opts *o, dsv_pack_out *f, dsv_pack_result *res,
			dsv_errbuf *eb)
{
	double t = dsv_now_s();
	struct stat st;
	int err;

	if ((err = close_store(o, f, eb)))
		return err;
	if (stopped(o))
		return dsv_errf(eb, DSV_ERR_INTERRUPTED, "interrupted");
	if (fsync(f->fd) < 0) {
		int e = errno;
		return dsv_errf_at(eb, DSV_ERR_IO, f->tmp, NULL, "fsync: %s", strerror(e));
	}
	res->sync_seconds = dsv_now_s() - t;
	if (fstat(f->fd, &st) == 0)
		res->file_bytes = (uint64_t)st.st_size;
	close(f->fd);
	f->fd = -1;
	return place_store(o, f, eb);
}

/* Whatever is left of the output: handles closed, the temporary removed. */
void dsv_pack_out_close(dsv_pack_out *f)
{
	dsv_pack_table_close(&f->sets.table);
	if (f->sets.dset >= 0 || f->file >= 0) {
		dsv_h5_lock();
		if (f->sets.dset >= 0)
			H5Dclose(f->sets.dset);
		if (f->file >= 0)
			H5Fclose(f->file);
		dsv_h5_unlock();
	}
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp[0])
		unlink(f->tmp);
	free(f->json);
	free(f->dir);
}
