/*
 * The fork probe. HDF5 1.10 trusts some sizes it reads (an allocation it
 * does not check, then a copy into it: `make fuzz` found H5Lvisit writing
 * through NULL). So before dsview's process reads a file with the library,
 * a child process does the same work (the caller's dsv_h5_probe_fn: list
 * the datasets, open and describe each), and a crash there becomes
 * "damaged file" instead of a dead daemon or CLI.
 *
 * The child is forked with the global HDF5 lock held, so no other thread
 * is inside the library; the child's only thread takes the lock over. It
 * leaves with _exit(), so nothing the parent owns is flushed or closed
 * twice. Results are remembered per (device, inode, size, mtime) in a
 * small ring under probe_lock; probe_lock is taken before the HDF5 lock,
 * never after. When the child cannot be probed (fork fails) or its end
 * cannot be learnt (waitpid fails: a process that ignores SIGCHLD), the
 * file is opened unprobed and nothing is remembered. An object in object
 * storage (a URL) has no device and inode: it is probed at every open and
 * nothing is remembered.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/str.h"
#include "formats/h5/h5.h"
#include "net/net.h"

/* Files probed in this process (a small ring: a manifest names few files). */
#define H5_PROBED_MAX 64
typedef struct h5_probed {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int sig; /* the signal that killed the child, or 0 */
} h5_probed;
static h5_probed probed[H5_PROBED_MAX];
static unsigned nprobed;
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static int in_probe; /* set in the child: no nested probes */
/* Set while this thread holds probe_lock; fork_took: probe_lock was
 * taken for a fork (dsv_h5_probe_fork). */
static __thread int probe_held, fork_took;

static void probe_lock_take(void)
{
	pthread_mutex_lock(&probe_lock);
	probe_held = 1;
}

static void probe_lock_give(void)
{
	probe_held = 0;
	pthread_mutex_unlock(&probe_lock);
}

void dsv_h5_probe_fork(int before)
{
	if (before && !probe_held) {
		probe_lock_take();
		fork_took = 1;
	} else if (!before && fork_took) {
		fork_took = 0;
		probe_lock_give();
	}
}

static void probe_child(const char *path, dsv_h5_probe_fn work)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	struct rlimit no_core = { 0, 0 };

	/* Die of the signal itself, quietly: no core file, and no
	 * sanitizer's handler turning the death into an exit status. */
	setrlimit(RLIMIT_CORE, &no_core);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	in_probe = 1;
	dsv_net_after_fork(); /* an object's GETs on connections of its own */
	work(path);
	_exit(0); /* no atexit handlers, no stdio buffers flushed twice */
}

/* dsv_h5_probe of path, whose stat is st (NULL: an object, whose result
 * is not remembered). */
static int probe_stat(const char *path, const struct stat *st, dsv_h5_probe_fn work, dsv_errbuf *eb)
{
	int status = 0, sig = 0;
	pid_t pid, r;

	if (in_probe)
		return 0;
	probe_lock_take();
	for (unsigned i = 0; st && i < nprobed && i < H5_PROBED_MAX; i++) {
		h5_probed *p = &probed[i];
		if (p->dev == st->st_dev && p->ino == st->st_ino && p->size == st->st_size &&
		    p->mtime.tv_sec == st->st_mtim.tv_sec &&
		    p->mtime.tv_nsec == st->st_mtim.tv_nsec) {
			sig = p->sig;
			goto done;
		}
	}
	/* Fork with the HDF5 lock held, so no other thread is inside the
	 * library; the child's only thread takes the lock over. */
	(void)dsv_h5_lock();
	pid = fork();
	if (pid == 0) {
		dsv_h5_unlock();
		probe_child(path, work);
	}
	dsv_h5_unlock();
	if (pid < 0) {
		probe_lock_give();
		return 0; /* cannot probe: go on unprotected, as before */
	}
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		/* ECHILD: this process ignores SIGCHLD, so the child was
		 * reaped for us and how it ended is unknowable. That is no
		 * verdict on the file: go on unprobed, as when fork fails,
		 * and remember nothing, so a later probe can still tell. */
		int e = errno;
		probe_lock_give();
		dsv_log_warn("%s: cannot wait for the HDF5 probe (%s); opening it unprobed", path,
			     strerror(e));
		return 0;
	}
	if (WIFSIGNALED(status))
		sig = WTERMSIG(status);
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		sig = SIGABRT; /* a sanitizer's report exits instead */
	if (st)
		probed[nprobed++ % H5_PROBED_MAX] = (h5_probed){ st->st_dev, st->st_ino,
								 st->st_size, st->st_mtim, sig };
done:
	probe_lock_give();
	if (sig)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, NULL,
				   "damaged HDF5 file: the HDF5 library crashed reading it (%s)",
				   strsignal(sig));
	return 0;
}

int dsv_h5_probe(const char *path, dsv_h5_probe_fn work, dsv_errbuf *eb)
{
	struct stat st;
	if (dsv_url_scheme_len(path))
		return probe_stat(path, NULL, work, eb);
	/* a missing file: the caller reports it itself */
	return stat(path, &st) < 0 ? 0 : probe_stat(path, &st, work, eb);
}

int dsv_h5_check_input(const char *path, dsv_h5_probe_fn work, dsv_errbuf *eb)
{
	struct stat st;

	if (dsv_url_scheme_len(path)) {
		dsv_net_obj *o;
		int err = dsv_net_open(path, &o, eb); /* it is there: a HEAD */
		dsv_net_close(o);
		return err ? err : probe_stat(path, NULL, work, eb);
	}
	if (stat(path, &st) < 0) {
		int e = errno;
		return dsv_errf_at(eb, e == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, path, NULL,
				   "%s", strerror(e));
	}
	if (!S_ISREG(st.st_mode))
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "not a regular file");
	return probe_stat(path, &st, work, eb);
}
