/* dsview verify: work in progress (issue 3). */
#include "cli/cli.h"

int dsv_cmd_verify(int argc, char **argv)
{
	(void)argc, (void)argv;
	dsv_cli_error("verify: not built yet");
	return EXIT_INTERNAL;
}
