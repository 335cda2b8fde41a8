/*
 * .npz files: each member "name.npy" of the zip is the dataset "/name"
 * ("x.npz:name" as a source spec). np.savez stores members (method 0):
 * the member's .npy is read where it lies, its header parsed as a .npy
 * file's (dsv_npy_read_header) at the offset its local header gives, and
 * served by pread like any .npy. np.savez_compressed deflates them
 * (method 8): no random access, so a mount refuses them naming
 * `dsview pack`, whose input (open_packed) inflates the member once into
 * a temporary .npy beside the output, unlinked as soon as it is made and
 * opened again through /proc/self/fd, as a gzipped NIfTI image is.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/str.h"
#include "formats/npy/npy.h"
#include "formats/npy/zip.h"
#include "source/source_i.h"

#define INFLATE_BUF (1u << 20)

static int read_src(void *arg, void *buf, size_t n, uint64_t off)
{
	return dsv_source_pread(arg, buf, n, off);
}

/* The dataset name of member name ("x.npy" is "x"), or NULL for a member
 * that is not a .npy. */
static const char *npy_member(const char *name, size_t *len)
{
	size_t n = strlen(name);
	if (n <= 4 || strcmp(name + n - 4, ".npy"))
		return NULL;
	*len = n - 4;
	return name;
}

/* The member of s's zip that dataset ("/x" or "x") names, into *m (its
 * name the caller's). */
static int find_member(dsv_source *s, const char *dataset, dsv_zip_member *m, dsv_errbuf *eb)
{
	dsv_zip_member *all;
	size_t n, len, k;
	char why[160];
	const char *want = dataset[0] == '/' ? dataset + 1 : dataset;
	int err = dsv_zip_list(read_src, s, s->file_size, &all, &n, why, sizeof(why));

	if (err)
		return dsv_errf_at(eb, err, s->path, NULL, "%s", why);
	for (k = 0; k < n; k++) {
		const char *stem = npy_member(all[k].name, &len);
		if ((stem && strlen(want) == len && !strncmp(stem, want, len)) ||
		    !strcmp(all[k].name, want))
			break;
	}
	if (k == n)
		err = dsv_errf_at(eb, DSV_ERR_NOTFOUND, s->path, dataset,
				  "no member %s.npy in the archive", want);
	else
		*m = all[k], all[k].name = NULL;
	dsv_zip_free(all, n);
	return err;
}

/* s (its file open, dataset set) as the member m's .npy, stored. */
static int open_stored(dsv_source *s, const dsv_zip_member *m, dsv_errbuf *eb)
{
	uint64_t off;
	char why[160];
	int err = dsv_zip_data_at(read_src, s, s->file_size, m, &off, why, sizeof(why));
	if (err)
		return dsv_errf_at(eb, err, s->path, s->dataset, "%s", why);
	if (m->csize != m->usize)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "a stored member's sizes differ (%llu stored, %llu unpacked)",
				   (unsigned long long)m->csize, (unsigned long long)m->usize);
	return dsv_npy_read_header(s, off, m->csize, eb);
}

/* A source of file's member named dataset, its file open and its header
 * still to be read, in *out; the member in *m (m->name the caller's). */
static int open_member(const char *file, const char *dataset, dsv_source **out, dsv_zip_member *m,
		       dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(file, dataset);
	int err;

	memset(m, 0, sizeof(*m));
	*out = NULL;
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, file, NULL, "out of memory");
	if (!(err = dsv_source_open_file(s, eb)))
		err = find_member(s, dataset, m, eb);
	if (err) {
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}

static const char *method_name(unsigned method)
{
	return method == 8 ? "deflated (np.savez_compressed)" : "compressed";
}

static int npz_open(const char *file, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	dsv_zip_member m;
	dsv_source *s;
	int err = open_member(file, dataset, &s, &m, eb);

	*out = NULL;
	if (err)
		return err;
	if (m.method != 0)
		err = dsv_errf_at(
			eb, DSV_ERR_UNSUPPORTED, file, dataset,
			"the member is %s (zip method %u) and cannot be read in place; "
			"convert it once with `dsview pack %s:%s OUT.h5` and serve OUT.h5",
			method_name(m.method), m.method, file,
			dataset[0] == '/' ? dataset + 1 : dataset);
	else
		err = open_stored(s, &m, eb);
	free(m.name);
	if (err)
		dsv_source_close(s);
	else
		*out = s;
	return err;
}

static int npz_list(const char *file, char ***names, size_t *n, dsv_errbuf *eb)
{
	dsv_source *s = dsv_source_alloc(file, NULL);
	dsv_zip_member *all = NULL;
	size_t count = 0, len;
	char why[160];
	int err = s ? dsv_source_open_file(s, eb) : dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");

	*names = NULL;
	*n = 0;
	if (!err && (err = dsv_zip_list(read_src, s, s->file_size, &all, &count, why, sizeof(why))))
		err = dsv_errf_at(eb, err, file, NULL, "%s", why);
	char **out = err ? NULL : calloc(count ? count : 1, sizeof(*out));
	if (!err && !out)
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	for (size_t k = 0; !err && k < count; k++) {
		const char *stem = npy_member(all[k].name, &len);
		if (stem && asprintf(&out[*n], "/%.*s", (int)len, stem) < 0)
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		else if (stem)
			(*n)++;
	}
	if (err) {
		for (size_t k = 0; out && k < *n; k++)
			free(out[k]);
		free(out);
		out = NULL;
		*n = 0;
	}
	*names = out;
	dsv_zip_free(all, count);
	dsv_source_close(s);
	return err;
}

/* Inflates the raw deflate stream of csize bytes at off of s into fd,
 * usize bytes exactly. */
