/* The progress bar of pack and verify; see progress.h. */
#include <stdio.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

#define BAR_WIDTH 20

double dsv_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *dsv_fmt_bytes(char *buf, size_t cap, uint64_t n)
{
	static const char *units[] = { "B", "kB", "MB", "GB", "TB", "PB" };
	double v = (double)n;
	int u = 0;
	while (v >= 1000.0 && u < 5) {
		v /= 1000.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)n);
	else
		snprintf(buf, cap, "%.*f %s", v < 10.0 ? 2 : v < 100.0 ? 1 : 0, v, units[u]);
	return buf;
}

void dsv_progress_start(dsv_progress *p, const char *label, uint64_t total, const char *unit)
{
	p->tty = isatty(STDOUT_FILENO);
	p->label = label;
	p->unit = unit;
	p->total = total;
	p->t0 = dsv_now();
	p->last_draw = 0;
	p->drawn = 0;
}

size_t dsv_progress_line(const dsv_progress *p, uint64_t done, uint64_t in_bytes,
			 uint64_t out_bytes, double now, int cols, char *out, size_t cap)
{
	char bar[BAR_WIDTH + 1], rate[32], ratio[24] = "", eta[32] = "", count[64];
	double dt = now - p->t0, frac = p->total ? (double)done / (double)p->total : 1.0;
	size_t n = 0;

	if (frac > 1.0)
		frac = 1.0;
	dsv_fmt_bytes(rate, sizeof(rate), dt > 0 ? (uint64_t)((double)in_bytes / dt) : 0);
	if (out_bytes)
		snprintf(ratio, sizeof(ratio), "  %.2fx", (double)in_bytes / (double)out_bytes);
	if (frac > 0.0 && frac < 1.0 && dt > 0.5) {
		unsigned s = (unsigned)(dt / frac - dt + 0.5);
		snprintf(eta, sizeof(eta), "  ETA %u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
	}
	snprintf(count, sizeof(count), "  %llu/%llu %s", (unsigned long long)done,
		 (unsigned long long)p->total, p->unit);
	/* A narrow terminal drops parts, least useful first: the ratio, the
	 * counts, the ETA; the bar takes what room is left (up to
	 * BAR_WIDTH), and what still does not fit is cut. One column stays
	 * free: a line that fills the last one wraps on some terminals. */
	const char *keep_ratio = ratio, *keep_count = count, *keep_eta = eta;
	for (int drop = 0; drop < 4; drop++) {
		keep_ratio = drop >= 1 ? "" : ratio;
		keep_count = drop >= 2 ? "" : count;
		keep_eta = drop >= 3 ? "" : eta;
		n = (size_t)snprintf(NULL, 0, "%s %3d%%%s  %s/s%s%s", p->label, (int)(frac * 100.0),
				     keep_count, rate, keep_ratio, keep_eta);
		if (cols <= 0 || (int)n + 8 <= cols - 1) /* room for "[.....] " at least */
			break;
	}
	int width = cols > 0 ? cols - 1 - (int)n - 3 : BAR_WIDTH;
	width = width > BAR_WIDTH ? BAR_WIDTH : width < 5 ? 0 : width;
	int fill = (int)(frac * width);
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	n = (size_t)snprintf(out, cap, "%s %s%s%s%3d%%%s  %s/s%s%s", p->label, width ? "[" : "",
			     bar, width ? "] " : "", (int)(frac * 100.0), keep_count, rate,
			     keep_ratio, keep_eta);
	if (n >= cap)
		n = cap - 1;
	if (cols > 1 && n > (size_t)cols - 1)
		n = (size_t)cols - 1;
	out[n] = '\0';
	return n;
}

/* The terminal's width now (so a resize shows at the next redraw), or 0. */
static int term_cols(void)
{
	struct winsize ws;
	return ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

void dsv_progress_update(dsv_progress *p, uint64_t done, uint64_t in_bytes, uint64_t out_bytes,
			 int force)
{
	char line[256];
	double now;

	if (!p->tty)
		return;
	now = dsv_now();
	if (!force && now - p->last_draw < 0.1)
		return;
	p->last_draw = now;
	dsv_progress_line(p, done, in_bytes, out_bytes, now, term_cols(), line, sizeof(line));
	fprintf(stdout, "\r%s\033[K", line);
	fflush(stdout);
	p->drawn = 1;
}

void dsv_progress_end(dsv_progress *p)
{
	if (p->tty && p->drawn) {
		fputs("\r\033[K", stdout);
		fflush(stdout);
	}
	p->drawn = 0;
}
