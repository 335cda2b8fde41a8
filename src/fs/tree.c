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

#include "common/hash.h"
#include "fs/fs_i.h"

/* node.disk of a V.dat not counted yet (dsv_fs_node_disk) */
#define DISK_UNCOUNTED UINT64_MAX

/* The index: open addressing with linear probing on (parent, name),
 * slots hold inode numbers (0: empty), at most half full; it doubles as
 * it fills. FNV-1a of the name, mixed with the parent. */
static size_t child_hash(fuse_ino_t parent, const char *name, size_t len)
{
	uint64_t h = dsv_hash_bytes(DSV_HASH_SEED, name, len);
	h ^= (uint64_t)parent * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	return (size_t)h;
}

static fuse_ino_t find_child(dsv_fs *fs, fuse_ino_t parent, const char *name, size_t len)
{
	size_t mask = fs->nslots - 1;
	if (!fs->nslots)
		return 0;
	for (size_t i = child_hash(parent, name, len) & mask;; i = (i + 1) & mask) {
		fuse_ino_t ino = fs->slots[i];
		const node *n;
		if (!ino)
			return 0;
		n = &fs->nodes[ino - 1];
		if (n->parent == parent && n->namelen == len && !memcmp(n->name, name, len))
			return ino;
	}
}

static void index_put(fuse_ino_t *slots, size_t nslots, const node *n, fuse_ino_t ino)
{
	size_t i = child_hash(n->parent, n->name, n->namelen) & (nslots - 1);
	while (slots[i])
		i = (i + 1) & (nslots - 1);
	slots[i] = ino;
}

/* Room for one more entry in the index, rehashed into twice the slots
 * when it would pass half full. */
static int index_reserve(dsv_fs *fs)
{
	size_t n = fs->nslots ? fs->nslots * 2 : 1024;
	fuse_ino_t *slots;
	if ((fs->nindexed + 1) * 2 <= fs->nslots)
		return 0;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return DSV_ERR_NOMEM;
	for (size_t i = 0; i < fs->nslots; i++)
		if (fs->slots[i])
			index_put(slots, n, &fs->nodes[fs->slots[i] - 1], fs->slots[i]);
	free(fs->slots);
	fs->slots = slots;
	fs->nslots = n;
	return 0;
}

/* Appends a node under parent (0: the root itself, which is not indexed).
 * The node array grows geometrically, so it may move: node pointers do
 * not live across a call. @return its inode number, 0 when out of memory. */
static fuse_ino_t add_node(dsv_fs *fs, const char *name, size_t len, fuse_ino_t parent,
			   enum node_kind kind, int view, uint64_t size)
{
	fuse_ino_t ino;
	node *n;
	if (fs->nnodes == fs->capnodes) {
		size_t cap = fs->capnodes ? fs->capnodes * 2 : 1024;
		n = realloc(fs->nodes, cap * sizeof(*n));
		if (!n)
			return 0;
		fs->nodes = n;
		fs->capnodes = cap;
	}
	if (parent && index_reserve(fs))
		return 0;
	n = &fs->nodes[fs->nnodes];
	memset(n, 0, sizeof(*n));
	n->name = strndup(name, len);
	if (!n->name)
		return 0;
	n->namelen = len;
	n->parent = parent;
	n->kind = kind;
	n->view = view;
	n->size = size;
	ino = ++fs->nnodes;
	if (parent) {
		node *dir = &fs->nodes[parent - 1];
		if (dir->last_child)
			fs->nodes[dir->last_child - 1].next_sibling = ino;
		else
			dir->first_child = ino;
		dir->last_child = ino;
		index_put(fs->slots, fs->nslots, n, ino);
		fs->nindexed++;
	}
	return ino;
}

/* A view's files change when a source or the manifest does: the newer
 * mtime of the two (rsync -a then copies a view whose scale changed). */
int dsv_fs_tree_build(dsv_fs *fs)
{
	const dsv_engine *e = fs->engine;
	size_t nviews = dsv_engine_nviews(e);
	const char *skipped = dsv_engine_skipped_json(e);
	char buf[512];
	if (!(fs->file_ino = calloc(nviews * 2 + 1, sizeof(*fs->file_ino))) ||
	    !add_node(fs, "", 0, 0, N_DIR, -1, 0))
		return DSV_ERR_NOMEM;
	for (size_t i = 0; i < nviews; i++) {
		fuse_ino_t dir = FUSE_ROOT_ID;
		const char *p = dsv_engine_view_name(e, i), *slash;
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
			uint32_t file = DSV_ENGINE_FILE(i, files[k].kind == N_NPY);
			/* V.json's size is asked for when it is first looked up */
			uint64_t size = files[k].kind == N_JSON ? 0 : dsv_engine_file_size(e, file);
			int n = snprintf(buf, sizeof(buf), "%s%s", p, files[k].ext);
			if (find_child(fs, dir, buf, (size_t)n))
				return DSV_ERR_INVALID;
			fuse_ino_t f = add_node(fs, buf, (size_t)n, dir, files[k].kind, (int)i,
						size);
			if (!f)
				return DSV_ERR_NOMEM;
			fs->nodes[f - 1].disk = files[k].kind == N_DAT ? DISK_UNCOUNTED : 0;
			if (files[k].kind != N_JSON) {
				fs->nodes[f - 1].file = file;
				fs->file_ino[file] = f;
			}
		}
	}
	if (!add_node(fs, ".stats.json", 11, FUSE_ROOT_ID, N_STATS, -1, 0))
		return DSV_ERR_NOMEM;
	/* a zero-config mount's datasets not served, when there are any */
	if (skipped &&
	    !add_node(fs, ".skipped.json", 13, FUSE_ROOT_ID, N_SKIPPED, -1, strlen(skipped)))
		return DSV_ERR_NOMEM;
	/* every directory's mtime: the newest view's (manifest included), or
	 * the mount's */
	fs->dir_mtime = fs->mount_time;
	for (size_t i = 0; i < nviews; i++) {
		struct timespec t = dsv_engine_view_mtime(e, i);
		if (t.tv_sec > fs->dir_mtime.tv_sec)
			fs->dir_mtime = t;
	}
	return 0;
}