static int inflate_to(const dsv_source *s, uint64_t off, const dsv_zip_member *m, int fd,
		      dsv_errbuf *eb)
{
	unsigned char *in = malloc(INFLATE_BUF), *outb = malloc(INFLATE_BUF);
	uint64_t left = m->csize, made = 0;
	z_stream z;
	int rc = Z_OK, err = 0;

	memset(&z, 0, sizeof(z));
	if (!in || !outb || inflateInit2(&z, -15) != Z_OK) {
		free(in);
		free(outb);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	while (!err && rc != Z_STREAM_END) {
		if (z.avail_in == 0 && left) {
			size_t n = left < INFLATE_BUF ? (size_t)left : INFLATE_BUF;
			if ((err = dsv_source_pread(s, in, n, off)))
				break;
			z.next_in = in;
			z.avail_in = (uInt)n;
			off += n;
			left -= n;
		}
		z.next_out = outb;
		z.avail_out = INFLATE_BUF;
		rc = inflate(&z, Z_NO_FLUSH);
		size_t got = INFLATE_BUF - z.avail_out;
		if (rc != Z_OK && rc != Z_STREAM_END) {
			err = DSV_ERR_CORRUPT;
			break;
		}
		if (rc == Z_OK && got == 0 && z.avail_in == 0 && !left) {
			err = DSV_ERR_CORRUPT; /* the stream wants bytes past the member */
			break;
		}
		made += got;
		for (size_t done = 0; !err && done < got;) {
			ssize_t w = write(fd, outb + done, got - done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				err = dsv_errf(
					eb, DSV_ERR_IO,
					"cannot write the unpacked member beside the output: %s",
					strerror(errno));
			else
				done += (size_t)w;
		}
	}
	inflateEnd(&z);
	free(in);
	free(outb);
	if (!err && made != m->usize)
		err = DSV_ERR_CORRUPT;
	if (err == DSV_ERR_CORRUPT || err == DSV_ERR_TRUNCATED)
		err = dsv_errf_at(eb, DSV_ERR_CORRUPT, s->path, s->dataset,
				  "the member is not a whole deflate stream of %llu bytes",
				  (unsigned long long)m->usize);
	else if (err && err != DSV_ERR_IO)
		err = dsv_errf_at(eb, err, s->path, s->dataset, "cannot read the member");
	return err;
}

/* The temporary's name: ".<output's name>.npy-XXXXXX" beside output. */
static int temp_name(const char *output, char *out, size_t cap)
{
	const char *slash = strrchr(output, '/');
	int dir_len = slash ? (int)(slash - output + 1) : 0;
	int n = snprintf(out, cap, "%.*s.%s.npy-XXXXXX", dir_len, output,
			 slash ? slash + 1 : output);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The deflated member m of s, inflated once beside output and opened as
 * a .npy (through /proc/self/fd: the file has no other name). */
static int open_inflated(dsv_source *s, const dsv_zip_member *m, const char *output,
			 dsv_source **out, dsv_errbuf *eb)
{
	char tmp[PATH_MAX], self[64], why[160];
	uint64_t off;
	int fd, err = dsv_zip_data_at(read_src, s, s->file_size, m, &off, why, sizeof(why));

	if (err)
		return dsv_errf_at(eb, err, s->path, s->dataset, "%s", why);
	if (temp_name(output, tmp, sizeof(tmp)))
		return dsv_errf_at(eb, DSV_ERR_INVALID, output, NULL, "path too long");
	if ((fd = mkstemp(tmp)) < 0)
		return dsv_errf(eb, DSV_ERR_IO, "cannot create a temporary file beside %s: %s",
				output, strerror(errno));
	unlink(tmp);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	err = inflate_to(s, off, m, fd, eb);
	if (!err && (err = dsv_source_open_npy(self, out, eb)))
		err = dsv_errf_at(eb, err, s->path, s->dataset, "once unpacked: %s", eb->reason);
	close(fd);
	return err;
}

static int npz_open_packed(const char *input, const char *dataset, const char *output,
			   dsv_source **out, dsv_errbuf *eb)
{
	char **names = NULL, *only = NULL;
	size_t n = 0;
	int err = 0;

	*out = NULL;
	if (!dataset && !(err = npz_list(input, &names, &n, eb))) {
		if (n != 1)
			err = dsv_errf_at(eb, DSV_ERR_INVALID, input, NULL,
					  "has %zu members; name one as %s:name", n, input);
		else
			dataset = only = names[0];
		for (size_t i = 1; i < n; i++)
			free(names[i]);
		if (err && n)
			free(names[0]);
		free(names);
	}
	dsv_zip_member m = { 0 };
	dsv_source *s = NULL;
	if (!err)
		err = open_member(input, dataset, &s, &m, eb);
	if (!err && m.method == 0)
		err = open_stored(s, &m, eb);
	else if (!err && m.method == 8)
		err = open_inflated(s, &m, output, out, eb);
	else if (!err)
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, input, dataset,
				  "the member is compressed with zip method %u; dsview reads "
				  "stored (0) and deflated (8) members",
				  m.method);
	if (!err && m.method == 0)
		*out = s;
	else
		dsv_source_close(s);
	free(m.name);
	free(only);
	return err;
}

static size_t npz_by_name(const char *name)
{
	return dsv_has_ext(name, ".npz") ? 4 : 0;
}

const dsv_format dsv_format_npz = {
	.name = "npz",
	.noun = "a .npz",
	.traits = DSV_FMT_DATASETS,
	.by_name = npz_by_name,
	.open = npz_open,
	.list = npz_list,
	.open_packed = npz_open_packed,
};
