/*
 * The HDF5 format's table: named .h5, .hdf5, .hdf, .he5 or .nc, or known
 * by its signature; a file of datasets ("file.h5:/dset"), one of which a
 * spec without a dataset must be the only one; a virtual dataset opens as
 * its parts (h5_vds.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/str.h"
#include "dsview/source.h"
#include "dsview/h5info.h"
#include "formats/h5/h5_format.h"
#include "formats/h5/h5_vds.h"
#include "source/source_i.h"

static size_t h5_by_name(const char *name)
{
	static const char *const exts[] = { ".h5", ".hdf5", ".hdf", ".he5", ".nc" };
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (dsv_has_ext(name, exts[i]))
			return strlen(exts[i]);
	return 0;
}

/* HDF5 looks for its signature at 0, then at 512, 1024, ... (a user
 * block before the superblock); pack and h5py never write one over 1 MiB. */
static int h5_by_magic(int fd)
{
	static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
	unsigned char buf[8];
	for (uint64_t off = 0; off <= (1u << 20); off = off ? 2 * off : 512) {
		if (dsv_pread_fd(fd, buf, sizeof(buf), off))
			return 0;
		if (!memcmp(buf, sig, sizeof(sig)))
			return 1;
	}
	return 0;
}

/* The one dataset of the HDF5 file at path, in *name (a new string; NULL
 * on error). @return 0, or a dsv_err with eb set (not exactly one). */
static int only_dataset(const char *path, char **name, dsv_errbuf *eb)
{
	char **names = NULL;
	size_t n = 0;
	int err = dsv_h5_list_datasets(path, &names, &n, NULL, eb);

	*name = NULL;
	if (!err && n != 1)
		err = dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL,
				  "has %zu datasets; name one as %s:/dataset", n, path);
	for (size_t i = 0; i < n; i++)
		if (i || err)
			free(names[i]);
	if (!err)
		*name = names[0];
	free(names);
	return err;
}

static int h5_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	char *only = NULL;
	int err = 0;
	*out = NULL;
	if (!dataset && !(err = only_dataset(file, &only, eb)))
		dataset = only;
	if (!err)
		err = dsv_source_open_h5(file, dataset, out, eb);
	free(only);
	return err;
}

static int h5_open_parts(const char *file, const char *dataset, dsv_source ***out, size_t *n,
			 dsv_errbuf *eb)
{
	char *only = NULL;
	int err = 0;
	*out = NULL;
	*n = 0;
	if (!dataset && !(err = only_dataset(file, &only, eb)))
		dataset = only;
	if (!err)
		err = dsv_h5_open_parts(file, dataset, out, n, eb);
	free(only);
	return err;
}

/* The file's own datasets (links to others passed over). */
static int h5_list(const char *file, char ***names, size_t *n, dsv_errbuf *eb)
{
	return dsv_h5_list_datasets(file, names, n, NULL, eb);
}

const dsv_format dsv_format_h5 = {
	.name = "hdf5",
	.noun = "an HDF5 file (.h5)",
	.traits = DSV_FMT_DATASETS,
	.by_name = h5_by_name,
	.by_magic = h5_by_magic,
	.open = h5_open,
	.open_parts = h5_open_parts,
	.list = h5_list,
};
