/*
 * EEGLAB datasets saved by MATLAB -v7.3 (`pop_saveset(EEG, 'version',
 * '7.3')`, as EEGLAB saves big files): an HDF5 file after a 512-byte user
 * block whose text begins "MATLAB 7.3 MAT-file", each field of the EEG
 * structure a variable of its own, served as the v5/v6 files are
 * (formats/eeglab): (trials, channels, time), with the same attributes.
 *
 * MATLAB stores an array transposed (its column-major [nbchan, pnts,
 * trials] is the HDF5 dataset (trials, pnts, nbchan), time-major,
 * channel fastest), a number as a (1, 1) dataset, a char array as uint16
 * codes, each variable with its MATLAB_class attribute, and a struct
 * array (chanlocs) as a group whose fields are object references into
 * /#refs#. The counts, srate and channel labels are read with the library
 * under its lock; the samples are the dataset /data opened as an HDF5
 * source (its chunks, compressed or not, read as every HDF5 dataset's
 * are) and gathered from its time rows (source/timerows.c); or /data
 * names the .fdt beside the file that holds them.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/str.h"
#include "dsview/source.h"
#include "formats/h5/h5.h"
#include "formats/h5/h5_format.h"
#include "formats/h5/h5_src.h"
#include "source/source_i.h"

#define MAT73_LABEL_MAX 64 /* bytes of a channel label kept */
#define MAT73_CHANNELS_MAX (1u << 20)

/* What the file's variables say. */
typedef struct mat73 {
	uint64_t C, T, K;
	double srate;
	int has_srate;
	char fdt[256];  /* "" where /data holds the samples */
	json_t *labels; /* chanlocs(i).labels, or NULL */
} mat73;

/* The MATLAB_class of obj into cls ("" where it has none). */
static void class_of(hid_t obj, char *cls, size_t cap)
{
	cls[0] = '\0';
	if (H5Aexists(obj, "MATLAB_class") <= 0)
		return;
	hid_t a = H5Aopen(obj, "MATLAB_class", H5P_DEFAULT);
	char *s = a >= 0 ? dsv_h5_attr_string(a, 32) : NULL;
	if (s)
		snprintf(cls, cap, "%s", s);
	free(s);
	if (a >= 0)
		H5Aclose(a);
}

/* The one number dataset d holds (a MATLAB scalar, (1, 1)). */
static int number(hid_t d, double *v)
{
	hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
	H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
	int ok = sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1 &&
		 (c == H5T_FLOAT || c == H5T_INTEGER) &&
		 H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	return ok;
}

/* A MATLAB char array (uint16 codes) as text: a code past ASCII as '?'.
 * @return 0, or -1 for a dataset that is not one or is longer than cap. */
static int text(hid_t d, char *out, size_t cap)
{
	hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
	hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
	uint16_t *u = n >= 0 && (size_t)n < cap ? malloc(((size_t)n + 1) * 2) : NULL;
	int ok = u && t >= 0 && H5Tget_class(t) == H5T_INTEGER &&
		 H5Dread(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, u) >= 0;
	for (hssize_t i = 0; ok && i < n; i++)
		out[i] = u[i] >= 0x20 && u[i] < 0x7f ? (char)u[i] : '?';
	if (ok)
		out[n] = '\0';
	free(u);
	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	return ok ? 0 : -1;
}

/* A whole number >= 1 from variable name. */
static int count(hid_t f, hid_t lapl, const char *path, const char *name, uint64_t *out,
		 dsv_errbuf *eb)
{
	hid_t d = H5Lexists(f, name, lapl) > 0 ? H5Dopen2(f, name, H5P_DEFAULT) : -1;
	double v = 0;
	int ok = d >= 0 && number(d, &v);
	if (d >= 0)
		H5Dclose(d);
	if (!ok)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, name, "missing, or not a number");
	if (!(v >= 1 && v <= 0x1p40 && v == (double)(uint64_t)v))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, name, "%g, not a count", v);
	*out = (uint64_t)v;
	return 0;
}

