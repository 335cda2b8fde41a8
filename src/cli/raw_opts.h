/*
 * A raw file's options, one spelling in mount, info, verify and pack
 * (raw_opts.c): --source-dtype, --source-shape and --source-offset, as
 * the manifest's source_dtype, source_shape and source_offset; --dtype is
 * the output's dtype wherever it is taken. The old spellings (--shape;
 * --dtype for the source's elements) are refused naming the new ones.
 */
#ifndef DSV_CLI_RAW_OPTS_H
#define DSV_CLI_RAW_OPTS_H

#include <getopt.h>

#include "dsview/source.h"

enum {
	DSV_CLI_OPT_SOURCE_DTYPE = 0x100,
	DSV_CLI_OPT_SOURCE_SHAPE,
	DSV_CLI_OPT_SOURCE_OFFSET,
	DSV_CLI_OPT_OLD_SHAPE,
};

/* The long options, for a command's table. */
#define DSV_CLI_RAW_LONGOPTS                                                             \
	{ "source-dtype", required_argument, NULL, DSV_CLI_OPT_SOURCE_DTYPE },           \
		{ "source-shape", required_argument, NULL, DSV_CLI_OPT_SOURCE_SHAPE },   \
		{ "source-offset", required_argument, NULL, DSV_CLI_OPT_SOURCE_OFFSET }, \
	{                                                                                \
		"shape", required_argument, NULL, DSV_CLI_OPT_OLD_SHAPE                  \
	}

/* Their lines of a usage text: info's, verify's and pack's indents, and
 * mount's. */
#define DSV_CLI_RAW_USAGE                                                              \
	"  --source-dtype T  a raw file's element type: uint8, int16, int24 (3-byte\n" \
	"                    signed, as BDF writes), float32, ... (source_dtype)\n"    \
	"  --source-shape S  its shape, e.g. -1,64,64,3 (any one axis -1: from\n"      \
	"                    the file's size; source_shape)\n"                         \
	"  --source-offset N bytes of header before the data (default 0;\n"            \
	"                    source_offset)\n"
#define DSV_CLI_RAW_USAGE_MOUNT                                                          \
	"      --source-dtype T a raw SOURCE's element type: uint8, int16, int24\n"      \
	"                       (3-byte signed, as BDF writes), float32, ...\n"          \
	"      --source-shape S its shape, e.g. -1,64,64,3 (any one axis -1: from the\n" \
	"                       file's size); one view, in --dtype\n"                    \
	"      --source-offset N  bytes of header before the data (default 0)\n"

/* What the command line said of a raw file, as given. */
typedef struct dsv_cli_raw {
	const char *dtype, *shape, *offset;
	int old_shape; /* --shape was given */
} dsv_cli_raw;

/* Takes option c (getopt's, its value arg) into r when it is one of
 * DSV_CLI_RAW_LONGOPTS. @return 1 taken, 0 not one of them. */
int dsv_cli_raw_opt(int c, const char *arg, dsv_cli_raw *r);

/* r checked into l for cmd's PATH path; out_dtype the --dtype given, or
 * NULL (in info, verify and pack, which serve no output, it is refused:
 * it used to be the source's element type there). @return 1 a raw layout
 * given, 0 none (l->dtype DSV_DTYPE_INVALID), -1 after the error line. */
int dsv_cli_raw_layout(const char *cmd, const char *path, const dsv_cli_raw *r,
		       const char *out_dtype, dsv_raw_layout *l);

#endif
