/*
 * EDF, EDF+, BDF and BDF+ recordings (.edf, .bdf): the header's parse
 * (edf_hdr.c), for the source (edf.c), its unit test and its fuzz target.
 */
#ifndef DSV_FORMATS_EDF_H
#define DSV_FORMATS_EDF_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"
#include "source/format.h"

/* EDF(+) and BDF(+) recordings: one source of shape (1, channels, time)
 * in physical units. */
extern const dsv_format dsv_format_edf;

#define DSV_EDF_FIXED 256  /* the header's fixed part */
#define DSV_EDF_SIGNAL 256 /* header bytes per signal */
/* the most signals a header may declare (EDFlib's limit is 4096) */
#define DSV_EDF_MAX_SIGNALS 4096

/* What the version and reserved fields say. */
enum {
	DSV_EDF_PLAIN = 0,  /* EDF or BDF ("24BIT") */
	DSV_EDF_PLUS_C = 1, /* EDF+C or BDF+C: contiguous */
	DSV_EDF_PLUS_D = 2, /* EDF+D or BDF+D: discontinuous */
};

/* One signal of the header. */
typedef struct dsv_edf_signal {
	char label[17];     /* trailing spaces removed */
	char unit[9];       /* the physical dimension ("uV") */
	char prefilter[81]; /* as stored, trailing spaces removed */
	double pmin, pmax;  /* physical minimum and maximum */
	int64_t dmin, dmax; /* digital minimum and maximum, dmin < dmax */
	uint64_t spr;       /* samples per data record */
	uint64_t rec_off;   /* the signal's first byte within a record */
	int annotation;     /* "EDF Annotations" / "BDF Annotations" */
} dsv_edf_signal;

/* What an EDF/BDF header says. */
typedef struct dsv_edf_hdr {
	int bdf;               /* 1: BDF (24-bit samples), 0: EDF (16-bit) */
	int plus;              /* DSV_EDF_PLAIN, _PLUS_C or _PLUS_D */
	uint64_t bytes;        /* header bytes: 256 * (ns + 1) */
	int64_t records_field; /* number of data records as stored (-1: unknown) */
	uint64_t records;      /* data records (from the file size where -1) */
	double duration;       /* seconds a data record */
	size_t ns;             /* signals */
	uint64_t record_bytes; /* bytes a data record */
	char start[18];        /* "dd.mm.yy hh.mm.ss" */
	dsv_edf_signal *sig;   /* ns of them (malloc'd) */
} dsv_edf_hdr;

/* Bytes a sample: 3 for BDF, 2 for EDF. */
static inline unsigned dsv_edf_bps(const dsv_edf_hdr *h)
{
	return h->bdf ? 3u : 2u;
}

/* Parses the fixed part (the first DSV_EDF_FIXED bytes of buf, len of
 * them there): version, start, header bytes, reserved, records, duration
 * and the number of signals. @return 0 or DSV_ERR_FORMAT (not an EDF/BDF
 * header, or a field that is malformed) with eb's where naming the field
 * and its reason what is wrong (file left empty). */
int dsv_edf_parse_fixed(const uint8_t *buf, size_t len, dsv_edf_hdr *h, dsv_errbuf *eb);

/* Parses the signal fields (buf: the header's ns * DSV_EDF_SIGNAL bytes
 * after the fixed part, len of them there) into h->sig (malloc'd; free with
 * dsv_edf_hdr_free), and h->record_bytes. @return 0, DSV_ERR_FORMAT (eb's
 * where naming the signal and field) or DSV_ERR_NOMEM. */
int dsv_edf_parse_signals(const uint8_t *buf, size_t len, dsv_edf_hdr *h, dsv_errbuf *eb);

/* Checks the header against the file's size: the data records fill the
 * file exactly (records = -1 takes their number from it), and sets
 * h->records. @return 0, DSV_ERR_TRUNCATED or DSV_ERR_FORMAT, eb's where
 * naming the field at fault. */
int dsv_edf_check_size(dsv_edf_hdr *h, uint64_t file_size, dsv_errbuf *eb);

/* Parses a whole header from the first len bytes of a file of file_size
 * bytes (the three steps above). @return as they do. */
int dsv_edf_parse(const uint8_t *buf, size_t len, uint64_t file_size, dsv_edf_hdr *h,
		  dsv_errbuf *eb);

void dsv_edf_hdr_free(dsv_edf_hdr *h);

/* The signals served: those (not annotations) whose samples per record
 * are the most common among them, the first such count on a tie, in file
 * order, into pick (ns entries), *n of them. @return that count, 0 where
 * no signal holds samples. */
uint64_t dsv_edf_pick(const dsv_edf_hdr *h, size_t *pick, size_t *n);

/* Makes s (its file opened, or unopened: made from the index cache) the
 * source of the recording h says, h taken (emptied; freed with s,
 * whatever the result): the channels served, their scales, the shape,
 * the attributes. @return 0 or a dsv_err with eb set (close s then). */
int dsv_edf_take_header(dsv_source *s, dsv_edf_hdr *h, dsv_errbuf *eb);
/* The header of an EDF/BDF source, or NULL when s is not one. */
const dsv_edf_hdr *dsv_edf_header_of(const dsv_source *s);

/* edf_index.c: the index cache's hooks (source/format.h's save and
 * load): the header's values that make the source, checked at the load
 * as the header's parse checks them. */
int dsv_edf_index_save(const dsv_source *s, dsv_index_buf *out);
int dsv_edf_index_load(const char *file, const char *dataset, const void *blob, size_t len,
		       const dsv_index_stamp *st, dsv_source **out, dsv_errbuf *eb);

/* Opens path as a source (the format's open). */
int dsv_source_open_edf(const char *path, dsv_source **out, dsv_errbuf *eb);

#endif
