/*
 * What the reader's files share (private to src/reader):
 *
 *   reader.c  open (options, the engine), close, the views, fork
 *   gather.c  reads: byte ranges and rows, split over the gather threads
 */
#ifndef DSV_READER_READER_I_H
#define DSV_READER_READER_I_H

#include <stdatomic.h>

#include "dsview/reader.h"
#include "dsview/view.h"
#include "engine/engine.h"

typedef struct dsv_gather dsv_gather;

struct dsv_reader {
	char *source;  /* as given */
	char *options; /* as given, or NULL */
	/* from the options: the output of a SOURCE that is not a manifest,
	 * DSV_FROM_FILE_STRICT, the gather threads, and [dsview]'s keys in a
	 * scratch manifest (o) that win over the source's manifest */
	dsv_dtype dtype;
	int has_dtype;
	unsigned flags;
	int threads;
	dsv_manifest o;
	char gpu[16];       /* the engine's gpu setting (eo.gpu points here) */
	dsv_engine_opts eo; /* the engine's settings */
	dsv_engine *_Atomic e;
	atomic_uint gen;    /* the fork generation e was opened in */
	dsv_gather *gather; /* NULL: reads run on the calling thread alone */
};

/* r's engine into *e, opened again first in a child made by fork since
 * it was (reader.c). @return 0 or a dsv_err with eb set. */
int dsv_reader_engine(dsv_reader *r, dsv_engine **e, dsv_errbuf *eb);

/* gather.c: the threads rows are read on when r->threads > 1 (none
 * otherwise). start: @return 0 or a dsv_err with eb set. */
int dsv_reader_gather_start(dsv_reader *r, dsv_errbuf *eb);
void dsv_reader_gather_stop(dsv_reader *r);

#endif
