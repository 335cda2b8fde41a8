/*
 * DESIGN
 *
 * The FUSE front end (low-level API). It is the top of the house: a read
 * walks fs -> view (byte range to chunk spans) -> cache -> backend (source
 * pread, codec, transform) and comes back as bytes; nothing below calls up,
 * and only this file includes FUSE headers or speaks errno.
 *
 * The tree is built once at mount and never changes: inode 1 is the root,
 * then for every view its directories (zero-config HDF5 groups), V.dat,
 * V.npy and V.json, and /.stats.json. Inode numbers are indexes into a node
 * array, so lookups need no lock. Data files are immutable, so they are
 * opened with keep_cache and never direct_io (mmap needs the page cache);
 * only /.stats.json, whose content changes, is direct_io, rendered at open
 * and owned by the file handle.
 *
 * Reads: the requested range is clipped at EOF; dsv_read (dsview/read.h)
 * makes its output bytes, behind the .npy header where there is one, in
 * this worker thread's reply buffer: plain elements pread and transformed,
 * or decoded chunks taken from the cache and transformed, each written
 * once. The buffer is reused by every request the thread serves (warm
 * pages, no fault per reply) and the reply is written synchronously. Any
 * failed piece fails the whole request with EIO: a short reply would make
 * the kernel treat the file as ending there and hand out zeros, which we
 * must never do.
 *
 * Readahead (prefetch.h): every read tells the prefetcher which chunks it
 * touched; the chunks ahead of a sequential stream are made by its threads
 * the same way and stored in the kernel's page cache for the file (FUSE
 * notify_store), so the reader finds them there without a request. The
 * kernel's own readahead window stays small (--readahead, 128 KiB), which
 * is what shuffled memmap readers need.
 *
 * Errors: core functions return dsv_err; dsv_err_to_errno is the one place
 * that turns them into errno.
 */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/log.h"
#include "dsview/backend.h"
#include "dsview/cache.h"
#include "dsview/fs.h"
#include "common/tlsbuf.h"
#include "dsview/read.h"
#include "fs/prefetch.h"

#define READ_MAX (1u << 20)

enum node_kind { N_DIR, N_DAT, N_NPY, N_JSON, N_STATS };

typedef struct node {
	char *name;
	fuse_ino_t parent;
	enum node_kind kind;
	int view; /* index in the manifest, -1 for dirs and stats */
	uint64_t size;
} node;

struct dsv_fs {
	dsv_manifest *m;
	char *mountpoint;
	dsv_fs_opts o;
	struct fuse_session *se;
	int mounted;
	dsv_backend *backend;
	dsv_cache *cache;
	dsv_prefetch *prefetch; /* NULL: off */
	node *nodes; /* nodes[ino - 1] */
	size_t nnodes;
	struct timespec mount_time;
	_Atomic uint64_t reads, bytes_served, read_errors, opens;
	/* output bytes (as if transformed) of every chunk decoded and every
	 * plain piece pread: against bytes_served, the read amplification */
	_Atomic uint64_t bytes_decoded;
	_Atomic uint64_t bytes_pushed; /* stored in the page cache by readahead */
	unsigned max_read; /* -o max_read=N, or 0 */
	/* .stats.json snapshots of open handles. The kernel sends RELEASE
	 * after close without waiting; an unmount can end the connection
	 * before it arrives, so what is left here is freed at the end. */
	pthread_mutex_t snap_lock;
	struct stats_snap *snaps;
};

/* One open .stats.json: its text as of open. */
typedef struct stats_snap {
	struct stats_snap *prev, *next;
	char text[];
} stats_snap;

static int dsv_err_to_errno(int err)
{
	switch (err) {
	case DSV_ERR_NOMEM: return ENOMEM;
	case DSV_ERR_INVALID: return EINVAL;
	case DSV_ERR_NOTFOUND: return ENOENT;
	default: return EIO;
	}
}

static dsv_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static const node *node_of(dsv_fs *fs, fuse_ino_t ino)
{
	if (ino < 1 || ino > fs->nnodes)
		return NULL;
	return &fs->nodes[ino - 1];
}

/* ---- tree ---- */

