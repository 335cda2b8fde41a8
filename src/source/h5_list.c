/*
 * Listing an HDF5 file's datasets (a mount with no manifest serves each
 * one), and the fork probe's work for every HDF5 file dsview reads.
 */
/* HDF5 1.12 renamed H5Lvisit's structs; ask for the 1.10 names. */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#include <stdlib.h>
#include <string.h>

#include "dsview/h5info.h"
#include "h5/h5.h"
#include "source/h5_src.h"
#include "source/source_i.h"

/* Sanity cap on what a file may ask of us before we allocate. */
#define H5_MAX_DATASETS (1u << 20)

void dsv_h5_probe_all(const char *path)
{
	char **names = NULL;
	size_t n = 0;
	dsv_errbuf eb;

	if (dsv_h5_list_datasets(path, &names, &n, NULL, &eb) == 0) {
		for (size_t i = 0; i < n; i++) {
			dsv_source *s;
			dsv_h5_desc d;
			if (dsv_source_open_h5(path, names[i], &s, &eb) == 0)
				dsv_source_close(s);
			(void)dsv_h5_describe(path, names[i], &d, &eb);
		}
	}
}

typedef struct h5_list {
	char **names;
	size_t n, cap;
	size_t skipped[2]; /* soft; external and user-defined */
	int err;
} h5_list;

static herr_t list_cb(hid_t group, const char *name, const H5L_info_t *li, void *op)
{
	h5_list *l = op;
	hid_t obj;
	int is_dset;

	/* Hard links only: soft ones name objects we list anyway, and
	 * external ones lead out of the file. */
	if (li->type != H5L_TYPE_HARD) {
		l->skipped[li->type != H5L_TYPE_SOFT]++;
		return 0;
	}
	obj = H5Oopen(group, name, H5P_DEFAULT);
	if (obj < 0)
		return 0;
	is_dset = H5Iget_type(obj) == H5I_DATASET;
	H5Oclose(obj);
	if (!is_dset)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **p;
		if (cap > H5_MAX_DATASETS) {
			l->err = DSV_ERR_OVERFLOW;
			return -1;
		}
		p = realloc(l->names, cap * sizeof(*p));
		if (!p) {
			l->err = DSV_ERR_NOMEM;
			return -1;
		}
		l->names = p;
		l->cap = cap;
	}
	size_t len = strlen(name);
	char *full = malloc(len + 2);
	if (!full) {
		l->err = DSV_ERR_NOMEM;
		return -1;
	}
	full[0] = '/';
	memcpy(full + 1, name, len + 1);
	l->names[l->n++] = full;
	return 0;
}

int dsv_h5_list_datasets(const char *path, char ***names, size_t *count, size_t skipped[2],
			 dsv_errbuf *eb)
{
	h5_list l = { 0 };
	hid_t file;
	int err = 0;

	*names = NULL;
	*count = 0;
	if ((err = dsv_h5_check_input(path, dsv_h5_probe_all, eb)))
		return err;

	if (dsv_h5_lock() < 0) {
		err = dsv_errf_at(eb, DSV_ERR_INTERNAL, path, NULL, "HDF5 setup failed");
		goto out;
	}
	file = H5Fopen(path, H5F_ACC_RDONLY, dsv_h5_ro_fapl());
	if (file < 0) {
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, NULL, "not an HDF5 file, or damaged");
		goto out;
	}
	if (H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, list_cb, &l) < 0) {
		err = l.err ? l.err : DSV_ERR_FORMAT;
		err = dsv_errf_at(eb, err, path, NULL, "cannot list datasets%s",
				  err == DSV_ERR_OVERFLOW ? " (too many)" : "");
	}
	H5Fclose(file);
out:
	dsv_h5_unlock();
	if (err) {
		for (size_t i = 0; i < l.n; i++)
			free(l.names[i]);
		free(l.names);
		return err;
	}
	*names = l.names;
	*count = l.n;
	if (skipped) {
		skipped[0] = l.skipped[0];
		skipped[1] = l.skipped[1];
	}
	return 0;
}
