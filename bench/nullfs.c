/*
 * nullfs: the benchmark's ceiling for the FUSE crossing. A read-only
 * low-level FUSE filesystem with one file, /data.dat, of SIZE bytes, whose
 * reads are answered from one preallocated buffer: no I/O, no decoding, no
 * copying on our side. It is mounted, opened and tuned exactly like dsview
 * (same mount options, keep_cache, largest requests and readahead, same
 * multi-threaded loop), so the difference between the two is dsview's work.
 *
 *   nullfs SIZE MOUNTPOINT      (stays in the foreground; SIGTERM unmounts)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#define READ_MAX (1u << 20)
#define FILE_INO 2
#define FILE_NAME "data.dat"

static uint64_t file_size;
static char *pattern; /* READ_MAX bytes every reply points into */

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)file_size;
		st->st_blksize = READ_MAX;
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->max_readahead < READ_MAX)
		conn->max_readahead = READ_MAX;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	if (parent != FUSE_ROOT_ID || strcmp(name, FILE_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = FILE_INO;
	e.attr_timeout = e.entry_timeout = 86400.0;
	fill_attr(FILE_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != FILE_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 86400.0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	if ((uint64_t)off >= file_size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > file_size - (uint64_t)off)
		size = (size_t)(file_size - (uint64_t)off);
	if (size > READ_MAX)
		size = READ_MAX;
	fuse_reply_buf(req, pattern, size);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	char buf[512];
	size_t n = 0;
	struct stat st;
	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	static const char *names[] = { ".", "..", FILE_NAME };
	for (off_t i = off; i < 3; i++) {
		fill_attr(i == 2 ? FILE_INO : FUSE_ROOT_ID, &st);
		size_t want = fuse_add_direntry(req, buf + n, sizeof(buf) - n, names[i], &st,
						i + 1);
		if (want > sizeof(buf) - n || n + want > size)
			break;
		n += want;
	}
	fuse_reply_buf(req, buf, n);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.readdir = op_readdir,
};

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	int rc;

	if (argc != 3 || !(file_size = strtoull(argv[1], NULL, 10))) {
		fprintf(stderr, "usage: nullfs SIZE MOUNTPOINT\n");
		return 1;
	}
	pattern = malloc(READ_MAX);
	if (!pattern)
		return 1;
	for (size_t i = 0; i < READ_MAX; i++)
		pattern[i] = (char)(i * 131);
	if (fuse_opt_add_arg(&args, "nullfs") ||
	    fuse_opt_add_arg(&args, "-oro,nosuid,nodev,default_permissions,fsname=nullfs,"
				    "subtype=nullfs"))
		return 1;
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) || fuse_session_mount(se, argv[2]))
		return 1;
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 8);
	fuse_loop_cfg_set_idle_threads(cfg, 8);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}