static fuse_ino_t add_node(dsv_fs *fs, const char *name, size_t len, fuse_ino_t parent,
			   enum node_kind kind, int view, uint64_t size)
{
	node *n = realloc(fs->nodes, (fs->nnodes + 1) * sizeof(*n));
	if (!n)
		return 0;
	fs->nodes = n;
	n = &fs->nodes[fs->nnodes];
	n->name = strndup(name, len);
	if (!n->name)
		return 0;
	n->parent = parent;
	n->kind = kind;
	n->view = view;
	n->size = size;
	return ++fs->nnodes;
}

static fuse_ino_t find_child(dsv_fs *fs, fuse_ino_t parent, const char *name, size_t len)
{
	for (size_t i = 1; i < fs->nnodes; i++) {
		const node *n = &fs->nodes[i];
		if (n->parent == parent && strlen(n->name) == len && !memcmp(n->name, name, len))
			return i + 1;
	}
	return 0;
}

static int build_tree(dsv_fs *fs)
{
	char buf[512];
	if (!add_node(fs, "", 0, 0, N_DIR, -1, 0))
		return DSV_ERR_NOMEM;
	for (size_t i = 0; i < fs->m->nviews; i++) {
		const dsv_view *v = fs->m->views[i];
		fuse_ino_t dir = FUSE_ROOT_ID;
		const char *p = v->name, *slash;
		/* zero-config HDF5 groups become directories */
		while ((slash = strchr(p, '/'))) {
			fuse_ino_t d = find_child(fs, dir, p, (size_t)(slash - p));
			if (!d && !(d = add_node(fs, p, (size_t)(slash - p), dir, N_DIR, -1, 0)))
				return DSV_ERR_NOMEM;
			dir = d;
			p = slash + 1;
		}
		static const struct {
			const char *ext;
			enum node_kind kind;
		} files[] = { { ".dat", N_DAT }, { ".npy", N_NPY }, { ".json", N_JSON } };
		for (size_t k = 0; k < 3; k++) {
			uint64_t size = files[k].kind == N_DAT ? v->nbytes
				      : files[k].kind == N_NPY ? v->nbytes + v->npy_header_len
							       : strlen(v->json);
			int n = snprintf(buf, sizeof(buf), "%s%s", p, files[k].ext);
			if (find_child(fs, dir, buf, (size_t)n))
				return DSV_ERR_INVALID;
			if (!add_node(fs, buf, (size_t)n, dir, files[k].kind, (int)i, size))
				return DSV_ERR_NOMEM;
		}
	}
	if (!add_node(fs, ".stats.json", 11, FUSE_ROOT_ID, N_STATS, -1, 0))
		return DSV_ERR_NOMEM;
	return 0;
}

