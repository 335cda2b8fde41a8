/*
 * EEGLAB datasets (.set, with the data embedded or in a .fdt beside it) as
 * sources of shape (trials, channels, time): a continuous recording is one
 * row (1, nbchan, pnts), an epoched one a row per trial.
 *
 * A .set is a MATLAB Level-5 MAT-file (mat5.c): EEGLAB today saves each
 * field of its EEG structure as a variable of its own (MATLAB -v6, no
 * compression), older versions one struct variable `EEG`; both are read.
 * nbchan, pnts, trials and srate are numbers, chanlocs(i).labels the
 * channels' names, and data either the samples (a numeric matrix
 * [nbchan, pnts, trials], column-major, in whatever storage type MATLAB
 * chose for it: a double matrix of whole numbers may be stored as int16,
 * and is served as those int16 values) or the name of the .fdt file that
 * holds them (float32, little-endian, in the same order). Either way the
 * file holds the samples time-major, channel fastest, so a run of the
 * source's (channel, time) elements is gathered from rows of all
 * channels (source/timerows.c, which the v7.3 files' reader in the HDF5
 * folder shares: h5_mat73.c).
 *
 * Refused with the reason: MATLAB -v7 files whose variables are
 * compressed, a v7.3 header with no HDF5 file after it; complex data, and
 * data whose dimensions disagree with nbchan, pnts and trials.
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/str.h"
#include "common/tlsbuf.h"
#include "dsview/source.h"
#include "formats/eeglab/eeglab.h"
#include "formats/eeglab/mat5.h"
#include "source/source_i.h"

/* What the layout finds: the counts, and where the samples are. */
typedef struct eeg_state {
	uint64_t C, T, K; /* nbchan, pnts, trials */
	size_t es;
	uint64_t data_off;
	dsv_source *fdt; /* the .fdt, its descriptor the cache's (fds.c); NULL: in the .set */
} eeg_state;

/* The dsview dtype of MAT storage type t. */
static dsv_dtype dtype_of(int t)
{
	switch (t) {
	case DSV_MI_INT8: return DSV_I8;
	case DSV_MI_UINT8: return DSV_U8;
	case DSV_MI_INT16: return DSV_I16;
	case DSV_MI_UINT16: return DSV_U16;
	case DSV_MI_INT32: return DSV_I32;
	case DSV_MI_UINT32: return DSV_U32;
	case DSV_MI_SINGLE: return DSV_F32;
	case DSV_MI_DOUBLE: return DSV_F64;
	case DSV_MI_INT64: return DSV_I64;
	case DSV_MI_UINT64: return DSV_U64;
	default: return DSV_DTYPE_INVALID;
	}
}

static int mat_read(void *arg, void *buf, size_t n, uint64_t off)
{
	return dsv_source_pread(arg, buf, n, off);
}

/* Where EEGLAB's fields are: top-level variables, or the fields of the
 * struct variable EEG (older files). */
typedef struct eeg_scope {
	const dsv_mat *m;
	int in_struct;
	dsv_mat_var eeg;
} eeg_scope;

static int get(const eeg_scope *sc, const char *name, dsv_mat_var *v, dsv_errbuf *eb)
{
	return sc->in_struct ? dsv_mat_field(sc->m, &sc->eeg, name, v, 1, eb)
			     : dsv_mat_find(sc->m, name, v, eb);
}

/* A whole number >= 1 from field name. */
static int count(const eeg_scope *sc, const char *name, uint64_t *out, dsv_errbuf *eb)
{
	dsv_mat_var v;
	double d;
	int err = get(sc, name, &v, eb);
	if (!err && (err = dsv_mat_scalar(sc->m, &v, &d, eb)) == 0 &&
	    !(d >= 1 && d <= 0x1p40 && d == (double)(uint64_t)d))
		err = dsv_errf(eb, DSV_ERR_FORMAT, "'%s' is %g, not a count", name, d);
	if (!err)
		*out = (uint64_t)d;
	return err;
}

/* The channels' labels (chanlocs(i).labels) as a JSON array, or NULL
 * where the file has none. */
