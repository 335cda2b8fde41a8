/*
 * The HDF5 format's table: named .h5, .hdf5, .hdf, .he5 or .nc, or known
 * by its signature; a file of datasets ("file.h5:/dset"); a virtual
 * dataset opens as its parts (h5_vds.c).
 */
#include <string.h>

#include "common/str.h"
#include "dsview/source.h"
#include "formats/h5/h5.h"
#include "formats/h5/h5_format.h"
#include "formats/h5/h5_src.h"
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

static int h5_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	return dsv_source_open_h5(file, dataset, out, eb);
}

/* The file's own datasets (links to others passed over). */
static int h5_list(const char *file, char ***names, size_t *n, dsv_errbuf *eb)
{
	return dsv_h5_list_datasets(file, names, n, NULL, eb);
}

static void h5_prepare(char *const *files, size_t n)
{
	dsv_h5_probe_many(files, n, dsv_h5_probe_all);
}

const dsv_format dsv_format_h5 = {
	.name = "hdf5",
	.noun = "an HDF5 file (.h5)",
	.traits = DSV_FMT_DATASETS,
	.by_name = h5_by_name,
	.by_magic = h5_by_magic,
	.open = h5_open,
	.open_parts = dsv_h5_open_parts,
	.list = h5_list,
	.prepare = h5_prepare,
	.save = dsv_h5_index_save,
	.load = dsv_h5_index_load,
};
