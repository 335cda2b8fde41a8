/*
 * Listing an HDF5 file's datasets (a mount with no manifest serves each
 * one; a damaged object is passed over with the library's reason), and
 * the fork probe's work for every HDF5 file dsview reads.
 */
/* HDF5 1.12 renamed H5Lvisit's structs; ask for the 1.10 names. */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/h5info.h"
#include "formats/h5/h5.h"
#include "formats/h5/h5_format.h"
#include "formats/h5/h5_src.h"
#include "source/source_i.h"

/* Sanity caps on what a file may ask of us before we allocate or recurse. */
#define H5_MAX_DATASETS (1u << 20)
#define H5_MAX_GROUP_DEPTH 256 /* the walk recurses once a level */

void dsv_h5_probe_all(const char *path)
{
	char **names = NULL;
	size_t n = 0;
	dsv_errbuf eb;

	if (dsv_h5_list_datasets(path, &names, &n, NULL, &eb) == 0) {
		for (size_t i = 0; i < n; i++) {
			dsv_source *s;
			dsv_h5_desc d;
			dsv_h5_vds v = { 0 }; /* a virtual dataset's mappings read too */
			if (dsv_h5_open_any(path, names[i], &s, &v, &eb) == 0 && !v.found)
				dsv_source_close(s);
			dsv_h5_vds_free(&v);
			(void)dsv_h5_describe(path, names[i], &d, &eb);
		}
	}
}

/*
 * The walk: H5Literate over each group by name, going into a subgroup
 * right after its link (the order H5Lvisit gave, so views keep their
 * order). Our own walk rather than H5Lvisit because H5Lvisit gives up on
 * the whole file at the first damaged object or group; here such an
 * object is recorded with the library's reason and its siblings are still
 * listed. A group reached by two hard links is walked once (a set of
 * object addresses), as H5Lvisit does, which also ends hard-link cycles.
 */
typedef struct h5_list {
	char **names;
	size_t n, cap;
	size_t skipped[2]; /* soft; external and user-defined */
	dsv_h5_unlisted *bad;
	size_t nbad, capbad;
	haddr_t *seen; /* group addresses + 1 (0: empty slot), at most half full */
	size_t nseen, capseen;
	int err;
} h5_list;

/* Adds a group's address to the set. @return 1 when it was there
 * already, 0 when added, -1 when out of memory. */
static int seen_add(h5_list *l, haddr_t addr)
{
	if ((l->nseen + 1) * 2 > l->capseen) {
		size_t cap = l->capseen ? l->capseen * 2 : 64;
		haddr_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return -1;
		for (size_t i = 0; i < l->capseen; i++) {
			if (!l->seen[i])
				continue;
			size_t k = (size_t)(l->seen[i] * 0x9e3779b97f4a7c15ull) & (cap - 1);
			while (t[k])
				k = (k + 1) & (cap - 1);
			t[k] = l->seen[i];
		}
		free(l->seen);
		l->seen = t;
		l->capseen = cap;
	}
	haddr_t key = addr + 1;
	size_t k = (size_t)(key * 0x9e3779b97f4a7c15ull) & (l->capseen - 1);
	for (; l->seen[k]; k = (k + 1) & (l->capseen - 1))
		if (l->seen[k] == key)
			return 1;
	l->seen[k] = key;
	l->nseen++;
	return 0;
}

static char *join(const char *prefix, const char *name)
{
	size_t a = strlen(prefix), b = strlen(name);
	char *full = malloc(a + b + 2);
	if (full) {
		memcpy(full, prefix, a);
		full[a] = '/';
		memcpy(full + a + 1, name, b + 1);
	}
	return full;
}

/* Takes full (NULL: out of memory). @return 0 or -1 (l->err set). */
static int add_name(h5_list *l, char *full)
{
	if (!full) {
		l->err = DSV_ERR_NOMEM;
		return -1;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **p;
		if (cap > H5_MAX_DATASETS) {
			free(full);
			l->err = DSV_ERR_OVERFLOW;
			return -1;
		}
		p = realloc(l->names, cap * sizeof(*p));
		if (!p) {
			free(full);
			l->err = DSV_ERR_NOMEM;
			return -1;
		}
		l->names = p;
		l->cap = cap;
	}
	l->names[l->n++] = full;
	return 0;
}

/* Records that the object at full (taken; NULL: out of memory) could not
 * be listed: what, and why (NULL: nothing more to say).
 * @return 0 or -1 (l->err set). */
static int add_bad_why(h5_list *l, char *full, const char *what, const char *why)
{
	if (!full) {
		l->err = DSV_ERR_NOMEM;
		return -1;
	}
	if (l->nbad == l->capbad) {
		size_t cap = l->capbad ? 2 * l->capbad : 8;
		dsv_h5_unlisted *p = cap > H5_MAX_DATASETS ? NULL
							   : realloc(l->bad, cap * sizeof(*p));
		if (!p) {
			free(full);
			l->err = cap > H5_MAX_DATASETS ? DSV_ERR_OVERFLOW : DSV_ERR_NOMEM;
			return -1;
		}
		l->bad = p;
		l->capbad = cap;
	}
	l->bad[l->nbad].path = full;
	if (why)
		snprintf(l->bad[l->nbad].reason, sizeof(l->bad[l->nbad].reason), "%s (%s)", what,
			 why);
	else
		snprintf(l->bad[l->nbad].reason, sizeof(l->bad[l->nbad].reason), "%s", what);
	l->nbad++;
	return 0;
}

