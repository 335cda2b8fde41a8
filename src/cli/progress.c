/* The progress bar of pack and verify; see progress.h. */
#include <stdio.h>
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

void dsv_progress_start(dsv_progress *p, const char *label, uint64_t total,
			const char *unit)
{
	p->tty = isatty(STDOUT_FILENO);
	p->label = label;
	p->unit = unit;
	p->total = total;
	p->t0 = dsv_now();
	p->last_draw = 0;
	p->drawn = 0;
}

void dsv_progress_update(dsv_progress *p, uint64_t done, uint64_t in_bytes,
			 uint64_t out_bytes, int force)
{
	char bar[BAR_WIDTH + 1], rate[32], ratio[24] = "", eta[32] = "";
	double now, dt, frac;
	int fill;

	if (!p->tty)
		return;
	now = dsv_now();
	if (!force && now - p->last_draw < 0.1)
		return;
	p->last_draw = now;
	dt = now - p->t0;
	frac = p->total ? (double)done / (double)p->total : 1.0;
	if (frac > 1.0)
		frac = 1.0;
	fill = (int)(frac * BAR_WIDTH);
	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = 0;
	dsv_fmt_bytes(rate, sizeof(rate), dt > 0 ? (uint64_t)((double)in_bytes / dt) : 0);
	if (out_bytes)
		snprintf(ratio, sizeof(ratio), "  %.2fx", (double)in_bytes / (double)out_bytes);
	if (frac > 0.0 && frac < 1.0 && dt > 0.5) {
		unsigned s = (unsigned)(dt / frac - dt + 0.5);
		snprintf(eta, sizeof(eta), "  ETA %u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
	}
	fprintf(stdout, "\r%s [%s] %3d%%  %llu/%llu %s  %s/s%s%s\033[K", p->label, bar,
		(int)(frac * 100.0), (unsigned long long)done, (unsigned long long)p->total,
		p->unit, rate, ratio, eta);
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
