/*
 * The ops that serve files: open, read, release, statfs, and the refusals
 * of a read-only filesystem; the op table. dsv_err_to_errno here is the
 * one place a dsv_err becomes an errno. See the DESIGN note in fs.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "common/tlsbuf.h"
#include "fs/fs_i.h"

static int dsv_err_to_errno(int err)
{
	switch (err) {
	case DSV_ERR_NOMEM: return ENOMEM;
	case DSV_ERR_INVALID: return EINVAL;
	case DSV_ERR_NOTFOUND: return ENOENT;
	default: return EIO;
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	dsv_fs *fs = userdata;
	/* libfuse wants a max_read mount option repeated here, or it fails
	 * the INIT ("init() and fuse_session_new() requested different
	 * maximum read size"). */
	if (fs->max_read)
		conn->max_read = fs->max_read;
	/* Ask for the largest requests the kernel allows (libfuse's default
	 * max_write already gives 1 MiB max_pages). */
	if (conn->max_readahead < READ_MAX)
		conn->max_readahead = READ_MAX;
	if (fs->max_background) {
		conn->max_background = fs->max_background;
		conn->congestion_threshold = fs->max_background * 3 / 4;
	}
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	const node *n = node_of(fs, ino);
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n->kind == N_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (n->kind == N_STATS) {
		stats_snap *snap = dsv_fs_snap_new(fs);
		if (!snap) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		fi->fh = (uint64_t)(uintptr_t)snap;
		fi->direct_io = 1; /* content changes; never mmapped */
	} else
		fi->keep_cache = 1; /* immutable: repeat reads stay in the page cache */
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	dsv_engine_opened(fs->engine, n->kind == N_DAT || n->kind == N_NPY, ctx ? ctx->pid : 0);
	if (fuse_reply_open(req, fi) == -ENOENT && n->kind == N_STATS)
		dsv_fs_snap_free(fs, (stats_snap *)(uintptr_t)fi->fh);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	const node *n = node_of(fs, ino);
	if (n && n->kind == N_STATS)
		dsv_fs_snap_free(fs, (stats_snap *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void reply_slice(fuse_req_t req, const char *data, size_t len, size_t size, off_t off)
{
	if ((uint64_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, data + off,
			       len - (size_t)off < size ? len - (size_t)off : size);
}

static void read_view(dsv_fs *fs, fuse_req_t req, const node *n, size_t size, uint64_t off)
{
	if (off >= n->size || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > n->size - off)
		size = (size_t)(n->size - off);
	/* The reply is made in this thread's buffer, reused by every request
	 * it serves, and written to the kernel synchronously. */
	char *buf = dsv_tls_buf(DSV_TLS_OUT, size);
	int err = buf ? dsv_engine_read(fs->engine, n->file, off, size, buf) : DSV_ERR_NOMEM;
	if (err) {
		fuse_reply_err(req, dsv_err_to_errno(err));
		return;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fuse_reply_buf(req, buf, size);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	dsv_engine_time_reply(fs->engine, &t0, &t1);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	const node *n = node_of(fs, ino);
	dsv_engine_count_request(fs->engine);
	if (!n || n->kind == N_DIR) {
		fuse_reply_err(req, n ? EISDIR : ENOENT);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	switch (n->kind) {
	case N_JSON: {
		size_t len;
		const char *text = dsv_engine_view_json(fs->engine, (size_t)n->view, &len);
		if (!text)
			fuse_reply_err(req, ENOMEM);
		else
			reply_slice(req, text, len, size, off);
		break;
	}
	case N_SKIPPED:
		reply_slice(req, dsv_engine_skipped_json(fs->engine), (size_t)n->size, size, off);
		break;
	case N_STATS: {
		/* Reply from a copy of the handle's snapshot. Once the kernel has
		 * the reply, the reader may close the file and another worker
		 * free the snapshot in op_release while this one is still in
		 * writev: ASan's interceptor reads the iovec after the call, and
		 * reported exactly that (1 run in ~8 under SANITIZE=address). */
		char *copy = strdup(((const stats_snap *)(uintptr_t)fi->fh)->text);
		if (!copy) {
			fuse_reply_err(req, ENOMEM);
			break;
		}
		reply_slice(req, copy, strlen(copy), size, off);
		free(copy);
		break;
	}
	default: read_view(fs, req, n, size, (uint64_t)off);
	}
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	dsv_fs *fs = fs_of(req);
	struct statvfs sv = { 0 };
	uint64_t total = 0;
	(void)ino;
	/* like a read-only image (squashfuse): the size is what the mount
	 * stands for on disk (the blocks of tree.c, du's total), all used */
	for (size_t i = 0; i < fs->nnodes; i++) {
		const node *n = &fs->nodes[i];
		total += n->kind == N_DAT || n->kind == N_NPY ? dsv_fs_node_disk(fs, n)
							      : dsv_fs_node_size(fs, n);
	}
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = (total + 4095) / 4096;
	sv.f_files = fs->nnodes;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
	fuse_reply_statfs(req, &sv);
}

/*
 * Read-only refusals. The mount is ro, and on a ro mount the kernel refuses
 * every write with EROFS itself: none of these requests arrives. But root
 * can remount it rw (mount(2) MS_REMOUNT without MS_RDONLY; dsview cannot
 * stop that), and then SETATTR, MKNOD, MKDIR, UNLINK, RMDIR, SYMLINK,
 * RENAME, LINK, CREATE, SETXATTR and REMOVEXATTR do reach us: each is
 * answered EROFS here, where libfuse would answer ENOSYS, which the kernel
 * turns into "not implemented" (or, for CREATE, a MKNOD). WRITE and
 * FALLOCATE never arrive even then: they need a file opened for writing,
 * and op_open refuses that (test_security: ..._after_a_remount_rw_...).
 */
static void op_erofs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			     struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_name(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			   dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			    struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	fuse_reply_err(req, EROFS);
}

/* Sampler hints (dsview/fs.h, hints.h): rows of an open V.dat or V.npy
 * to make and store ahead of the reader. Checked whole before any is
 * queued; the mount stays read-only (an ioctl is not a write). */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz)
{
	dsv_fs *fs = fs_of(req);
	const node *n = node_of(fs, ino);
	const dsv_prefetch_rows *r = in_buf;
	(void)arg, (void)fi, (void)out_bufsz;
	if (!n || (n->kind != N_DAT && n->kind != N_NPY) || cmd != DSV_IOC_PREFETCH ||
	    (flags & FUSE_IOCTL_COMPAT)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	/* a negative row reads as a huge one, which the engine refuses */
	if (in_bufsz != sizeof(*r) || r->n > DSV_PREFETCH_MAX || r->flags != 0 ||
	    dsv_engine_hint(fs->engine, n->file, (const uint64_t *)r->rows, r->n)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_ioctl(req, 0, NULL, 0);
}

static void op_erofs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			      size_t size, int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_erofs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	fuse_reply_err(req, EROFS);
}

const struct fuse_lowlevel_ops dsv_fs_ops = {
	.init = op_init,
	.lookup = dsv_fs_op_lookup,
	.getattr = dsv_fs_op_getattr,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.readdir = dsv_fs_op_readdir,
	.statfs = op_statfs,
	.ioctl = op_ioctl,
	.setattr = op_erofs_setattr,
	.mknod = op_erofs_mknod,
	.mkdir = op_erofs_mkdir,
	.unlink = op_erofs_name,
	.rmdir = op_erofs_name,
	.symlink = op_erofs_symlink,
	.rename = op_erofs_rename,
	.link = op_erofs_link,
	.create = op_erofs_create,
	.setxattr = op_erofs_setxattr,
	.removexattr = op_erofs_removexattr,
};
