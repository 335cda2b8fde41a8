/*
 * A one-line progress bar for long commands (pack, verify), drawn on stdout
 * only when stdout is a terminal, at most ten times a second, fitted to the
 * terminal's width as it is at each redraw (it never wraps):
 *
 *   pack  [##########..........]  52%  1,234/2,371 rows  812 MB/s  2.41x  ETA 0:03
 *
 * When stdout is not a terminal nothing is drawn; commands print their
 * own summary line at the end either way.
 */
#ifndef DSV_CLI_PROGRESS_H
#define DSV_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsv_progress {
	int tty;
	const char *label, *unit;
	uint64_t total;
	double t0, last_draw;
	int drawn;
} dsv_progress;

/* Monotonic seconds. */
double dsv_now(void);

void dsv_progress_start(dsv_progress *p, const char *label, uint64_t total, const char *unit);
/* done: units finished; in_bytes: bytes processed (for MB/s); out_bytes:
 * bytes produced, 0 to leave the ratio out. Redraws if due (or force). */
void dsv_progress_update(dsv_progress *p, uint64_t done, uint64_t in_bytes, uint64_t out_bytes,
			 int force);
/* The line as drawn at time now (dsv_now) on a terminal cols wide (0:
 * unknown, nothing dropped): it fits in cols - 1 columns, dropping the
 * ratio, the counts and the ETA in that order and narrowing the bar when
 * it must. @return its length */
size_t dsv_progress_line(const dsv_progress *p, uint64_t done, uint64_t in_bytes,
			 uint64_t out_bytes, double now, int cols, char *out, size_t cap);
/* Erases the bar so that the summary line starts clean. */
void dsv_progress_end(dsv_progress *p);

/* "1.23 GB", "812 MB", "4.0 kB" (decimal units) into buf. */
const char *dsv_fmt_bytes(char *buf, size_t cap, uint64_t n);

#endif
