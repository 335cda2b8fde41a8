/* Private helpers shared by view.c and manifest.c. */
#ifndef DSV_VIEW_I_H
#define DSV_VIEW_I_H

#include "dsview/view.h"

#define DSV_VIEW_NAME_MAX 200

dsv_view *dsv_view_new(const char *name);
void dsv_view_free(dsv_view *v);
int dsv_view_add_source(dsv_view *v, dsv_source *s);
int dsv_view_check_source(const dsv_view *v, size_t i, dsv_errbuf *eb);
/* Computes shape, bases, the transform plan, the .npy header and the .json. */
int dsv_view_finish(dsv_view *v, dsv_errbuf *eb);
void dsv_shape_str(char *buf, size_t cap, int ndim, const uint64_t *shape);

static inline int timespec_newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

#endif
