/*
 * Time helpers. Thread safety: pure.
 */
#ifndef DSV_COMMON_CLOCK_H
#define DSV_COMMON_CLOCK_H

#include <time.h>

/* The CLOCK_REALTIME instant ms milliseconds from now, as
 * pthread_cond_timedwait takes it. */
void dsv_deadline_ms(struct timespec *ts, unsigned ms);

/* CLOCK_MONOTONIC in seconds, for timing. */
double dsv_now_s(void);

#endif
