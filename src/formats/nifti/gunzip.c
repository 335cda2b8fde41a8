/*
 * A gzipped NIfTI image (.nii.gz) as `dsview pack`'s input (the NIfTI
 * format's open_packed). gzip is not
 * random-access, so it is streamed once through zlib into a temporary
 * .nii beside the output (where the space for the store already is),
 * unlinked as soon as it is made and opened again through /proc/self/fd
 * as a NIfTI source: the open descriptors are its only names, so nothing
 * is left behind whatever happens next.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dsview/source.h"
#include "formats/nifti/nifti.h"

#define GUNZIP_BUF (1u << 20)

/* The temporary's name: ".<output's name>.nii-XXXXXX" in the output's
 * directory. @return 0 or -1 (too long). */
static int temp_name(const char *output, char *out, size_t cap)
{
	const char *slash = strrchr(output, '/');
	int dir_len = slash ? (int)(slash - output + 1) : 0;
	int n = snprintf(out, cap, "%.*s.%s.nii-XXXXXX", dir_len, output,
			 slash ? slash + 1 : output);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Streams gz's decompressed bytes into fd. */
static int gunzip_to(const char *gz, int fd, dsv_errbuf *eb)
{
	gzFile in = gzopen(gz, "rb");
	char *buf = malloc(GUNZIP_BUF);
	int err = 0, n;

	if (!in || !buf) {
		err = !buf ? dsv_errf(eb, DSV_ERR_NOMEM, "out of memory")
			   : dsv_errf_at(eb, errno == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, gz,
					 NULL, "%s", strerror(errno));
		goto out;
	}
	gzbuffer(in, GUNZIP_BUF);
	while ((n = gzread(in, buf, GUNZIP_BUF)) > 0) {
		for (int done = 0; done < n;) {
			ssize_t w = write(fd, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				err = dsv_errf(
					eb, DSV_ERR_IO,
					"cannot write the unpacked image beside the output: %s",
					strerror(errno));
				goto out;
			}
			done += (int)w;
		}
	}
	if (n < 0) {
		int zerr;
		const char *why = gzerror(in, &zerr);
		err = dsv_errf_at(eb, zerr == Z_ERRNO ? DSV_ERR_IO : DSV_ERR_CORRUPT, gz, NULL,
				  "not a whole gzip stream (%s)",
				  zerr == Z_ERRNO ? strerror(errno) : why);
	}
out:
	if (in)
		gzclose(in);
	free(buf);
	return err;
}

int dsv_nifti_open_gz(const char *gz, const char *output, dsv_source **src, dsv_errbuf *eb)
{
	char tmp[PATH_MAX], self[64];
	int fd, err;

	*src = NULL;
	if (temp_name(output, tmp, sizeof(tmp)))
		return dsv_errf_at(eb, DSV_ERR_INVALID, output, NULL, "path too long");
	if ((fd = mkstemp(tmp)) < 0)
		return dsv_errf(eb, DSV_ERR_IO, "cannot create a temporary file beside %s: %s",
				output, strerror(errno));
	unlink(tmp); /* the descriptors hold it: nothing is left behind */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	err = gunzip_to(gz, fd, eb);
	if (!err && (err = dsv_source_open_nifti(self, src, eb)))
		err = dsv_errf_at(eb, err, gz, NULL, "once unpacked: %s", eb->reason);
	close(fd);
	return err;
}
