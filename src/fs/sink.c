/* The engine's sink (engine.h): the pages it makes ahead of a reader
 * stored in the kernel's page cache for the file's inode (FUSE
 * notify_store), and dropped from it (notify_inval_inode: pages a reader
 * still maps are unmapped, and a read of them again asks for them). */
#include "fs/fs_i.h"

static int store(void *ctx, uint32_t file, uint64_t off, const void *buf, size_t len)
{
	dsv_fs *fs = ctx;
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);
	bv.buf[0].mem = (void *)buf; /* only read */
	/* fails with ENOENT once the kernel has forgotten the inode */
	if (fuse_lowlevel_notify_store(fs->se, fs->file_ino[file], (off_t)off, &bv, 0) != 0)
		return DSV_ERR_IO;
	return 0;
}

static int drop(void *ctx, uint32_t file, uint64_t off, uint64_t len)
{
	dsv_fs *fs = ctx;
	return fuse_lowlevel_notify_inval_inode(fs->se, fs->file_ino[file], (off_t)off,
						(off_t)len) == 0
		       ? 0
		       : DSV_ERR_IO;
}

void dsv_fs_sink(dsv_fs *fs, dsv_engine_sink *sink)
{
	*sink = (dsv_engine_sink){
		.store = store, .drop = drop, .ctx = fs, .max_store = READ_MAX, .reads_kept = 1
	};
}
