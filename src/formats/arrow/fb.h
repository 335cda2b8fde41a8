/*
 * A bounds-checked reader of FlatBuffers (fb.c), enough for Arrow's IPC
 * metadata: tables through their vtables, scalar fields with defaults,
 * offsets to tables, vectors and strings, unions. Every offset is checked
 * against the buffer before it is followed, so a hostile message can only
 * make a read fail (-1), never read outside it.
 */
#ifndef DSV_FORMATS_ARROW_FB_H
#define DSV_FORMATS_ARROW_FB_H

#include <stddef.h>
#include <stdint.h>

typedef struct fb_buf {
	const uint8_t *p;
	size_t n;
} fb_buf;

/* A table: its position in the buffer and its vtable's. */
typedef struct fb_table {
	const fb_buf *b;
	size_t pos, vt;
	unsigned vsize; /* bytes of the vtable */
} fb_table;

/* The root table of b. @return 0 or -1 */
int fb_root(const fb_buf *b, fb_table *t);
/* The table at pos. @return 0 or -1 */
int fb_table_at(const fb_buf *b, size_t pos, fb_table *t);
/* Field k's position in the buffer, or 0 when the table has none. */
size_t fb_field(const fb_table *t, unsigned k);
/* Scalars of field k (def when absent). @return 0 or -1 (out of bounds) */
int fb_u8(const fb_table *t, unsigned k, uint8_t def, uint8_t *out);
int fb_i16(const fb_table *t, unsigned k, int16_t def, int16_t *out);
int fb_i32(const fb_table *t, unsigned k, int32_t def, int32_t *out);
int fb_i64(const fb_table *t, unsigned k, int64_t def, int64_t *out);
/* The table field k points to. @return 0, 1 (absent) or -1 */
int fb_sub(const fb_table *t, unsigned k, fb_table *out);
/* The vector field k points to: *count elements of size bytes from
 * *start. @return 0, 1 (absent: count 0) or -1 */
int fb_vector(const fb_table *t, unsigned k, size_t size, size_t *count, size_t *start);
/* Element i of a vector of tables (offsets) starting at start. */
int fb_vector_table(const fb_buf *b, size_t start, size_t i, fb_table *out);
/* The string field k points to, into out (cap bytes, cut short, NUL
 * terminated). @return 0, 1 (absent: "") or -1 */
int fb_string(const fb_table *t, unsigned k, char *out, size_t cap);

#endif
