/*
 * dsview umount: unmount a dsview mount, and wait for its daemon to exit.
 * A busy mount (files still open) is refused with a clear message unless -z
 * asks for a lazy detach; a mount whose daemon died ("Transport endpoint is
 * not connected") is always detached lazily, since nothing else works there.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"

static const char umount_usage[] =
	"usage: dsview umount [-z] [MOUNTPOINT]\n"
	"\n"
	"MOUNTPOINT defaults to " DSV_DEFAULT_MOUNTPOINT ", as for dsview mount.\n"
	"\n"
	"  -z, --lazy   detach now even if files are open; the daemon exits when\n"
	"               the last reader closes\n";

/* Finds mp in the mount table; @return 1 and its type and who mounted
 * it (-1: not said), or 0. */
typedef struct find_job {
	const char *mp;
	char *fstype;
	size_t cap;
	int found;
	long uid;
} find_job;

static int find_one(const dsv_cli_mount *mnt, void *arg)
{
	find_job *j = arg;
	if (!strcmp(mnt->point, j->mp)) {
		snprintf(j->fstype, j->cap, "%s", mnt->type);
		j->uid = mnt->uid;
		j->found = 1; /* keep going: the last one is on top */
	}
	return 0;
}

static int find_mount(const char *mp, char *fstype, size_t cap, long *uid)
{
	find_job j = { mp, fstype, cap, 0, -1 };
	int found = dsv_cli_each_mount(find_one, &j) == 0 && j.found;
	*uid = j.uid;
	return found;
}

/* The first cap - 1 bytes of path as a string in buf. @return 0, or -1 */
static int read_head(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return 0;
}

pid_t dsv_cli_stats_pid(const char *stats_path)
{
	json_error_t je;
	json_t *root = json_load_file(stats_path, 0, &je);
	json_int_t pid = dsv_cli_jint(root, "pid");

	json_decref(root);
	return pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

static pid_t daemon_pid(const char *mp)
{
	char path[2 * PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/.stats.json", mp);
	return dsv_cli_stats_pid(path);
}

/* 1 while pid runs. A zombie counts as gone: its files and memory are
 * released, and the parent that reaps it (init, or a container's PID 1)
 * may take a second or more to do so. */
static int running(pid_t pid)
{
	char path[64], buf[512];
	if (kill(pid, 0) < 0)
		return errno == EPERM;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_head(path, buf, sizeof(buf)) < 0)
		return 0;
	/* pid (comm) state ...: comm may hold spaces and parentheses */
	const char *p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

static int run_fusermount(const char *mp, int lazy)
{
	pid_t pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", lazy ? "-uz" : "-u", mp, (char *)NULL);
		_exit(127);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int dsv_cmd_umount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lazy", no_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char mp[2 * PATH_MAX + 8], fstype[256];
	int lazy = 0, c;

	dsv_cli_getopt_start();
	while ((c = dsv_cli_getopt("umount", argc, argv, "zh", longopts)) != -1) {
		switch (c) {
		case 'z': lazy = 1; break;
		case 'h': fputs(umount_usage, stdout); return EXIT_OK;
		default: return EXIT_USER;
		}
	}
	if (dsv_cli_operands("umount", argc, argv, 0, 1, "[MOUNTPOINT]"))
		return EXIT_USER;
	dsv_cli_absolute(optind < argc ? argv[optind] : DSV_DEFAULT_MOUNTPOINT, mp, sizeof(mp));
	long uid;
	if (!find_mount(mp, fstype, sizeof(fstype), &uid)) {
		dsv_cli_error("%s: not mounted", mp);
		return EXIT_USER;
	}
	if (strcmp(fstype, "fuse.dsview")) {
		dsv_cli_error("%s: not a dsview mount (type %s)", mp, fstype);
		return EXIT_USER;
	}
	if (geteuid() != 0 && uid >= 0 && uid != (long)geteuid()) {
		dsv_cli_error("%s: mounted by user %ld: only that user or root can unmount it", mp,
			      uid);
		return EXIT_USER;
	}
	pid_t pid = daemon_pid(mp); /* 0 when the daemon is dead */

	if (geteuid() == 0) {
		if (umount2(mp, lazy ? MNT_DETACH : 0) < 0) {
			if (errno == EBUSY) {
				dsv_cli_error("%s: busy: files on it are still open; close them, "
					      "or detach "
					      "lazily with 'dsview umount -z %s'",
					      mp, mp);
				return EXIT_USER;
			}
			/* a dead daemon (ENOTCONN) or anything else: detach lazily */
			if (umount2(mp, MNT_DETACH) < 0) {
				dsv_cli_error("%s: cannot unmount: %s", mp, strerror(errno));
				return EXIT_INTERNAL;
			}
		}
	} else if (run_fusermount(mp, lazy) < 0 && (lazy || pid || run_fusermount(mp, 1) < 0)) {
		/* fusermount3 printed why; a dead daemon (no pid) was retried lazily */
		dsv_cli_error("%s: cannot unmount: fusermount3 refused (above); if files on it "
			      "are still open, 'dsview umount -z %s' detaches it lazily",
			      mp, mp);
		return EXIT_USER;
	}
	/* Wait (up to 10 s) for the daemon to finish, so a new mount here works. */
	if (pid > 0 && !lazy) {
		for (int i = 0; i < 1000 && running(pid); i++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	return EXIT_OK;
}
