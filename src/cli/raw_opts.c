/* A raw file's options, the same in every command (raw_opts.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/raw_opts.h"
#include "common/str.h"

int dsv_cli_raw_opt(int c, const char *arg, dsv_cli_raw *r)
{
	switch (c) {
	case DSV_CLI_OPT_SOURCE_DTYPE: r->dtype = arg; return 1;
	case DSV_CLI_OPT_SOURCE_SHAPE: r->shape = arg; return 1;
	case DSV_CLI_OPT_SOURCE_OFFSET: r->offset = arg; return 1;
	case DSV_CLI_OPT_OLD_SHAPE: r->old_shape = 1; return 1;
	default: return 0;
	}
}

/* The old spellings, refused naming the new. @return -1 after the line, 0 none. */
static int old_spellings(const char *cmd, const dsv_cli_raw *r, const char *out_dtype)
{
	if (r->old_shape) {
		dsv_cli_error("--shape is now --source-shape (a raw file's shape; its element "
			      "type is --source-dtype, as the manifest's source_shape and "
			      "source_dtype)");
		return -1;
	}
	if (out_dtype && strcmp(cmd, "mount")) {
		dsv_cli_error("%s takes no --dtype: --dtype is the output dtype of a mount's "
			      "views; a raw file's element type is --source-dtype",
			      cmd);
		return -1;
	}
	return 0;
}

int dsv_cli_raw_layout(const char *cmd, const char *path, const dsv_cli_raw *r,
		       const char *out_dtype, dsv_raw_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->dtype = DSV_DTYPE_INVALID;
	if (old_spellings(cmd, r, out_dtype))
		return -1;
	if (!r->dtype && !r->shape && !r->offset)
		return 0;
	if (!r->dtype || !r->shape) {
		dsv_cli_error("%s: a raw file needs both --source-dtype and --source-shape%s", path,
			      r->offset && !r->dtype && !r->shape
				      ? " (--source-offset is its header)"
				      : "");
		return -1;
	}
	if (dsv_raw_dtype_parse(r->dtype, l)) {
		dsv_cli_error("--source-dtype '%s' " DSV_RAW_DTYPE_RULE, r->dtype);
		return -1;
	}
	if (dsv_parse_shape(r->shape, &l->ndim, l->shape)) {
		dsv_cli_error("--source-shape '%s' " DSV_SHAPE_RULE, r->shape);
		return -1;
	}
	if (r->offset && dsv_parse_offset(r->offset, &l->offset)) {
		dsv_cli_error("--source-offset '%s' " DSV_OFFSET_RULE, r->offset);
		return -1;
	}
	return 1;
}