static json_t *labels(const eeg_scope *sc, uint64_t C)
{
	dsv_mat_var cl, *v = calloc(C, sizeof(*v));
	dsv_errbuf eb;
	json_t *a = NULL;
	char t[64];
	if (v && !get(sc, "chanlocs", &cl, &eb) &&
	    !dsv_mat_field(sc->m, &cl, "labels", v, C, &eb)) {
		a = json_array();
		for (uint64_t i = 0; a && i < C; i++)
			json_array_append_new(
				a,
				json_string(dsv_mat_string(sc->m, &v[i], t, sizeof(t), &eb) ? ""
											    : t));
	}
	free(v);
	return a;
}

static int eeg_attrs(dsv_source *s, const eeg_scope *sc, const eeg_state *st, const char *fdt)
{
	dsv_mat_var v;
	dsv_errbuf eb;
	double srate = 0;
	json_t *o = json_object(), *l = labels(sc, st->C);
	json_object_set_new(o, "format", json_string("EEGLAB"));
	if (!get(sc, "srate", &v, &eb) && !dsv_mat_scalar(sc->m, &v, &srate, &eb))
		json_object_set_new(o, "sample_rate", json_real(srate));
	json_object_set_new(o, "trials", json_integer((json_int_t)st->K));
	json_object_set_new(o, "channels", l ? l : json_null());
	json_object_set_new(o, "data", json_string(fdt ? fdt : "embedded"));
	s->attrs_json = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	s->info.attrs = s->attrs_json;
	return s->attrs_json ? 0 : DSV_ERR_NOMEM;
}

/* The .fdt named by data (a char array), beside the .set: opened into
 * st->fdt, its size checked. */
static int open_fdt(dsv_source *s, const eeg_scope *sc, const dsv_mat_var *data, eeg_state *st,
		    char *name, size_t cap, dsv_errbuf *eb)
{
	dsv_errbuf sub;
	int err = dsv_mat_string(sc->m, data, name, cap, eb);
	if (err)
		return err;
	if (strchr(name, '/'))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "data",
				   "names '%s', not a file beside it", name);
	if ((err = dsv_source_open_beside(s, name, &st->fdt, &sub)))
		return dsv_errf_at(eb, err == DSV_ERR_NOMEM ? err : DSV_ERR_NOTFOUND, NULL, "data",
				   "names '%s', which cannot be opened: %s", name, sub.reason);
	uint64_t size = st->fdt->file_size;
	st->es = 4;
	uint64_t want = st->C * st->T * st->K * 4;
	if (size != want)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, NULL, "data",
				   "'%s' is %lld bytes, not nbchan * pnts * trials * 4 = %llu",
				   name, (long long)size, (unsigned long long)want);
	s->info.dtype = DSV_F32;
	s->info.stored_bytes = want;
	return 0;
}

/* The samples embedded in data (a numeric matrix), checked against the
 * counts. */
static int embedded(dsv_source *s, const dsv_mat_var *d, eeg_state *st, dsv_errbuf *eb)
{
	uint64_t k = d->ndims > 2 ? d->dims[2] : 1;
	for (int i = 3; i < d->ndims; i++)
		k *= d->dims[i];
	if (d->cls < 6 || d->cls > 15 || d->complex || dtype_of(d->type) == DSV_DTYPE_INVALID)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, NULL, "data",
				   "not a real numeric matrix (class %d, stored as type %d)",
				   d->cls, d->type);
	if (d->dims[0] != st->C || d->dims[1] != st->T || k != st->K)
		return dsv_errf_at(
			eb, DSV_ERR_FORMAT, NULL, "data",
			"is %llu x %llu x %llu, but nbchan, pnts, trials are %llu, %llu, "
			"%llu",
			(unsigned long long)d->dims[0], (unsigned long long)d->dims[1],
			(unsigned long long)k, (unsigned long long)st->C, (unsigned long long)st->T,
			(unsigned long long)st->K);
	st->es = dsv_mat_type_size(d->type);
	if (d->data_len / st->es != d->numel || d->data_len % st->es)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, NULL, "data",
				   "holds %llu bytes of type %d for %llu values",
				   (unsigned long long)d->data_len, d->type,
				   (unsigned long long)d->numel);
	st->data_off = d->data_off;
	s->info.dtype = dtype_of(d->type);
	s->info.stored_bytes = d->data_len;
	return 0;
}

