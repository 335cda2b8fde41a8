/*
 * Links: HDF5 paths must not lead out of the file. An external link names
 * another file (any file on the machine), and a user-defined link runs
 * code we do not know, so a dataset path is walked component by component
 * and both are refused by name; soft links stay inside the file but may
 * lead to an external link, so their targets are walked the same way.
 * Behind the walk, the link access list from dsv_h5_make_lapl refuses any
 * external link the walk did not foresee. Call with the global lock held.
 */
/* HDF5 1.12 renamed H5Lget_info's struct; ask for the 1.10 names. */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#include <stdio.h>
#include <string.h>

#include "formats/h5/h5.h"

#define H5_MAX_LINK_DEPTH 16
#define H5_MAX_PATH 4096

/* Link access callback: refuse to traverse any external link, so that even
 * a path our walk did not foresee cannot open another file. */
static herr_t deny_elink(const char *parent_file, const char *parent_group, const char *child_file,
			 const char *child_object, unsigned *acc_flags, hid_t fapl, void *op_data)
{
	(void)parent_file, (void)parent_group, (void)child_file;
	(void)child_object, (void)acc_flags, (void)fapl, (void)op_data;
	return -1;
}

hid_t dsv_h5_make_lapl(hid_t cls)
{
	hid_t p = H5Pcreate(cls);
	if (p >= 0 && H5Pset_elink_cb(p, deny_elink, NULL) < 0) {
		H5Pclose(p);
		return -1;
	}
	return p;
}

/*
 * Walks every component of dpath and refuses external and user-defined
 * links; soft links are followed by checking their target the same way
 * (they stay inside the file, but may lead to an external link).
 */
static int check_links(hid_t file, hid_t lapl, const char *dpath, int depth, const char *path,
		       const char *dname, dsv_errbuf *eb)
{
	char buf[H5_MAX_PATH], target[H5_MAX_PATH], next[H5_MAX_PATH];
	size_t n = strlen(dpath);

	if (depth > H5_MAX_LINK_DEPTH)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "too many nested soft links");
	if (n >= sizeof(buf))
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, dname, "dataset path too long");
	memcpy(buf, dpath, n + 1);

	for (size_t i = 0; i < n;) {
		H5L_info_t li;
		size_t end;

		while (i < n && buf[i] == '/')
			i++;
		if (i == n)
			break;
		for (end = i; end < n && buf[end] != '/'; end++)
			;
		char saved = buf[end];
		buf[end] = '\0';
		/* Asked twice: a file whose superblock extension names a
		 * metadata cache image the library cannot read (one past the
		 * end of the file) fails the first metadata read after
		 * H5Fopen, whatever it is, and is then read without the image,
		 * as h5py reads it. */
		if (H5Lget_info(file, buf, &li, lapl) < 0 && H5Lget_info(file, buf, &li, lapl) < 0)
			return dsv_errf_at(eb, DSV_ERR_NOTFOUND, path, dname,
					   "no such dataset (%s not found)", buf);
		if (li.type == H5L_TYPE_EXTERNAL)
			return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
					   "external link refused (%s)", buf);
		if (li.type == H5L_TYPE_SOFT) {
			int len;
			if (li.u.val_size == 0 || li.u.val_size > sizeof(target) ||
			    H5Lget_val(file, buf, target, sizeof(target), lapl) < 0)
				return dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname,
						   "unreadable soft link %s", buf);
			target[sizeof(target) - 1] = '\0';
			if (target[0] == '/') {
				len = snprintf(next, sizeof(next), "%s", target);
			} else {
				/* Relative: resolved in the group holding the link. */
				char *slash = strrchr(buf, '/');
				int plen = slash ? (int)(slash - buf) : 0;
				len = snprintf(next, sizeof(next), "%.*s/%s", plen, buf, target);
			}
			if (len < 0 || (size_t)len >= sizeof(next))
				return dsv_errf_at(eb, DSV_ERR_INVALID, path, dname,
						   "soft link target too long");
			int err = check_links(file, lapl, next, depth + 1, path, dname, eb);
			if (err)
				return err;
		} else if (li.type != H5L_TYPE_HARD) {
			return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
					   "user-defined link refused (%s)", buf);
		}
		buf[end] = saved;
		i = end;
	}
	return 0;
}

int dsv_h5_check_links(hid_t file, hid_t lapl, const char *path, const char *dname, dsv_errbuf *eb)
{
	return check_links(file, lapl, dname, 0, path, dname, eb);
}
