/* dsview pack: work in progress (issue 3). */
#include "cli/cli.h"

int dsv_cmd_pack(int argc, char **argv)
{
	(void)argc, (void)argv;
	dsv_cli_error("pack: not built yet");
	return EXIT_INTERNAL;
}
