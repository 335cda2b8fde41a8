/* dsview: one binary, subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dsview/dsview.h"

static const char usage[] =
	"usage: dsview COMMAND [OPTIONS] ...\n"
	"\n"
	"Serve uint8/int16/float arrays (.npy, raw, HDF5, Zarr) as normalised float32,\n"
	"bfloat16 or float16 files through a read-only FUSE mount.\n"
	"\n"
	"commands:\n"
	"  mount [OPTIONS] SOURCE [MOUNTPOINT]  mount a manifest, a file or a directory\n"
	"  umount [-z] [MOUNTPOINT]             unmount (also after a daemon crash)\n"
	"  pack [OPTIONS] INPUT OUTPUT.h5       write a compressed, checksummed store\n"
	"  info [--json] PATH                   describe a source, HDF5 file, store or manifest\n"
	"  verify PATH                          decode every chunk, check every checksum\n"
	"  status [--json] [--watch] [MOUNTPOINT]  list dsview mounts: source, pid, traffic, log\n"
	"\n"
	"  dsview COMMAND --help   options of one command\n"
	"  dsview --version        print the version\n";

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	if (!strcmp(base ? base + 1 : argv[0], "mount.fuse.dsview"))
		return dsv_cmd_mount_helper(argc, argv);
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USER;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("dsview %s\n", DSV_VERSION_STRING);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "mount"))
		return dsv_cmd_mount(argc - 1, argv + 1);
	if (!strcmp(cmd, "umount") || !strcmp(cmd, "unmount"))
		return dsv_cmd_umount(argc - 1, argv + 1);
	if (!strcmp(cmd, "pack"))
		return dsv_cmd_pack(argc - 1, argv + 1);
	if (!strcmp(cmd, "info"))
		return dsv_cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "status"))
		return dsv_cmd_status(argc - 1, argv + 1);
	if (!strcmp(cmd, "verify"))
		return dsv_cmd_verify(argc - 1, argv + 1);
	if (dsv_cli_is_helper_call(argc, argv))
		return dsv_cmd_mount_helper(argc, argv);
	dsv_cli_error("unknown command '%s' (try dsview --help)", cmd);
	return EXIT_USER;
}
