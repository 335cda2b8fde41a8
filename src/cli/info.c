/* dsview info: work in progress (issue 3). */
#include "cli/cli.h"

int dsv_cmd_info(int argc, char **argv)
{
	(void)argc, (void)argv;
	dsv_cli_error("info: not built yet");
	return EXIT_INTERNAL;
}