static void fill_stat(dsv_fs *fs, fuse_ino_t ino, struct stat *st)
{
	const node *n = node_of(fs, ino);
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 1 << 20;
	if (n->kind == N_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		st->st_mtim = fs->mount_time;
		for (size_t i = 0; i < fs->m->nviews; i++)
			if (fs->m->views[i]->mtime.tv_sec > st->st_mtim.tv_sec)
				st->st_mtim = fs->m->views[i]->mtime;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
		st->st_mtim = n->view >= 0 ? fs->m->views[n->view]->mtime : fs->mount_time;
	}
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* ---- ops ---- */

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
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	dsv_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	fuse_ino_t ino = find_child(fs, parent, name, strlen(name));
	if (!ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr_timeout = e.entry_timeout = node_of(fs, ino)->kind == N_STATS ? 0 : 86400;
	fill_stat(fs, ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	struct stat st;
	(void)fi;
	if (!node_of(fs, ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(fs, ino, &st);
	fuse_reply_attr(req, &st, node_of(fs, ino)->kind == N_STATS ? 0 : 86400);
}

static char *render_stats(dsv_fs *fs);

static stats_snap *snap_new(dsv_fs *fs)
{
	char *s = render_stats(fs);
	size_t len = s ? strlen(s) : 0;
	stats_snap *snap = s ? malloc(sizeof(*snap) + len + 1) : NULL;
	if (snap) {
		memcpy(snap->text, s, len + 1);
		pthread_mutex_lock(&fs->snap_lock);
		snap->prev = NULL;
		snap->next = fs->snaps;
		if (fs->snaps)
			fs->snaps->prev = snap;
		fs->snaps = snap;
		pthread_mutex_unlock(&fs->snap_lock);
	}
	free(s);
	return snap;
}

static void snap_free(dsv_fs *fs, stats_snap *snap)
{
	pthread_mutex_lock(&fs->snap_lock);
	if (snap->prev)
		snap->prev->next = snap->next;
	else
		fs->snaps = snap->next;
	if (snap->next)
		snap->next->prev = snap->prev;
	pthread_mutex_unlock(&fs->snap_lock);
	free(snap);
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
	atomic_fetch_add(&fs->opens, 1);
	if (n->kind == N_STATS) {
		stats_snap *snap = snap_new(fs);
		if (!snap) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		fi->fh = (uint64_t)(uintptr_t)snap;
		fi->direct_io = 1; /* content changes; never mmapped */
	} else {
		fi->keep_cache = 1; /* immutable: repeat reads stay in the page cache */
	}
	if (fuse_reply_open(req, fi) == -ENOENT && n->kind == N_STATS)
		snap_free(fs, (stats_snap *)(uintptr_t)fi->fh);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	const node *n = node_of(fs, ino);
	if (n && n->kind == N_STATS)
		snap_free(fs, (stats_snap *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void reply_slice(fuse_req_t req, const char *data, size_t len, size_t size, off_t off)
{
	if ((uint64_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, data + off, len - (size_t)off < size ? len - (size_t)off : size);
}

/* Bytes [off, off + len) of data file n (inside it) into buf: the .npy
 * header where it lies in the range, then the view's output. */
static int file_bytes(dsv_fs *fs, const node *n, uint64_t off, size_t len, char *buf,
		      dsv_read_info *info)
{
	const dsv_view *v = fs->m->views[n->view];
	uint64_t hdr = n->kind == N_NPY ? v->npy_header_len : 0;
	int err = 0;
	if (off < hdr) {
		size_t h = (size_t)(hdr - off < len ? hdr - off : len);
		memcpy(buf, v->npy_header + off, h);
		buf += h;
		off += h;
		len -= h;
	}
	memset(info, 0, sizeof(*info));
	info->first = UINT64_MAX; /* no chunk */
	if (len)
		err = dsv_read(fs->cache, v, (uint32_t)n->view, off - hdr, len, buf, info);
	atomic_fetch_add(&fs->bytes_decoded, info->plain_bytes);
	return err;
}

static void read_view(dsv_fs *fs, fuse_req_t req, fuse_ino_t ino, const node *n, size_t size,
		      uint64_t off)
{
	dsv_read_info info;
	int err;

	if (off >= n->size || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > n->size - off)
		size = (size_t)(n->size - off);
	/* The reply is made in this thread's buffer, reused by every request
	 * it serves, and written to the kernel synchronously. */
	char *buf = dsv_tls_buf(DSV_TLS_OUT, size);
	err = buf ? file_bytes(fs, n, off, size, buf, &info) : DSV_ERR_NOMEM;
	if (err) {
		atomic_fetch_add(&fs->read_errors, 1);
		fuse_reply_err(req, dsv_err_to_errno(err));
		return;
	}
	if (info.first <= info.last)
		dsv_prefetch_hint(fs->prefetch, (uint32_t)(ino - 1), info.first, info.last, size);
	atomic_fetch_add(&fs->bytes_served, size);
	fuse_reply_buf(req, buf, size);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	const node *n = node_of(fs, ino);
	atomic_fetch_add(&fs->reads, 1);
	if (!n || n->kind == N_DIR) {
		fuse_reply_err(req, n ? EISDIR : ENOENT);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	switch (n->kind) {
	case N_JSON:
		reply_slice(req, fs->m->views[n->view]->json, (size_t)n->size, size, off);
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
	default:
		read_view(fs, req, ino, n, size, (uint64_t)off);
	}
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	const node *dir = node_of(fs, ino);
	char *buf;
	size_t used = 0;
	(void)fi;
	if (!dir || dir->kind != N_DIR) {
		fuse_reply_err(req, dir ? ENOTDIR : ENOENT);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* offsets: 0 ".", 1 "..", then i + 2 for node index i */
	for (size_t i = (size_t)off; i < fs->nnodes + 2; i++) {
		struct stat st = { 0 };
		const char *name;
		if (i == 0) {
			name = ".";
			st.st_ino = ino;
		} else if (i == 1) {
			name = "..";
			st.st_ino = dir->parent ? dir->parent : ino;
		} else if (fs->nodes[i - 2].parent == ino && i - 2 > 0) {
			name = fs->nodes[i - 2].name;
			st.st_ino = i - 1;
		} else {
			continue;
		}
		st.st_mode = (i < 2 || fs->nodes[i - 2].kind == N_DIR) ? S_IFDIR : S_IFREG;
		size_t need = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)(i + 1));
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	dsv_fs *fs = fs_of(req);
	struct statvfs sv = { 0 };
	uint64_t total = 0;
	(void)ino;
	for (size_t i = 0; i < fs->nnodes; i++)
		total += fs->nodes[i].size;
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = (total + 4095) / 4096;
	sv.f_files = fs->nnodes;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
	fuse_reply_statfs(req, &sv);
}

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

static void op_erofs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	fuse_reply_err(req, EROFS);
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

static void op_erofs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			       struct fuse_file_info *fi)
{
	(void)ino, (void)mode, (void)offset, (void)length, (void)fi;
	fuse_reply_err(req, EROFS);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.readdir = op_readdir,
	.statfs = op_statfs,
	.setattr = op_erofs_setattr,
	.mknod = op_erofs_mknod,
	.mkdir = op_erofs_mkdir,
	.unlink = op_erofs_name,
	.rmdir = op_erofs_name,
	.symlink = op_erofs_symlink,
	.rename = op_erofs_rename,
	.link = op_erofs_link,
	.create = op_erofs_create,
	.write = op_erofs_write,
	.setxattr = op_erofs_setxattr,
	.removexattr = op_erofs_removexattr,
	.fallocate = op_erofs_fallocate,
};

static char *render_stats(dsv_fs *fs)
{
	dsv_cache_stats cs;
	char *s = NULL;
	dsv_cache_get_stats(fs->cache, &cs);
	if (asprintf(&s,
		     "{\n  \"pid\": %d,\n  \"backend\": \"%s\",\n  \"kernel\": \"%s\",\n  \"views\": %zu,\n"
		     "  \"reads\": %llu,\n  \"bytes_served\": %llu,\n  \"bytes_decoded\": %llu,\n"
		     "  \"read_errors\": %llu,\n"
		     "  \"opens\": %llu,\n  \"chunks_decoded\": %llu,\n  \"decode_errors\": %llu,\n"
		     "  \"cache_hits\": %llu,\n  \"cache_misses\": %llu,\n  \"cache_waits\": %llu,\n"
		     "  \"cache_evictions\": %llu,\n  \"cache_entries\": %llu,\n"
		     "  \"cache_ghost_hits\": %llu,\n  \"cache_reuses\": %llu,\n"
		     "  \"cache_bytes_probation\": %llu,\n"
		     "  \"cache_bytes\": %llu,\n  \"cache_budget\": %llu,\n  \"prefetched\": %llu,\n"
		     "  \"bytes_pushed\": %llu,\n"
		     "  \"errors\": %llu\n}\n",
		     (int)getpid(), dsv_backend_name(fs->backend), dsv_xform_kernel_name(), fs->m->nviews,
		     (unsigned long long)fs->reads, (unsigned long long)fs->bytes_served,
		     (unsigned long long)fs->bytes_decoded, (unsigned long long)fs->read_errors,
		     (unsigned long long)fs->opens,
		     (unsigned long long)(cs.fills - cs.fill_errors), (unsigned long long)cs.fill_errors,
		     (unsigned long long)cs.hits, (unsigned long long)cs.misses,
		     (unsigned long long)cs.waits, (unsigned long long)cs.evictions,
		     (unsigned long long)cs.entries, (unsigned long long)cs.ghost_hits,
		     (unsigned long long)cs.reuses, (unsigned long long)cs.bytes_probation,
		     (unsigned long long)cs.bytes_used,
		     (unsigned long long)cs.budget,
		     (unsigned long long)dsv_prefetch_done(fs->prefetch),
		     (unsigned long long)fs->bytes_pushed,
		     (unsigned long long)(fs->read_errors + cs.fill_errors)) < 0)
		return NULL;
	return s;
}

static int cache_fill(void *ctx, uint32_t view, uint64_t chunk, void *buf, size_t size)
{
	dsv_fs *fs = ctx;
	const dsv_view *v = fs->m->views[view];
	size_t ses = dsv_dtype_size(dsv_source_get_info(v->sources[0])->dtype);
	atomic_fetch_add(&fs->bytes_decoded, size / ses * v->out_esize);
	return dsv_backend_decode(fs->backend, v, chunk, buf, size);
}

/* ---- lifecycle ---- */

/* Finds -o max_read=N with libfuse's own option parser, on a copy of the
 * arguments (a matched template is consumed from the list it parses). */
static int parse_max_read(dsv_fs *fs, const char *optbuf)
{
	static const struct fuse_opt spec[] = {
		{ "max_read=%u", offsetof(dsv_fs, max_read), 0 },
		FUSE_OPT_END,
	};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	int rc = 0;
	if (fuse_opt_add_arg(&args, "dsview") || fuse_opt_add_arg(&args, optbuf))
		rc = DSV_ERR_NOMEM;
	else if (fuse_opt_parse(&args, fs, spec, NULL) != 0)
		rc = DSV_ERR_INVALID;
	fuse_opt_free_args(&args);
	return rc;
}

int dsv_fs_mount(dsv_manifest *m, const char *mountpoint, const dsv_fs_opts *o, dsv_fs **out,
		 dsv_errbuf *eb)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char optbuf[1024];
	dsv_fs *fs = calloc(1, sizeof(*fs));
	int err = 0;

	*out = NULL;
	if (!fs)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	fs->m = m;
	fs->o = *o;
	pthread_mutex_init(&fs->snap_lock, NULL);
	clock_gettime(CLOCK_REALTIME, &fs->mount_time);
	fs->mountpoint = strdup(mountpoint);
	if (!fs->mountpoint || (err = build_tree(fs))) {
		err = dsv_errf(eb, err ? err : DSV_ERR_NOMEM, "%s: view names collide or out of memory",
			       m->path);
		goto fail;
	}
	/* The caller's options go first: libfuse lets a later option undo an
	 * earlier one, so what every dsview mount is comes last, where no -o
	 * can turn it off (the CLI refuses rw, suid and dev outright), and a
	 * string too long for the buffer is an error, never cut short. */
	if (snprintf(optbuf, sizeof(optbuf), "-o%s%sfsname=dsview,subtype=dsview,ro,nosuid,nodev,"
		     "default_permissions", o->fuse_opts ? o->fuse_opts : "",
		     o->fuse_opts ? "," : "") >= (int)sizeof(optbuf)) {
		err = dsv_errf(eb, DSV_ERR_INVALID, "%s: FUSE options too long", mountpoint);
		goto fail;
	}
	if (fuse_opt_add_arg(&args, "dsview") || fuse_opt_add_arg(&args, optbuf) ||
	    (o->debug && fuse_opt_add_arg(&args, "-d"))) {
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((err = parse_max_read(fs, optbuf))) {
		fuse_opt_free_args(&args);
		err = dsv_errf(eb, err, "%s: bad FUSE options '%s'", mountpoint,
			       o->fuse_opts ? o->fuse_opts : "");
		goto fail;
	}
	fs->se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		err = dsv_errf(eb, DSV_ERR_INVALID, "%s: bad FUSE options '%s'", mountpoint,
			       o->fuse_opts ? o->fuse_opts : "");
		goto fail;
	}
	if (fuse_session_mount(fs->se, mountpoint) != 0) {
		err = dsv_errf(eb, DSV_ERR_IO, "%s: mount failed (is /dev/fuse usable, and the "
			       "mountpoint an empty directory?)", mountpoint);
		goto fail;
	}
	fs->mounted = 1;
	*out = fs;
	return 0;
fail:
	fs->m = NULL; /* the caller keeps the manifest on failure */
	dsv_fs_destroy(fs);
	return err;
}

/* 1 if mountpoint still holds a mount whose connection is gone. */
static int dead_mount(const char *mountpoint)
{
	struct statvfs sv; /* not stat: the kernel may answer that from its cache */
	return statvfs(mountpoint, &sv) < 0 && errno == ENOTCONN;
}

/* Decodes a /proc/self/mountinfo field in place: the kernel writes space,
 * tab, newline and backslash in a path as octal \NNN (fs/proc_namespace.c,
 * mangle()), so "/mnt/a b" reads "/mnt/a\040b". */
static void mountinfo_unescape(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* The kernel's readahead for this mount is the bdi's read_ahead_kb; set it
 * to the chosen window (FUSE's own default is the largest request size).
 * The device number comes from mountinfo: a stat() of the mountpoint would be
 * a FUSE request that nobody answers yet (so is realpath: mountpoint must
 * already be canonical). Needs root; harmless to skip. */
static void set_readahead(const char *mountpoint, uint64_t bytes)
{
	char line[8192], path[128];
	unsigned maj = 0, min = 0;
	int found = 0;
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char point[4096];
		unsigned a, b;
		if (sscanf(line, "%*s %*s %u:%u %*s %4095s", &a, &b, point) != 3)
			continue;
		mountinfo_unescape(point);
		if (!strcmp(point, mountpoint) && strstr(line, " fuse.dsview ")) {
			maj = a;
			min = b;
			found = 1;
		}
	}
	fclose(f);
	f = NULL;
	if (!found)
		goto out;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	f = fopen(path, "w");
	if (f)
		fprintf(f, "%llu\n", (unsigned long long)(bytes / 1024));
out:
	if (f)
		fclose(f);
}

/* Readahead: the prefetcher's threads make the chunks ahead of a file's
 * sequential streams and store them in the kernel's page cache for that
 * file (FUSE notify_store), where the reader's next page faults find them
 * without a request. A chunk is stored from the page where it starts to
 * the page where the next one starts, so consecutive chunks tile the file
 * in whole pages (a page stored in two parts would never be up to date);
 * a tripwire chunk (prefetch.h) leaves its first page to the reader.
 * Stores go in pieces of at most READ_MAX bytes. */
#define PREFETCH_BYTES (8u << 20) /* decoded (source) bytes ahead of a stream */
#define PREFETCH_THREADS 2

static int push_chunk(void *ctx, uint32_t file, uint64_t chunk, int trip)
{
	dsv_fs *fs = ctx;
	const node *n = &fs->nodes[file];
	const dsv_view *v = fs->m->views[n->view];
	uint64_t hdr = n->kind == N_NPY ? v->npy_header_len : 0, off, len;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	dsv_read_info info;
	int err = dsv_read_chunk_range(v, chunk, &off, &len);
	if (err)
		return err;
	uint64_t end = off + len == v->nbytes ? n->size : (hdr + off + len) / page * page;
	off = (off == 0 ? 0 : (hdr + off) / page * page) + (trip ? page : 0);
	while (off < end) {
		size_t k = (size_t)(end - off < READ_MAX ? end - off : READ_MAX);
		char *buf = dsv_tls_buf(DSV_TLS_OUT, k);
		if (!buf)
			return DSV_ERR_NOMEM;
		if ((err = file_bytes(fs, n, off, k, buf, &info)))
			return err;
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(k);
		bv.buf[0].mem = buf;
		/* fails with ENOENT once the kernel has forgotten the inode */
		if (fuse_lowlevel_notify_store(fs->se, file + 1, (off_t)off, &bv, 0) != 0)
			return DSV_ERR_IO;
		atomic_fetch_add(&fs->bytes_pushed, k);
		off += k;
	}
	return 0;
}

static void start_prefetch(dsv_fs *fs)
{
	const char *env = getenv("DSVIEW_READAHEAD_KB"); /* for measuring: 0 turns it off */
	uint64_t bytes = env ? strtoull(env, NULL, 10) * 1024 : PREFETCH_BYTES;
	dsv_view **file_views;

	if (bytes == 0 || !(file_views = calloc(fs->nnodes, sizeof(*file_views))))
		return;
	for (size_t i = 0; i < fs->nnodes; i++)
		if (fs->nodes[i].kind == N_DAT || fs->nodes[i].kind == N_NPY)
			file_views[i] = fs->m->views[fs->nodes[i].view];
	fs->prefetch = dsv_prefetch_start(file_views, fs->nnodes, PREFETCH_THREADS, bytes,
					  push_chunk, fs);
	free(file_views);
}

int dsv_fs_serve(dsv_fs *fs, dsv_errbuf *eb)
{
	struct fuse_loop_config *cfg;
	int err, threads = fs->o.threads > 0 ? fs->o.threads : 8;

	/* Other allocations above 128 KiB (edge-chunk scratch, the HDF5
	 * library's) come straight from mmap too, as the cache's chunk buffers
	 * do, so what is freed goes back to the system and RSS follows the
	 * cache budget. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_ARENA_MAX, 4);
	if ((err = dsv_backend_create(fs->o.gpu, &fs->backend, eb)))
		return err;
	fs->cache = dsv_cache_create(fs->o.cache_size, cache_fill, fs);
	if (!fs->cache)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, (unsigned)threads);
	fuse_loop_cfg_set_idle_threads(cfg, (unsigned)threads);
	/* The handlers point at fs->se, which dsv_fs_destroy frees: from here
	 * every way out removes them (libfuse's, too, when it installed only
	 * some: it resets those that are its own). */
	if (fuse_set_signal_handlers(fs->se) != 0) {
		err = dsv_errf(eb, DSV_ERR_INTERNAL, "cannot install signal handlers");
		goto out_handlers;
	}
	dsv_log_info("serving %zu view(s) from %s at %s (cache %llu bytes, %d threads, readahead "
		     "%llu KiB, kernel %s)",
		     fs->m->nviews, fs->m->path, fs->mountpoint, (unsigned long long)fs->o.cache_size,
		     threads, (unsigned long long)(fs->o.readahead / 1024), dsv_xform_kernel_name());
	set_readahead(fs->mountpoint, fs->o.readahead);
	start_prefetch(fs);
	err = fuse_session_loop_mt(fs->se, cfg);
	/* An unmount that races a request the kernel is handing to a worker
	 * fails that read with ECONNABORTED instead of ENODEV (libfuse's
	 * clean end). Gone from the mount table means unmounted, not aborted:
	 * an abort through /sys/fs/fuse/connections leaves a dead mount. */
	if (err == -ECONNABORTED && !dead_mount(fs->mountpoint))
		err = 0;
	dsv_prefetch_stop(fs->prefetch);
	fs->prefetch = NULL;
	fuse_session_unmount(fs->se);
	fs->mounted = 0;
	dsv_log_info("unmounted %s", fs->mountpoint);
	/* > 0: the signal that ended the loop, a clean end */
	err = err < 0 ? dsv_errf(eb, DSV_ERR_IO, "FUSE loop failed: %s", strerror(-err)) : 0;
out_handlers:
	fuse_remove_signal_handlers(fs->se);
	fuse_loop_cfg_destroy(cfg);
	return err;
}

void dsv_fs_close_fd(dsv_fs *fs)
{
	close(fuse_session_fd(fs->se));
}

void dsv_fs_destroy(dsv_fs *fs)
{
	if (!fs)
		return;
	dsv_prefetch_stop(fs->prefetch);
	if (fs->se) {
		if (fs->mounted)
			fuse_session_unmount(fs->se);
		fuse_session_destroy(fs->se);
	}
	dsv_cache_destroy(fs->cache);
	dsv_backend_destroy(fs->backend);
	for (size_t i = 0; i < fs->nnodes; i++)
		free(fs->nodes[i].name);
	free(fs->nodes);
	dsv_manifest_free(fs->m);
	free(fs->mountpoint);
	while (fs->snaps)
		snap_free(fs, fs->snaps);
	pthread_mutex_destroy(&fs->snap_lock);
	free(fs);
}