/* As add_bad_why, with the library's reason for the call that just failed. */
static int add_bad(h5_list *l, char *full, const char *what)
{
	char why[200];
	return add_bad_why(l, full, what, dsv_h5_error_reason(why, sizeof(why), NULL));
}

typedef struct walk_at {
	h5_list *l;
	const char *prefix; /* the group's path, "" for the root */
	int depth;          /* of the group: 0 for the root */
} walk_at;

static int walk_group(h5_list *l, hid_t group, const char *prefix, int depth);

static herr_t list_cb(hid_t group, const char *name, const H5L_info_t *li, void *op)
{
	walk_at *at = op;
	h5_list *l = at->l;
	H5O_info_t oi;
	hid_t obj;
	char *full;

	/* Hard links only: soft ones name objects we list anyway, and
	 * external ones lead out of the file. */
	if (li->type != H5L_TYPE_HARD) {
		l->skipped[li->type != H5L_TYPE_SOFT]++;
		return 0;
	}
	/* A store's block tables are the store's, not data to serve. */
	if (at->depth == 0 && strcmp(name, DSV_STORE_BLOCKS + 1) == 0)
		return 0;
	full = join(at->prefix, name);
	obj = full ? H5Oopen(group, name, H5P_DEFAULT) : -1;
	if (obj < 0)
		return add_bad(l, full, "cannot open object");
	if (H5Oget_info(obj, &oi) < 0) {
		H5Oclose(obj);
		return add_bad(l, full, "unreadable object header");
	}
	int rc = 0;
	if (oi.type == H5O_TYPE_DATASET) {
		rc = add_name(l, full);
	} else if (oi.type == H5O_TYPE_GROUP) {
		int seen = seen_add(l, oi.addr);
		if (seen < 0) {
			l->err = DSV_ERR_NOMEM;
			rc = -1;
		} else if (!seen && at->depth + 1 > H5_MAX_GROUP_DEPTH) {
			rc = add_bad_why(l, full, "group nested too deep (at most 256 levels)",
					 NULL);
			full = NULL;
		} else if (!seen) {
			rc = walk_group(l, obj, full, at->depth + 1);
		}
		free(full);
	} else {
		free(full);
	}
	H5Oclose(obj);
	return rc;
}

/* @return 0, or -1 when the walk must end (l->err set). A group that
 * cannot be listed (to its end) is recorded in l->bad. */
static int walk_group(h5_list *l, hid_t group, const char *prefix, int depth)
{
	walk_at at = { l, prefix, depth };
	hsize_t idx = 0;
	if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, list_cb, &at) >= 0)
		return 0;
	if (l->err)
		return -1;
	return add_bad(l, strdup(*prefix ? prefix : "/"), "cannot list group");
}

void dsv_h5_unlisted_free(dsv_h5_unlisted *bad, size_t n)
{
	for (size_t i = 0; bad && i < n; i++)
		free(bad[i].path);
	free(bad);
}

int dsv_h5_list_all(const char *path, char ***names, size_t *count, size_t skipped[2],
		    dsv_h5_unlisted **bad, size_t *nbad, dsv_errbuf *eb)
{
	h5_list l = { 0 };
	H5O_info_t oi;
	hid_t file;
	int err = 0;

	*names = NULL;
	*count = 0;
	*bad = NULL;
	*nbad = 0;
	if ((err = dsv_h5_check_input(path, dsv_h5_probe_all, eb)))
		return err;

	if (dsv_h5_lock() < 0) {
		err = dsv_errf_at(eb, DSV_ERR_INTERNAL, path, NULL, "HDF5 setup failed");
		goto out;
	}
	file = H5Fopen(path, H5F_ACC_RDONLY, dsv_h5_ro_fapl());
	if (file < 0) {
		err = dsv_h5_open_failed(path, eb);
		goto out;
	}
	if (H5Oget_info(file, &oi) >= 0 && seen_add(&l, oi.addr) < 0)
		l.err = DSV_ERR_NOMEM;
	if (!l.err)
		(void)walk_group(&l, file, "", 0);
	if (l.err)
		err = dsv_errf_at(eb, l.err, path, NULL, "cannot list datasets (%s)",
				  l.err == DSV_ERR_OVERFLOW ? "too many" : "out of memory");
	else if (l.n == 0 && l.nbad > 0)
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, l.bad[0].path,
				  "cannot list datasets: %s", l.bad[0].reason);
	H5Fclose(file);
out:
	dsv_h5_unlock();
	free(l.seen);
	if (err) {
		for (size_t i = 0; i < l.n; i++)
			free(l.names[i]);
		free(l.names);
		dsv_h5_unlisted_free(l.bad, l.nbad);
		return err;
	}
	*names = l.names;
	*count = l.n;
	*bad = l.bad;
	*nbad = l.nbad;
	if (skipped) {
		skipped[0] = l.skipped[0];
		skipped[1] = l.skipped[1];
	}
	return 0;
}

int dsv_h5_list_datasets(const char *path, char ***names, size_t *count, size_t skipped[2],
			 dsv_errbuf *eb)
{
	dsv_h5_unlisted *bad;
	size_t nbad;
	int err = dsv_h5_list_all(path, names, count, skipped, &bad, &nbad, eb);
	dsv_h5_unlisted_free(bad, nbad);
	return err;
}
