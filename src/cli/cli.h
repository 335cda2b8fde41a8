/* Subcommands of the dsview binary; each returns the process exit status. */
#ifndef DSV_CLI_H
#define DSV_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "dsview/dsview.h"
#include "common/defaults.h"
#include "dsview/fs.h"

enum { EXIT_OK = 0, EXIT_USER = 1, EXIT_INTERNAL = 2 };

int dsv_cmd_mount(int argc, char **argv);
int dsv_cmd_umount(int argc, char **argv);
int dsv_cmd_pack(int argc, char **argv);
int dsv_cmd_info(int argc, char **argv);
int dsv_cmd_verify(int argc, char **argv);
int dsv_cmd_status(int argc, char **argv);

/* helper.c: dsview as mount(8)'s helper (mount -t fuse.dsview, fstab).
 * dsv_cli_is_helper_call says whether argv is such a call: argv[0] is
 * mount.fuse.dsview, or (fuse3's mount.fuse3, once argv[1] is no command)
 * "dsview SOURCE MOUNTPOINT [-o OPTS]". */
int dsv_cmd_mount_helper(int argc, char **argv);
int dsv_cli_is_helper_call(int argc, char **argv);

/* One entry of the mount table, its fields decoded (\040 is a space). */
typedef struct dsv_cli_mount {
	char point[4096], type[256], source[4096];
	long uid; /* a FUSE mount's user_id= (who mounted it), -1 when not given */
} dsv_cli_mount;

/* Calls fn for every entry of /proc/self/mountinfo, in order (the last
 * one at a point is on top), until fn returns non-zero. @return 0, or -1
 * when the table cannot be read. (status.c) */
int dsv_cli_each_mount(int (*fn)(const dsv_cli_mount *mnt, void *arg), void *arg);

/* in as an absolute, normalised path, resolving its parent but never in
 * itself (a dead mount there would fail the lookup), into out. */
void dsv_cli_absolute(const char *in, char *out, size_t cap);

/* What a mount serves and leaves out, for its one line to the user and
 * the daemon's log: views served, datasets skipped, all entries of
 * /.skipped.json (datasets, and signals left out of recordings that are
 * served), and those counted by kind ("4 string, 1 signal"). */
typedef struct dsv_cli_left {
	size_t nserved, ndatasets, nskipped;
	const char *kinds;
} dsv_cli_left;
/* The line a mount says of l into buf (cap bytes; "" when nothing is
 * left out). @return buf */
const char *dsv_cli_left_line(const dsv_cli_left *l, const char *source, const char *mountpoint,
			      char *buf, size_t cap);

/* daemon.c */
/* Exit status of a start-up failure of the daemon: 2 only for an internal
 * bug (DSV_ERR_INTERNAL), else 1. */
int dsv_cli_startup_status(int err);
/* Serves fs in a child (logging to syslog if use_syslog, else where
 * dsv_log already writes) and returns in the parent once the mount answers,
 * or exits with the child's own start-up error printed. Never returns in
 * the child. */
int dsv_cli_daemonise(dsv_fs *fs, const char *mountpoint, int use_syslog, const char *source,
		      const dsv_cli_left *left);
/* The daemon's log when --log is not given: syslog when /dev/log is a
 * socket (path = ""), else path = /run/dsview/NAME.log (as root;
 * $XDG_RUNTIME_DIR/dsview otherwise), NAME the mountpoint with '/' as '-',
 * opened with dsv_log_open. @return 0, or -1 after the one-line error. */
int dsv_cli_default_log(const char *mountpoint, char *path, size_t cap);

/* One line on stderr: "dsview: <msg>". */
void dsv_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* getopt_long for every subcommand, one grammar: options may come before
 * or after operands (GNU permutation; "--" ends them), and an unknown
 * option, or one missing its value, prints one line naming it and
 * "try 'dsview CMD --help'". shortopts as getopt_long's, without a leading
 * '+', '-' or ':'. @return the option, -1 after the last, or '?' after
 * the message (the caller returns EXIT_USER). Call dsv_cli_getopt_start
 * before the first. */
int dsv_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
		   const struct option *longopts);
/* Starts getopt afresh on a new argv (a subcommand may run more than once
 * in a process: the tests call them again). */
void dsv_cli_getopt_start(void);

/* Checks that argv[optind..argc) holds from min to max operands; else
 * prints one line ("missing WHAT" / "unexpected argument 'X'", then "try
 * 'dsview CMD --help'") and returns -1. what names the operands, e.g.
 * "SOURCE [MOUNTPOINT]". */
int dsv_cli_operands(const char *cmd, int argc, char **argv, int min, int max, const char *what);

/* Parses a size option (dsv_parse_size: 512K, 2G, 0) that must be a whole
 * multiple of unit and at most max (0: no limit, else max_what names the
 * limit, e.g. "this machine's memory"). Otherwise prints one line naming
 * the option, the value and the limit, and returns -1. */
int dsv_cli_size_arg(const char *opt, const char *arg, uint64_t unit, uint64_t max,
		     const char *max_what, uint64_t *out);

/* The disk cache of objects' bytes: --disk-cache DIR and
 * --disk-cache-size S (dir, size_arg; NULL when not given), else the
 * manifest's disk_cache and disk_cache_size. m NULL: before a manifest is
 * read (or with none), so that the reads that open the sources go through
 * the options' cache; with m, set again only when the manifest changes
 * it. @return 0, or -1 after the error line. */
struct dsv_manifest;
int dsv_cli_disk_cache(const struct dsv_manifest *m, const char *dir, const char *size_arg);

/* Parses an integer option value in [lo, hi] into *out; otherwise prints
 * "dsview: OPT 'ARG' must be an integer from LO to HI" and returns -1. */
int dsv_cli_int_arg(const char *opt, const char *arg, long lo, long hi, int *out);

/* s with every byte that is not part of valid UTF-8 written as \xNN, and
 * if terminal, control characters too (C0, DEL, C1): a name read from a
 * file can then neither move the cursor, recolour the screen or start a
 * new line on a terminal, nor break a JSON string. The result lives until
 * 8 more calls. */
const char *dsv_cli_escaped(const char *s, int terminal);

/* dsv_cli_escaped(s, 1) */
const char *dsv_cli_shown(const char *s);

/* dsv_cli_escaped of a source's path as it may be shown: a URL without
 * its query (a presigned URL's signature; dsv_url_shown_len). */
const char *dsv_cli_path_escaped(const char *path, int terminal);

/* What to print of eb on a line that already names file (and dataset,
 * unless NULL): the reason alone when eb is about that file and dataset
 * (its file and where fields say so), else the whole message. Read from
 * the fields, never from the wording. */
const char *dsv_cli_reason(const dsv_errbuf *eb, const char *file, const char *dataset);

/* Members of JSON objects the CLI reads (info's own report, a mount's
 * .stats.json): key's integer, 0 when o is no object or the member is
 * missing or not an integer; key's string, or def when it is missing or
 * not a string. */
json_int_t dsv_cli_jint(const json_t *o, const char *key);
const char *dsv_cli_jstr(const json_t *o, const char *key, const char *def);

/* The daemon's pid from a mount's .stats.json at stats_path (its "pid"
 * member, read as JSON); 0 if the file cannot be read (a dead daemon) or
 * holds no positive pid. */
pid_t dsv_cli_stats_pid(const char *stats_path);

#endif
