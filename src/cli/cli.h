/* Subcommands of the dsview binary; each returns the process exit status. */
#ifndef DSV_CLI_H
#define DSV_CLI_H

enum { EXIT_OK = 0, EXIT_USER = 1, EXIT_INTERNAL = 2 };

int dsv_cmd_mount(int argc, char **argv);
int dsv_cmd_umount(int argc, char **argv);
int dsv_cmd_pack(int argc, char **argv);
int dsv_cmd_info(int argc, char **argv);
int dsv_cmd_verify(int argc, char **argv);

/* One line on stderr: "dsview: <msg>". */
void dsv_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses an integer option value in [lo, hi] into *out; otherwise prints
 * "dsview: OPT 'ARG' must be an integer from LO to HI" and returns -1. */
int dsv_cli_int_arg(const char *opt, const char *arg, long lo, long hi, int *out);

#endif
