/*
 * The mount command's daemon: where it logs when --log is not given, and
 * the fork, with the child's start-up result sent to the parent over a
 * pipe so that a failure before the loop serves (a --gpu that cannot be
 * had, the cache, ...) is printed by the mount command itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"
#include "source/source.h"
#include "dsview/fs.h"

/* The child's start-up result, over a pipe to the parent: one status
 * byte (0: serving, else the exit status), then for a failure its one-line
 * reason. Nothing at all (EOF) means the child died before it could say. */
static void tell_serving(void *arg)
{
	int *fd = arg;
	char ok = 0;
	if (*fd >= 0 && write(*fd, &ok, 1) != 1)
		dsv_log_warn("cannot tell the mount command that the mount serves: %s",
			     strerror(errno));
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int dsv_cli_startup_status(int err)
{
	return err == DSV_ERR_INTERNAL ? EXIT_INTERNAL : EXIT_USER;
}

/* Reads the child's start-up result from fd into status and msg (cap
 * bytes). @return 1 if the child said anything, 0 at EOF first. */
static int read_startup(int fd, int *status, char *msg, size_t cap)
{
	unsigned char st;
	ssize_t r;
	size_t n = 0;
	while ((r = read(fd, &st, 1)) < 0 && errno == EINTR)
		;
	if (r != 1)
		return 0;
	*status = st;
	while (st && n + 1 < cap &&
	       ((r = read(fd, msg + n, cap - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
		n += r > 0 ? (size_t)r : 0;
	msg[n] = '\0';
	return 1;
}

int dsv_cli_daemonise(dsv_fs *fs, const char *mountpoint, int use_syslog, const char *source,
		      const dsv_cli_left *left)
{
	dsv_errbuf eb;
	int pfd[2], err;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		dsv_cli_error("pipe: %s", strerror(errno));
		dsv_fs_destroy(fs);
		return EXIT_INTERNAL;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		dsv_cli_error("fork: %s", strerror(errno));
		dsv_fs_destroy(fs);
		return EXIT_INTERNAL;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR), wfd = pfd[1];
		close(pfd[0]);
		setsid();
		if (chdir("/") < 0)
			_exit(EXIT_INTERNAL);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		if (use_syslog)
			dsv_log_use_syslog();
		if (left->nskipped == left->ndatasets && left->nskipped)
			dsv_log_warn("%s: %zu of %zu datasets skipped: %s (see %s/.skipped.json)",
				     source, left->nskipped, left->nserved + left->nskipped,
				     left->kinds, mountpoint);
		else if (left->nskipped)
			dsv_log_warn("%s: %zu of %zu datasets served; left out: %s (see "
				     "%s/.skipped.json)",
				     source, left->nserved, left->nserved + left->ndatasets,
				     left->kinds, mountpoint);
		dsv_fs_on_serving(fs, tell_serving, &wfd);
		err = dsv_fs_serve(fs, &eb);
		if (err)
			dsv_log_error("%s", eb.msg);
		if (err && wfd >= 0) { /* a start-up failure: the parent prints it */
			char st = (char)dsv_cli_startup_status(err);
			if (write(wfd, &st, 1) != 1 || write(wfd, eb.msg, strlen(eb.msg)) < 0)
				dsv_log_warn("cannot tell the mount command why: %s",
					     strerror(errno));
		}
		dsv_fs_destroy(fs); /* unmounts */
		_exit(err ? (wfd >= 0 ? dsv_cli_startup_status(err) : EXIT_INTERNAL) : EXIT_OK);
	}

	/* Parent: drop our /dev/fuse descriptor (so a dying child aborts the
	 * connection), hear how the start went, then wait for an answer. */
	close(pfd[1]);
	dsv_fs_close_fd(fs);
	char msg[sizeof(eb.msg)];
	int status = EXIT_INTERNAL, wstatus;
	int said = read_startup(pfd[0], &status, msg, sizeof(msg));
	close(pfd[0]);
	if (!said || status) {
		struct statfs sfs;
		while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
			;
		/* the child unmounts on its way out; a crash leaves a dead mount */
		if (statfs(mountpoint, &sfs) < 0 && errno == ENOTCONN)
			umount2(mountpoint, MNT_DETACH);
		if (said)
			dsv_cli_error("%s", msg);
		else
			dsv_cli_error(
				"%s: the daemon exited before it could serve (%s; see the log)",
				mountpoint,
				WIFSIGNALED(wstatus) ? strsignal(WTERMSIG(wstatus))
						     : "no reason given");
		_exit(said ? status : EXIT_INTERNAL);
	}
	struct stat st;
	int rc;
	do
		rc = stat(mountpoint, &st);
	while (rc < 0 && errno == EINTR);
	int saved = errno;
	if (waitpid(pid, &wstatus, WNOHANG) == pid) {
		dsv_cli_error("%s: the daemon exited before the mount answered (see the log)",
			      mountpoint);
		umount2(mountpoint, MNT_DETACH);
		_exit(EXIT_INTERNAL);
	}
	if (rc < 0 || !S_ISDIR(st.st_mode)) {
		dsv_cli_error("%s: the mount did not answer: %s", mountpoint,
			      rc < 0 ? strerror(saved) : "not a directory");
		kill(pid, SIGTERM);
		umount2(mountpoint, MNT_DETACH);
		_exit(EXIT_INTERNAL);
	}
	_exit(EXIT_OK);
}

/* 1 if syslog has a listener: /dev/log is a socket. */
static int have_syslog(void)
{
	struct stat st;
	return stat("/dev/log", &st) == 0 && S_ISSOCK(st.st_mode);
}

int dsv_cli_default_log(const char *mountpoint, char *path, size_t cap)
{
	char dir[PATH_MAX], name[256];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	size_t n = 0;

	path[0] = '\0';
	if (have_syslog())
		return 0;
	if (geteuid() == 0 || !xdg || xdg[0] != '/')
		snprintf(dir, sizeof(dir), geteuid() == 0 ? "/run/dsview" : "/tmp/dsview-%d",
			 (int)geteuid());
	else
		snprintf(dir, sizeof(dir), "%s/dsview", xdg);
	/* the mountpoint as one file name: /mnt/dsview -> mnt-dsview */
	for (const char *p = mountpoint; *p && n + 1 < sizeof(name) - 8; p++) {
		int keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-';
		if (*p != '/')
			name[n++] = keep ? *p : '_';
		else if (n && name[n - 1] != '-')
			name[n++] = '-';
	}
	while (n && name[n - 1] == '-')
		n--;
	name[n] = '\0';
	if ((mkdir(dir, 0755) < 0 && errno != EEXIST) ||
	    snprintf(path, cap, "%s/%s.log", dir, n ? name : "root") >= (int)cap) {
		dsv_cli_error(
			"%s: cannot make the log directory (%s); name a log file with --log FILE",
			dir, strerror(errno));
		return -1;
	}
	if (dsv_log_open(path)) {
		int e = errno;
		if (e == EMFILE || e == ENFILE) /* another file would fail the same way */
			dsv_cli_error("%s: cannot open log file: %s%s", path, strerror(e),
				      dsv_source_open_hint(e));
		else
			dsv_cli_error("%s: cannot open log file: %s; name one with --log FILE",
				      path, strerror(e));
		return -1;
	}
	return 0;
}
