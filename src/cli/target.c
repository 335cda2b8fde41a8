/* The PATH argument of info and verify; see target.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/str.h"
#include "cli/target.h"
#include "dsview/source.h"
#include "net/net.h"
#include "source/source.h"

/* HDF5 looks for its signature at 0, then at 512, 1024, ... (a user
 * block before the superblock); pack and h5py never write one over 1 MiB. */
static int has_h5_signature(const char *path)
{
	static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
	unsigned char buf[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;

	if (fd < 0)
		return 0;
	for (off_t off = 0; off <= (1 << 20) && !found; off = off ? 2 * off : 512)
		if (pread(fd, buf, sizeof(buf), off) == (ssize_t)sizeof(buf))
			found = !memcmp(buf, sig, sizeof(sig));
		else
			break;
	close(fd);
	return found;
}

/* The kind t's name says (raw: what the caller says), or -1 when the
 * name alone does not tell. */
static int kind_by_name(const dsv_target *t, int raw)
{
	if (raw)
		return DSV_TARGET_RAW;
	if (t->dataset || dsv_source_is_h5_path(t->file))
		return DSV_TARGET_H5;
	if (dsv_has_ext(t->file, ".npy"))
		return DSV_TARGET_NPY;
	if (dsv_nifti_name(t->file))
		return DSV_TARGET_NIFTI;
	return -1;
}

/* An object's URL (t->file): a HEAD says it is there and its size; the
 * name alone says its kind. */
static int parse_url(dsv_target *t, int raw, dsv_errbuf *eb)
{
	dsv_net_obj *o;
	/* a prefix, not an object: no HEAD */
	if (!raw && !t->dataset && dsv_source_zarr_version(t->file)) {
		t->kind = DSV_TARGET_ZARR;
		return 0;
	}
	if (!raw && !t->dataset && dsv_source_zarr_group(t->file)) {
		t->kind = DSV_TARGET_ZARR_GROUP;
		return 0;
	}
	int err = dsv_net_open(t->file, &o, eb);
	if (err) {
		dsv_target_free(t);
		return err;
	}
	t->file_bytes = dsv_net_size(o);
	dsv_net_close(o);
	int kind = kind_by_name(t, raw);
	if (kind >= 0)
		t->kind = kind;
	else {
		dsv_target_free(t);
		return dsv_errf_at(
			eb, DSV_ERR_INVALID, t->file, NULL,
			"not a .npy, .nii or HDF5 object; a raw one needs --dtype and --shape");
	}
	return 0;
}

int dsv_target_parse(const char *spec, int raw, dsv_target *t, dsv_errbuf *eb)
{
	struct stat st;

	memset(t, 0, sizeof(*t));
	if (dsv_url_scheme_len(spec)) {
		if (raw ? !(t->file = strdup(spec)) : dsv_spec_split(spec, &t->file, &t->dataset)) {
			dsv_target_free(t);
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		}
		return parse_url(t, raw, eb);
	}
	/* "file.h5:/dset", split as dsv_source_open does, unless the whole
	 * spec is itself a file. */
	if ((raw || stat(spec, &st) == 0) ? !(t->file = strdup(spec))
					  : dsv_spec_split(spec, &t->file, &t->dataset)) {
		dsv_target_free(t);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	if (stat(t->file, &st) < 0) {
		int e = errno;
		dsv_errf_at(eb, e == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, t->file, NULL, "%s",
			    strerror(e));
		dsv_target_free(t);
		return e == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO;
	}
	if (!raw && S_ISDIR(st.st_mode) && !t->dataset && dsv_source_zarr_version(t->file)) {
		t->kind = DSV_TARGET_ZARR;
		return 0;
	}
	if (!raw && S_ISDIR(st.st_mode) && !t->dataset && dsv_source_zarr_group(t->file)) {
		t->kind = DSV_TARGET_ZARR_GROUP;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		dsv_errf_at(eb, DSV_ERR_INVALID, t->file, NULL, "not a regular file");
		dsv_target_free(t);
		return DSV_ERR_INVALID;
	}
	t->file_bytes = (uint64_t)st.st_size;
	/* The name decides first; the signature only for other names (a
	 * .npy's data may well hold the HDF5 signature somewhere). */
	int kind = kind_by_name(t, raw);
	if (kind >= 0)
		t->kind = kind;
	else if (dsv_has_ext(t->file, ".ini"))
		t->kind = DSV_TARGET_MANIFEST;
	else if (has_h5_signature(t->file))
		t->kind = DSV_TARGET_H5;
	else {
		dsv_errf_at(eb, DSV_ERR_INVALID, t->file, NULL,
			    "not a .npy, .nii, HDF5 file or manifest (.ini); a raw file needs "
			    "--dtype and --shape");
		dsv_target_free(t);
		return DSV_ERR_INVALID;
	}
	return 0;
}

void dsv_target_free(dsv_target *t)
{
	if (!t)
		return;
	free(t->file);
	free(t->dataset);
	t->file = t->dataset = NULL;
}

const char *dsv_target_label(char *buf, size_t cap, const char *file, const char *dataset)
{
	if (dataset)
		snprintf(buf, cap, "%s:%s", dsv_cli_path_escaped(file, 1), dsv_cli_shown(dataset));
	else
		snprintf(buf, cap, "%s", dsv_cli_path_escaped(file, 1));
	return buf;
}
