/* The directory of a zip file (zip.c): its members' names, methods, sizes
 * and where each one's data starts, as `np.savez` writes them (zip64
 * included). Every number is checked against the file's size. */
#ifndef DSV_FORMATS_NPY_ZIP_H
#define DSV_FORMATS_NPY_ZIP_H

#include <stddef.h>
#include <stdint.h>

/* One member, as the central directory lists it. */
typedef struct dsv_zip_member {
	char *name;
	unsigned method; /* 0: stored, 8: deflated */
	unsigned flags;
	uint64_t csize, usize; /* stored and unpacked bytes */
	uint64_t local_off;    /* its local header */
} dsv_zip_member;

/* Reads n bytes at off of the zip; 0 or a dsv_err. */
typedef int (*dsv_zip_read)(void *arg, void *buf, size_t n, uint64_t off);

/* The members of the zip of size bytes that rd reads, *out[0 .. *n) (free
 * with dsv_zip_free). @return 0, or DSV_ERR_FORMAT / DSV_ERR_UNSUPPORTED /
 * DSV_ERR_TRUNCATED / DSV_ERR_NOMEM with why saying which field. */
int dsv_zip_list(dsv_zip_read rd, void *arg, uint64_t size, dsv_zip_member **out, size_t *n,
		 char *why, size_t cap);
/* Where member m's data starts (*off: after its local header, whose name
 * and extra field lengths say so), its csize bytes checked to lie inside
 * the file. @return 0 or a dsv_err with why set. */
int dsv_zip_data_at(dsv_zip_read rd, void *arg, uint64_t size, const dsv_zip_member *m,
		    uint64_t *off, char *why, size_t cap);
void dsv_zip_free(dsv_zip_member *m, size_t n);

#endif
