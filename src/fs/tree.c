/*
 * The tree: built once at mount from the manifest's views, never changed.
 * Inode numbers are indexes into fs->nodes (nodes[ino - 1]); inode 1 is
 * the root. See the DESIGN note at the top of fs.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs_i.h"

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

int dsv_fs_tree_build(dsv_fs *fs)
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

void dsv_fs_tree_free(dsv_fs *fs)
{
	for (size_t i = 0; i < fs->nnodes; i++)
		free(fs->nodes[i].name);
	free(fs->nodes);
	fs->nodes = NULL;
	fs->nnodes = 0;
}

void dsv_fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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

void dsv_fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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

void dsv_fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
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
