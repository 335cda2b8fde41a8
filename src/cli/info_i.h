/*
 * Private to dsview info: info.c reads the command line, info_json.c
 * builds the one JSON document (the schema is in info.c's usage), and
 * info_text.c renders that document as aligned text.
 */
#ifndef DSV_CLI_INFO_I_H
#define DSV_CLI_INFO_I_H

#include <jansson.h>
#include <stdint.h>

#include "cli/target.h"
#include "dsview/dsview.h"
#include "dsview/source.h"

/* Fills root (an empty object) with the document describing t: "path",
 * "kind", "file_bytes" and the kind's own fields. dtype, ndim and shape
 * are a raw file's (unused otherwise). @return 0, or the dsv_err with eb
 * set when t cannot be described at all; root may then be partly filled. */
int dsv_info_build(const dsv_target *t, const dsv_raw_layout *raw, json_t *root, dsv_errbuf *eb);

/* Prints the document dsv_info_build made for a target of kind as text
 * on stdout. */
void dsv_info_print(dsv_target_kind kind, const json_t *root);

#endif