/* Blocks (st_blocks) are bytes on disk, so that du says what a mount
 * costs and du --apparent-size what it serves: a V.dat counts its view's
 * sources' stored bytes (compressed chunks as stored; a source shared by
 * two views counts in each), a V.npy, the same bytes behind a header,
 * counts none, and the small text files their size. A V.dat's are summed
 * at its first stat, not at mount: a Zarr source counts its chunk files
 * only when asked (dsv_source_stored_bytes), and the first stat is the
 * last moment, as the kernel keeps the attributes of a lookup. */
uint64_t dsv_fs_node_disk(dsv_fs *fs, const node *n)
{
	node *w = &fs->nodes[n - fs->nodes]; /* the tree is fs's to change */
	uint64_t sum = __atomic_load_n(&w->disk, __ATOMIC_ACQUIRE);
	if (sum != DISK_UNCOUNTED)
		return sum;
	sum = dsv_engine_view_disk(fs->engine, (size_t)n->view);
	__atomic_store_n(&w->disk, sum, __ATOMIC_RELEASE);
	return sum;
}

static void fill_stat(dsv_fs *fs, fuse_ino_t ino, const struct fuse_file_info *fi, struct stat *st)
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
		st->st_mtim = fs->dir_mtime;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)(n->kind == N_STATS ? dsv_fs_stats_size(fs, fi)
							 : dsv_fs_node_size(fs, n));
		st->st_mtim = n->view >= 0 ? dsv_engine_view_mtime(fs->engine, (size_t)n->view)
					   : fs->mount_time;
	}
	st->st_blocks = (off_t)((n->kind == N_DAT || n->kind == N_NPY ? dsv_fs_node_disk(fs, n)
								      : (uint64_t)st->st_size) +
				511) /
			512;
	st->st_atim = st->st_ctim = st->st_mtim;
}

uint64_t dsv_fs_node_size(const dsv_fs *fs, const node *n)
{
	size_t len = 0;
	if (n->kind != N_JSON)
		return n->size;
	(void)dsv_engine_view_json(fs->engine, (size_t)n->view, &len);
	return len;
}

void dsv_fs_tree_free(dsv_fs *fs)
{
	for (size_t i = 0; i < fs->nnodes; i++)
		free(fs->nodes[i].name);
	free(fs->nodes);
	free(fs->slots);
	free(fs->file_ino);
	fs->nodes = NULL;
	fs->slots = NULL;
	fs->file_ino = NULL;
	fs->nnodes = fs->capnodes = fs->nslots = fs->nindexed = 0;
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
	fill_stat(fs, ino, NULL, &e.attr);
	fuse_reply_entry(req, &e);
}

void dsv_fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dsv_fs *fs = fs_of(req);
	struct stat st;
	if (!node_of(fs, ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(fs, ino, fi, &st);
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
	/* Offsets: 0 ".", 1 "..", i + 2 the child at node index i; each
	 * entry's is that of the one after it (a sibling), end past them
	 * all. So a call resumes where the last one stopped in O(1), and
	 * a directory costs what it holds, not the whole tree. */
	size_t end = fs->nnodes + 2, i = (size_t)off;
	if (i >= 2 && (i >= end || i == 2 || fs->nodes[i - 2].parent != ino))
		i = end; /* not an offset we gave out for this directory */
	while (i < end) {
		struct stat st = { 0 };
		const char *name;
		size_t next;
		if (i == 0) {
			name = ".";
			st.st_ino = ino;
			next = 1;
		} else if (i == 1) {
			name = "..";
			st.st_ino = dir->parent ? dir->parent : ino;
			next = dir->first_child ? dir->first_child + 1 : end;
		} else {
			const node *n = &fs->nodes[i - 2];
			name = n->name;
			st.st_ino = i - 1;
			next = n->next_sibling ? n->next_sibling + 1 : end;
		}
		st.st_mode = (i < 2 || fs->nodes[i - 2].kind == N_DIR) ? S_IFDIR : S_IFREG;
		size_t need = fuse_add_direntry(req, buf + used, size - used, name, &st,
						(off_t)next);
		if (need > size - used)
			break;
		used += need;
		i = next;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}
