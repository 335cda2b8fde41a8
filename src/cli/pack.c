/*
 * dsview pack: the command line around dsv_pack (src/pack). SIGINT, SIGTERM
 * and SIGHUP only raise a flag: dsv_pack sees it between chunks, removes
 * its temporary file and fails, so an interrupted pack leaves nothing.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/raw_opts.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/target.h"
#include "common/str.h"
#include "dsview/codec.h"
#include "dsview/pack.h"
#include "formats/formats.h"

static const char pack_usage[] =
	"usage: dsview pack [OPTIONS] INPUT OUTPUT.h5\n"
	"\n"
	"Writes a store: a standard HDF5 file with one dataset chunked along axis 0\n"
	"(whole rows per chunk), a codec's standard filter then Fletcher32, in the\n"
	"input's dtype. h5py with hdf5plugin reads it; dsview mounts it.\n"
	"\n"
	"INPUT: x.npy, x.nii or x.nii.gz (NIfTI; a .nii.gz is unpacked once into a\n"
	"temporary beside OUTPUT), x.h5:/path/to/dataset, a Zarr array's directory\n"
	"(x.zarr, x.zarr/group/array), an EEG recording (x.edf, x.bdf: its\n"
	"physical values as float64; x.set: EEGLAB's data in its own type; x.vhdr:\n"
	"BrainVision, as float64), or a raw file with --source-dtype and\n"
	"--source-shape (and --source-offset for a header; int24 served as int32).\n"
	"\n"
	"options:\n"
	"  --dataset NAME      dataset name in the store (default: the input's base name)\n"
	"  --chunk-size SIZE   raw bytes per chunk, rounded to whole rows (default 1M;\n"
	"                      zstd and blosc-*, decoded a chunk at a time: 256K)\n"
	"  --block-size SIZE   lz4/lz4hc: raw bytes per LZ4 block (default 16K, 4K..1G), fitted\n"
	"                      to whole rows or an exact part of a row; a read decodes only\n"
	"                      the blocks it needs\n"
	"  --codec C           lz4 (default; 32004), lz4hc, zstd (32015), Blosc (32001):\n"
	"                      blosc-lz4-shuffle, blosc-lz4-bitshuffle, blosc-lz4-noshuffle,\n"
	"                      blosc-zstd-shuffle, blosc-zstd-bitshuffle, blosc-zstd-noshuffle,\n"
	"                      bitshuffle (32008): bitshuffle-lz4, bitshuffle-zstd; none\n"
	"                      (uncompressed, checksummed); or auto: measures them on a\n"
	"                      sample and takes the best ratio that decodes >= 2 GB/s of\n"
	"                      float32 per core here (and encodes >= 40 MB/s); says why\n"
	"  --storage S         --codec auto: how fast the store will be read: fast (default),\n"
	"                      slow (250 MB/s) or a rate (100MB/s, 1.5G); under the decode\n"
	"                      bar (500 MB/s of uint8, 2 GB/s of float32) auto picks the best\n"
	"                      ratio that decodes faster than the storage delivers\n"
	"  --level N           lz4: acceleration, 1 (default) = best ratio .. higher = faster;\n"
	"                      lz4hc: 1..12 (default 9); zstd: 1..22 (default 6); blosc-*:\n"
	"                      1..9 (default 5); bitshuffle-zstd: 1..22 (default "
	"3)\n" DSV_CLI_RAW_USAGE "  --threads N         compression threads (default: all cores)\n"
	"  --disk-cache DIR    keep the stored bytes that objects' GETs fetch (s3://,\n"
	"                      https://) in DIR, as mount does\n"
	"  --disk-cache-size S the most DIR holds (default 10G)\n"
	"  --force             replace OUTPUT if it exists\n"
	"\n"
	"The store is written to OUTPUT.tmp-*, synced, and renamed into place: an\n"
	"interrupted or failed pack leaves no OUTPUT and no temporary file.\n";

static volatile sig_atomic_t stop_flag;

/* True when the registry knows input's format (a group is no input). */
static int input_format(const char *input)
{
	char *file, *dataset;
	int dir, err;
	const dsv_format *f = dsv_format_of_spec(input, DSV_DETECT_MAGIC, &file, &dataset, &dir,
						 &err);
	free(file);
	free(dataset);
	return f && dir != DSV_FMT_GROUP;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void show_progress(const dsv_pack_progress *pr, void *arg)
{
	dsv_progress *bar = arg;
	bar->total = pr->rows_total;
	dsv_progress_update(bar, pr->rows_done, pr->raw_bytes, pr->stored_bytes, 0);
}

int dsv_cmd_pack(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dataset", required_argument, NULL, 'n' },
		{ "chunk-size", required_argument, NULL, 'c' },
		{ "codec", required_argument, NULL, 'z' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "level", required_argument, NULL, 'l' },
		{ "dtype", required_argument, NULL, 'D' },
		DSV_CLI_RAW_LONGOPTS,
		{ "threads", required_argument, NULL, 'T' },
		{ "storage", required_argument, NULL, 'R' },
		{ "force", no_argument, NULL, 'f' },
		{ "disk-cache", required_argument, NULL, 'K' },
		{ "disk-cache-size", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_progress bar;
	dsv_errbuf eb;
	const char *dtype_arg = NULL, *disk_arg = NULL, *disk_size_arg = NULL;
	dsv_cli_raw raw_args = { 0 };
	char *end, a[32], b[32];
	int c, err;
	long v;

	dsv_pack_opts_init(&o);
	dsv_cli_getopt_start();
	while ((c = dsv_cli_getopt("pack", argc, argv, "fh", longopts)) != -1) {
		switch (c) {
		case 'n': o.dataset = optarg; break;
		case 'c':
			if (dsv_parse_size(optarg, &o.chunk_bytes) || o.chunk_bytes == 0) {
				dsv_cli_error("--chunk-size '%s' is not a size (e.g. 1M, 256k)",
					      optarg);
				return EXIT_USER;
			}
			break;
		case 'b':
			if (dsv_parse_size(optarg, &o.block_bytes) ||
			    o.block_bytes < DSV_PACK_MIN_BLOCK ||
			    o.block_bytes > DSV_PACK_MAX_BLOCK) {
				dsv_cli_error("--block-size '%s' must be a size from %uK to %lluM "
					      "(e.g. 16K)",
					      optarg, DSV_PACK_MIN_BLOCK >> 10,
					      (unsigned long long)(DSV_PACK_MAX_BLOCK >> 20));
				return EXIT_USER;
			}
			break;
		case 'z':
			if (dsv_pack_codec_by_name(optarg, &o.codec)) {
				dsv_cli_error("--codec '%s' must be one of: %s", optarg,
					      dsv_pack_codec_names());
				return EXIT_USER;
			}
			break;
		case 'l':
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 0 || v > DSV_LZ4_MAX_ACCELERATION) {
				dsv_cli_error("--level '%s' must be an integer from 0 to %d",
					      optarg, DSV_LZ4_MAX_ACCELERATION);
				return EXIT_USER;
			}
			o.level = (int)v;
			break;
		case 'D': dtype_arg = optarg; break;
		case 'T':
			if (dsv_cli_int_arg("--threads", optarg, 1, 256, &o.threads))
				return EXIT_USER;
			break;
		case 'R':
			if (dsv_pack_parse_storage(optarg, &o.storage_bytes_s)) {
				dsv_cli_error("--storage '%s' must be fast, slow or a rate like "
					      "250MB/s",
					      optarg);
				return EXIT_USER;
			}
			break;
		case 'f': o.force = 1; break;
		case 'K': disk_arg = optarg; break;
		case 'k': disk_size_arg = optarg; break;
		case 'h': fputs(pack_usage, stdout); return EXIT_OK;
		default:
			if (dsv_cli_raw_opt(c, optarg, &raw_args))
				break;
			return EXIT_USER;
		}
	}
	if (dsv_cli_operands("pack", argc, argv, 2, 2, "INPUT OUTPUT.h5"))
		return EXIT_USER;
	o.input = argv[optind];
	o.output = argv[optind + 1];
	if (dsv_cli_disk_cache(NULL, disk_arg, disk_size_arg))
		return EXIT_USER;

	switch (dsv_cli_raw_layout("pack", o.input, &raw_args, dtype_arg, &o.raw)) {
	case -1: return EXIT_USER;
	case 0:
		if (!input_format(o.input)) {
			char what[512];
			dsv_cli_error("%s: not %s; a raw file needs --source-dtype and "
				      "--source-shape",
				      o.input, dsv_format_nouns(DSV_FMT_RAW, what, sizeof(what)));
			return EXIT_USER;
		}
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	o.stop = &stop_flag;

	dsv_progress_start(&bar, "pack", 0, "rows");
	o.progress = show_progress;
	o.progress_arg = &bar;
	err = dsv_pack(&o, &res, &eb);
	dsv_progress_end(&bar);
	if (res.auto_why[0])
		printf("%s\n", res.auto_why);
	/* A signal after dsv_pack's last check, once the output is renamed
	 * into place, came too late to stop it: the file is whole, so say so
	 * (0) rather than "not written" beside a file that exists. A stop is
	 * the user's wish, not a fault: exit 1 with that sentence, never the
	 * internal-error status. */
	if (err == DSV_ERR_INTERRUPTED || (stop_flag && err)) {
		dsv_cli_error("pack interrupted; %s not written", o.output);
		return EXIT_USER;
	}
	if (err) {
		dsv_cli_error("%s", eb.msg);
		return err == DSV_ERR_INTERNAL || err == DSV_ERR_NOMEM ? EXIT_INTERNAL : EXIT_USER;
	}
	printf("packed %s -> %s:%s: %llu rows, %s -> %s (%.2fx), %llu chunks of %llu rows, %s",
	       o.input, o.output, res.dataset, (unsigned long long)res.rows,
	       dsv_fmt_bytes(a, sizeof(a), res.raw_bytes),
	       dsv_fmt_bytes(b, sizeof(b), res.stored_bytes),
	       res.stored_bytes ? (double)res.raw_bytes / (double)res.stored_bytes : 1.0,
	       (unsigned long long)res.chunks, (unsigned long long)res.chunk_rows,
	       dsv_pack_codec_get(res.codec)->name);
	if (dsv_pack_codec_get(res.codec)->max_level)
		printf(" level %d", res.level);
	if (res.block_bytes)
		printf(", blocks of %s", dsv_fmt_bytes(a, sizeof(a), res.block_bytes));
	printf(", %.2f s (%.2f s writing, %.2f s syncing), %s/s, %d threads\n", res.seconds,
	       res.write_seconds, res.sync_seconds,
	       dsv_fmt_bytes(a, sizeof(a),
			     res.seconds > 0 ? (uint64_t)((double)res.raw_bytes / res.seconds) : 0),
	       res.threads);
	return EXIT_OK;
}