/* chanlocs(i).labels: references (one per channel) to char arrays. */
static json_t *labels(hid_t f, hid_t lapl, uint64_t C)
{
	hid_t d = H5Lexists(f, "chanlocs", lapl) > 0 && H5Lexists(f, "chanlocs/labels", lapl) > 0
			  ? H5Dopen2(f, "chanlocs/labels", H5P_DEFAULT)
			  : -1;
	hid_t sp = d >= 0 ? H5Dget_space(d) : -1, t = d >= 0 ? H5Dget_type(d) : -1;
	hobj_ref_t *refs = calloc(C, sizeof(*refs));
	json_t *a = NULL;
	char s[MAT73_LABEL_MAX];
	if (refs && sp >= 0 && (uint64_t)H5Sget_simple_extent_npoints(sp) == C &&
	    H5Tget_class(t) == H5T_REFERENCE &&
	    H5Dread(d, H5T_STD_REF_OBJ, H5S_ALL, H5S_ALL, H5P_DEFAULT, refs) >= 0) {
		a = json_array();
		for (uint64_t i = 0; a && i < C; i++) {
			hid_t o = H5Rdereference2(d, H5P_DEFAULT, H5R_OBJECT, &refs[i]);
			int ok = o >= 0 && H5Iget_type(o) == H5I_DATASET && !text(o, s, sizeof(s));
			json_array_append_new(a, json_string(ok ? s : ""));
			if (o >= 0)
				H5Oclose(o);
		}
	}
	free(refs);
	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	if (d >= 0)
		H5Dclose(d);
	return a;
}

/* The variables of the open file f into m. */
static int read_vars(hid_t f, hid_t lapl, const char *path, mat73 *m, dsv_errbuf *eb)
{
	char cls[40];
	int err;
	if ((err = count(f, lapl, path, "nbchan", &m->C, eb)) ||
	    (err = count(f, lapl, path, "pnts", &m->T, eb)) ||
	    (err = count(f, lapl, path, "trials", &m->K, eb)))
		return err;
	if (m->C > MAT73_CHANNELS_MAX || m->T > UINT64_MAX / m->C / m->K / 8)
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, "data", "too many samples");
	hid_t d = H5Lexists(f, "srate", lapl) > 0 ? H5Dopen2(f, "srate", H5P_DEFAULT) : -1;
	if (d >= 0) {
		m->has_srate = number(d, &m->srate);
		H5Dclose(d);
	}
	if (H5Lexists(f, "data", lapl) <= 0 || (d = H5Dopen2(f, "data", H5P_DEFAULT)) < 0)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, "data", "missing, or not a dataset");
	class_of(d, cls, sizeof(cls));
	int is_char = !strcmp(cls, "char"), bad = is_char && text(d, m->fdt, sizeof(m->fdt));
	H5Dclose(d);
	if (bad)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, "data",
				   "a char array that is not a file's name");
	if (is_char && (!m->fdt[0] || strchr(m->fdt, '/')))
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, "data",
				   "names '%s', not a file beside it", m->fdt);
	if (!is_char)
		m->fdt[0] = '\0';
	m->labels = labels(f, lapl, m->C);
	return 0;
}

/* The file's variables, read with the library (after the probe). */
static int read_header(const char *path, mat73 *m, dsv_errbuf *eb)
{
	hid_t f = -1, lapl = -1;
	int err;
	if ((err = dsv_h5_check_input(path, dsv_h5_probe_all, eb)))
		return err;
	if (dsv_h5_lock() < 0 || (lapl = dsv_h5_make_lapl(H5P_LINK_ACCESS)) < 0)
		err = dsv_errf_at(eb, DSV_ERR_INTERNAL, path, NULL, "HDF5 setup failed");
	else if ((f = H5Fopen(path, H5F_ACC_RDONLY, dsv_h5_ro_fapl())) < 0)
		err = dsv_h5_open_failed(path, eb);
	else
		err = read_vars(f, lapl, path, m, eb);
	if (f >= 0)
		H5Fclose(f);
	if (lapl >= 0)
		H5Pclose(lapl);
	dsv_h5_unlock();
	return err;
}

/* The samples: /data, (trials, pnts, nbchan) or (pnts, nbchan) as MATLAB
 * stores [nbchan, pnts, trials], opened as an HDF5 source. */
static int open_samples(dsv_source *s, const mat73 *m, dsv_source **data, dsv_errbuf *eb)
{
	int err = dsv_source_open_h5(s->path, "/data", data, eb);
	if (err)
		return err;
	const dsv_source_info *in = dsv_source_get_info(*data);
	uint64_t k = in->ndim == 3 ? in->shape[0] : 1;
	if (in->ndim < 2 || in->ndim > 3 || in->shape[in->ndim - 1] != m->C ||
	    in->shape[in->ndim - 2] != m->T || k != m->K)
		return dsv_errf_at(
			eb, DSV_ERR_FORMAT, s->path, "data",
			"is stored with %d dimensions, (%llu, %llu) last, not (trials, "
			"pnts, nbchan) = (%llu, %llu, %llu) as MATLAB stores [nbchan, "
			"pnts, trials]",
			in->ndim, (unsigned long long)in->shape[in->ndim > 1 ? in->ndim - 2 : 0],
			(unsigned long long)in->shape[in->ndim - 1], (unsigned long long)m->K,
			(unsigned long long)m->T, (unsigned long long)m->C);
	if (!dsv_dtype_is_float(in->dtype) && !dsv_dtype_is_int(in->dtype))
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, s->path, "data", "not numeric");
	s->info.dtype = in->dtype;
	s->info.stored_bytes = dsv_source_stored_bytes(*data);
	return 0;
}

