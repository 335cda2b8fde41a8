/*
 * dsview info: describes a .npy, a raw file, an HDF5 file (every dataset,
 * or one), a dsview store, a Zarr array or group, or a manifest. This file reads the command line;
 * info_json.c builds the document, info_text.c renders it.
 *
 * Everything is first gathered into one JSON document (the schema is in
 * info_usage below); --json prints it, otherwise the human renderer prints
 * the same document as aligned text. One model keeps the two outputs from
 * drifting apart.
 *
 * A dataset dsview refuses to serve is described, not an error: info is
 * where a user finds out why. Only a file that cannot be read at all (or a
 * bad argument) exits 1.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/raw_opts.h"
#include "cli/info_i.h"
#include "cli/target.h"
#include "source/format.h"
#include "common/str.h"

static const char info_usage[] =
	"usage: dsview info [--json] [--disk-cache DIR] PATH\n"
	"       dsview info [--json] --source-dtype T --source-shape A,B,...\n"
	"                   [--source-offset N] RAWFILE\n"
	"\n"
	"Describes PATH: a .npy, a NIfTI image (.nii), an EEG recording (.edf, .bdf,\n"
	".set, .vhdr), a raw file (with --source-dtype and --source-shape, any one axis\n"
	"-1), an HDF5 file (every dataset) or one dataset of it\n"
	"(file.h5:/path/dset), a dsview store, a Zarr array, a Zarr group (every array,\n"
	"as a mount serves it), or a manifest (.ini: every view). A Zarr array or group\n"
	"may be an s3:// prefix.\n"
	"For HDF5 datasets: layout, chunks, filters, bytes stored, and how dsview\n"
	"serves each one: fast path (dsview reads and decodes the chunks itself),\n"
	"library fallback (through HDF5, serialised) or refused, with the reason.\n"
	"\n"
	"options:\n"
	"  --json        print one JSON document instead of text\n" DSV_CLI_RAW_USAGE
	"  --disk-cache DIR     keep the stored bytes that objects' GETs fetch\n"
	"                (s3://, https://) in DIR, as mount does\n"
	"  --disk-cache-size S  the most DIR holds (default " DSV_DEFAULT_DISK_CACHE_TEXT ")\n"
	"  -h, --help    this help\n"
	"\n"
	"Names and paths are shown with control characters and bytes that are not\n"
	"UTF-8 as \\xNN; in JSON, which escapes control characters itself, only\n"
	"the bytes that are not UTF-8.\n"
	"\n"
	"JSON schema (sizes in bytes, all numbers are JSON numbers):\n"
	"  {\"path\", \"kind\": \"npy\"|\"nifti\"|\"edf\"|\"eeglab\"|\"brainvision\"|\n"
	"           \"raw\"|\"zarr\"|\n"
	"           \"hdf5\"|\"manifest\"|\"zarr-group\",\n"
	"   \"file_bytes\" (0 for a Zarr array or group, a directory),\n"
	"   npy, nifti, edf, eeglab, brainvision, raw, zarr: \"source\": SOURCE\n"
	"   hdf5:     \"datasets\": [DATASET],\n"
	"             \"totals\": {\"datasets\", \"fast_path\", \"library_fallback\",\n"
	"                        \"refused\", \"raw_bytes\", \"stored_bytes\",\n"
	"                        \"links_not_followed\": {\"soft\", \"external\"}}\n"
	"   manifest, zarr-group: \"views\": [VIEW], \"totals\": {\"views\",\n"
	"             \"virtual_bytes\", \"stored_bytes\"} (a source shared by views\n"
	"             counted once); zarr-group also \"skipped\": [{\"name\", \"reason\"}]\n"
	"             (its arrays not served)}\n"
	"  SOURCE  = {\"path\", \"dataset\": str|null, \"kind\": "
	"\"npy\"|\"nifti\"|\"edf\"|\"eeglab\"|\"brainvision\"|\"raw\"|\n"
	"             \"hdf5-contiguous\"|\"hdf5-chunked\"|\"hdf5-library\"|\"zarr\",\n"
	"             \"why\": str|null, \"dtype\", \"shape\",\n"
	"             \"dimension_names\": [str|null]|null (axis names: Zarr's,\n"
	"             HDF5 dimension scales'),\n"
	"             \"scale\", \"offset\": number|null (the source's own scaling:\n"
	"             NIfTI's scl_slope, scl_inter; null: none),\n"
	"             \"data_bytes\",\n"
	"             \"stored_bytes\" (Zarr: its chunk files' sizes),\n"
	"             \"flat\": bool (true: the file holds the elements as one run,\n"
	"             npy, raw, NIfTI, HDF5 contiguous; its chunks below are\n"
	"             dsview's units of readahead and verify, about 1 MiB, and\n"
	"             the text output leaves them out), \"nchunks\",\n"
	"             \"chunk_elems\", \"chunk_rows\": int|null (null: chunks split rows),\n"
	"             \"chunk_bytes\"     (the chunks dsview reads and caches),\n"
	"             \"source_offset\", \"source_dtype\": int|null, str|null (a raw\n"
	"             file's: the header bytes before its elements, and their type\n"
	"             as stored, \"int24\" for 3-byte samples; null for other kinds)}\n"
	"  DATASET = {\"name\", \"type\" (as stored), \"element_bytes\", \"shape\",\n"
	"             \"layout\": \"contiguous\"|\"chunked\"|\"compact\"|\"virtual\"|\"unknown\",\n"
	"             \"chunk_shape\": [int]|null, \"chunks_written\": int|null,\n"
	"             \"filters\": [{\"id\", \"name\", \"cd\": [int]}], \"external_files\",\n"
	"             \"raw_bytes\", \"stored_bytes\", \"ratio\": raw/stored|null,\n"
	"             \"serve\": \"fast-path\"|\"library-fallback\"|\"virtual\"|\"refused\",\n"
	"             \"parts\": [SOURCE with \"rows\"] (virtual only: its sources and\n"
	"             fill rows, in row order),\n"
	"             \"why\": str|null (fallback or refusal reason),\n"
	"             \"source\": SOURCE|null (null when refused),\n"
	"             \"store\": null | the dsview attribute's JSON object |\n"
	"                      {\"error\": str} (attribute present but unreadable)}\n"
	"  VIEW    = {\"name\", \"shape\", \"dtype\", \"nbytes\" (size of NAME.dat),\n"
	"             \"stored_bytes\", \"ratio\", \"transform\": {\"scale\", \"offset\",\n"
	"             \"mean\", \"std\", \"channel_axis\", \"clip\"} (null when unset),\n"
	"             \"sources\": [SOURCE with \"rows\": [first, end)]}\n";

int dsv_cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dtype", required_argument, NULL, 'D' },
		DSV_CLI_RAW_LONGOPTS,
		{ "disk-cache", required_argument, NULL, 'K' },
		{ "disk-cache-size", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dtype_arg = NULL, *disk_arg = NULL, *disk_size_arg = NULL;
	dsv_cli_raw raw_args = { 0 };
	dsv_raw_layout raw;
	int c, json_out = 0, err, is_raw;
	dsv_target t;
	dsv_errbuf eb;
	json_t *root;

	dsv_cli_getopt_start();
	while ((c = dsv_cli_getopt("info", argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'D': dtype_arg = optarg; break;
		case 'K': disk_arg = optarg; break;
		case 'k': disk_size_arg = optarg; break;
		case 'h': fputs(info_usage, stdout); return EXIT_OK;
		default:
			if (dsv_cli_raw_opt(c, optarg, &raw_args))
				break;
			return EXIT_USER;
		}
	}
	if (dsv_cli_operands("info", argc, argv, 1, 1, "PATH"))
		return EXIT_USER;
	const char *spec = argv[optind];
	if ((is_raw = dsv_cli_raw_layout("info", spec, &raw_args, dtype_arg, &raw)) < 0)
		return EXIT_USER;
	if (dsv_cli_disk_cache(NULL, disk_arg, disk_size_arg))
		return EXIT_USER;
	if ((err = dsv_target_parse(spec, is_raw, &t, &eb))) {
		dsv_cli_error("%s", eb.msg);
		return err == DSV_ERR_NOMEM ? EXIT_INTERNAL : EXIT_USER;
	}

	/* a file of datasets other than HDF5 (a .npz): its one named array,
	 * or all of them as the views a mount of it serves */
	if (t.kind == DSV_TARGET_DATASETS && strcmp(t.format->name, "hdf5"))
		t.kind = t.dataset ? DSV_TARGET_ARRAY : DSV_TARGET_GROUP;
	root = json_object();
	err = dsv_info_build(&t, &raw, root, &eb);
	if (err) {
		dsv_cli_error("%s", eb.msg);
		json_decref(root);
		dsv_target_free(&t);
		return err == DSV_ERR_NOMEM || err == DSV_ERR_INTERNAL ? EXIT_INTERNAL : EXIT_USER;
	}

	if (json_out) {
		char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
						   JSON_REAL_PRECISION(17));
		if (!s) {
			dsv_cli_error("out of memory");
			err = DSV_ERR_NOMEM;
		} else {
			puts(s);
			free(s);
		}
	} else {
		dsv_info_print(t.kind, root);
	}
	json_decref(root);
	dsv_target_free(&t);
	if (fflush(stdout) != 0 && !err) {
		dsv_cli_error("writing the output failed");
		return EXIT_USER;
	}
	return err ? EXIT_INTERNAL : EXIT_OK;
}