static int eeg_layout(dsv_source *s, eeg_state *st, dsv_errbuf *eb)
{
	dsv_mat m = { mat_read, s, s->file_size };
	eeg_scope sc = { &m, 0, { { 0 } } };
	dsv_mat_var data;
	char fdt[256];
	int err;

	if ((err = dsv_mat_check_header(&m, eb)))
		return err;
	if (!dsv_mat_find(&m, "EEG", &sc.eeg, eb) && sc.eeg.cls == DSV_MX_STRUCT)
		sc.in_struct = 1;
	if ((err = count(&sc, "nbchan", &st->C, eb)) || (err = count(&sc, "pnts", &st->T, eb)) ||
	    (err = count(&sc, "trials", &st->K, eb)) || (err = get(&sc, "data", &data, eb)))
		return err;
	if (st->C > (1u << 20) || st->T > UINT64_MAX / st->C / st->K / 8)
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, NULL, "data", "too many samples");
	err = data.cls == DSV_MX_CHAR ? open_fdt(s, &sc, &data, st, fdt, sizeof(fdt), eb)
				      : embedded(s, &data, st, eb);
	if (err)
		return err;
	err = dsv_source_set_time_rows(s, st->fdt, st->data_off, st->K, st->C, st->T);
	st->fdt = NULL; /* s's now */
	if (err)
		return dsv_errf_at(eb, err, NULL, "data", "too many samples");
	s->info.kind = DSV_SRC_EEGLAB;
	dsv_source_why(s, "EEGLAB, %s, time-major samples gathered",
		       data.cls == DSV_MX_CHAR ? "data in its .fdt" : "data embedded");
	if (eeg_attrs(s, &sc, st, data.cls == DSV_MX_CHAR ? fdt : NULL))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	return 0;
}

/* MATLAB v7.3 saves HDF5 after a 512-byte header whose text says so:
 * such a file is the HDF5 folder's (h5_mat73.c); this one's header says
 * so without the HDF5 file after it. */
static int is_v73(dsv_source *s)
{
	char h[20];
	return s->file_size >= 512 && !dsv_source_pread(s, h, sizeof(h), 0) &&
	       !memcmp(h, "MATLAB 7.3 MAT-file", 19);
}

int dsv_source_open_eeglab(const char *path, dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(path, NULL);
	eeg_state st = { 0 };
	dsv_errbuf sub;
	int err;

	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)))
		goto fail;
	if (is_v73(s)) {
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, NULL,
				  "says MATLAB v7.3, but no HDF5 file follows its 512-byte header");
		goto fail;
	}
	if ((err = eeg_layout(s, &st, &sub)) == DSV_ERR_UNSUPPORTED && !sub.where[0])
		err = dsv_errf_at(eb, err, path, NULL,
				  "%s; dsview pack cannot convert it either: save it uncompressed "
				  "(EEGLAB's pop_saveset(EEG, 'version', '6'), MATLAB's save -v6)",
				  sub.reason);
	else if (err)
		err = dsv_errf_at(eb, err, path, sub.where, "%s", sub.reason);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	dsv_source_close(st.fdt);
	dsv_source_close(s);
	return err;
}

static size_t eeglab_by_name(const char *name)
{
	return dsv_has_ext(name, ".set") ? 4 : 0;
}

static int eeglab_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	(void)dataset;
	return dsv_source_open_eeglab(file, out, eb);
}

const dsv_format dsv_format_eeglab = {
	.name = "eeglab",
	.noun = "an EEGLAB dataset (.set)",
	.traits = DSV_FMT_TREE,
	.by_name = eeglab_by_name,
	.open = eeglab_open,
};