/* The .fdt /data names: float32 samples, beside the file. */
static int open_fdt(dsv_source *s, const mat73 *m, dsv_source **data, dsv_errbuf *eb)
{
	dsv_errbuf sub;
	int err = dsv_source_open_beside(s, m->fdt, data, &sub);
	if (err)
		return dsv_errf_at(eb, err == DSV_ERR_NOMEM ? err : DSV_ERR_NOTFOUND, s->path,
				   "data", "names '%s', which cannot be opened: %s", m->fdt,
				   sub.reason);
	uint64_t want = m->C * m->T * m->K * 4;
	if ((*data)->file_size != want)
		return dsv_errf_at(eb, DSV_ERR_TRUNCATED, s->path, "data",
				   "'%s' is %llu bytes, not nbchan * pnts * trials * 4 = %llu",
				   m->fdt, (unsigned long long)(*data)->file_size,
				   (unsigned long long)want);
	s->info.dtype = DSV_F32;
	s->info.stored_bytes = want;
	return 0;
}

/* The attributes, as the v5/v6 files' (formats/eeglab). */
static int attrs(dsv_source *s, mat73 *m)
{
	json_t *o = json_object();
	json_object_set_new(o, "format", json_string("EEGLAB"));
	json_object_set_new(o, "mat", json_string("7.3"));
	if (m->has_srate)
		json_object_set_new(o, "sample_rate", json_real(m->srate));
	json_object_set_new(o, "trials", json_integer((json_int_t)m->K));
	json_object_set_new(o, "channels", m->labels ? m->labels : json_null());
	m->labels = NULL;
	json_object_set_new(o, "data", json_string(m->fdt[0] ? m->fdt : "embedded"));
	s->attrs_json = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	s->info.attrs = s->attrs_json;
	return s->attrs_json ? 0 : DSV_ERR_NOMEM;
}

static int mat73_open(const char *path, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(path, NULL), *data = NULL;
	mat73 m = { 0 };
	int err;

	(void)dataset;
	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if ((err = dsv_source_open_file(s, eb)) || (err = read_header(path, &m, eb)) ||
	    (err = (m.fdt[0] ? open_fdt : open_samples)(s, &m, &data, eb)))
		goto fail;
	err = dsv_source_set_time_rows(s, data, 0, m.K, m.C, m.T);
	data = NULL; /* s's now */
	if (err) {
		err = dsv_errf_at(eb, err, path, "data", "too many samples");
		goto fail;
	}
	s->info.kind = DSV_SRC_EEGLAB;
	dsv_source_why(s, "EEGLAB (MATLAB v7.3), %s, time-major samples gathered",
		       m.fdt[0] ? "data in its .fdt" : "data in HDF5 /data");
	if (attrs(s, &m)) {
		err = dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	json_decref(m.labels);
	dsv_source_close(data);
	dsv_source_close(s);
	return err;
}

static size_t mat73_by_name(const char *name)
{
	return dsv_has_ext(name, ".set") ? 4 : 0;
}

/* MATLAB's v7.3 header text, and HDF5's signature after its 512 bytes. */
static int mat73_by_magic(int fd)
{
	static const char hdf5[8] = "\211HDF\r\n\032\n";
	char h[20], sig[8];
	return pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	       !memcmp(h, "MATLAB 7.3 MAT-file", 19) &&
	       pread(fd, sig, sizeof(sig), 512) == (ssize_t)sizeof(sig) &&
	       !memcmp(sig, hdf5, sizeof(sig));
}

const dsv_format dsv_format_mat73 = {
	.name = "eeglab",
	.noun = "an EEGLAB dataset saved by MATLAB -v7.3 (.set)",
	.traits = DSV_FMT_TREE | DSV_FMT_SHARED_NAME,
	.by_name = mat73_by_name,
	.by_magic = mat73_by_magic,
	.open = mat73_open,
};
