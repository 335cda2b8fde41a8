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
 * table under probe_lock; probe_lock is taken before the HDF5 lock,
 * never after. When the child cannot be probed (fork fails) or its end
 * cannot be learnt (waitpid fails: a process that ignores SIGCHLD), the
 * file is opened unprobed and nothing is remembered. An object in object
 * storage (a URL) has no device and inode: it is probed at every open and
 * nothing is remembered.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/str.h"
#include "formats/h5/h5.h"
#include "net/net.h"

/* Files probed in this process, by (device, inode): open addressing
 * with linear probing, at most half full, doubled as it fills (a view
 * may name 10^5 files); an entry of another size or mtime is the file
 * changed, probed again. Under probe_lock. */
typedef struct h5_probed {
	dev_t dev;
	ino_t ino; /* 0: an empty slot */
	off_t size;
	struct timespec mtime;
	int sig; /* the signal that killed the child, or 0 */
} h5_probed;
static h5_probed *probed;
static size_t probed_cap, nprobed;
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

static h5_probed *probed_slot(h5_probed *t, size_t cap, dev_t dev, ino_t ino)
{
	size_t i = (size_t)((uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev) & (cap - 1);
	while (t[i].ino && (t[i].ino != ino || t[i].dev != dev))
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* The remembered probe of st's file as it is now, or NULL. */
static const h5_probed *probed_find(const struct stat *st)
{
	const h5_probed *p = probed ? probed_slot(probed, probed_cap, st->st_dev, st->st_ino)
				    : NULL;
	if (!p || !p->ino || p->size != st->st_size || p->mtime.tv_sec != st->st_mtim.tv_sec ||
	    p->mtime.tv_nsec != st->st_mtim.tv_nsec)
		return NULL;
	return p;
}

/* Remembers how st's file ended its probe (nothing when out of memory:
 * it is probed again at its next open). */
static void probed_add(const struct stat *st, int sig)
{
	if (!st->st_ino)
		return;
	if (2 * (nprobed + 1) > probed_cap) {
		size_t cap = probed_cap ? 2 * probed_cap : 64;
		h5_probed *t = calloc(cap, sizeof(*t));
		if (!t)
			return;
		for (size_t i = 0; i < probed_cap; i++)
			if (probed[i].ino)
				*probed_slot(t, cap, probed[i].dev, probed[i].ino) = probed[i];
		free(probed);
		probed = t;
		probed_cap = cap;
	}
	h5_probed *p = probed_slot(probed, probed_cap, st->st_dev, st->st_ino);
	nprobed += !p->ino;
	*p = (h5_probed){ st->st_dev, st->st_ino, st->st_size, st->st_mtim, sig };
}

/* The child's quiet death by a signal: no core file, and no sanitizer's
 * handler turning the death into an exit status. */
static void child_setup(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	struct rlimit no_core = { 0, 0 };

	setrlimit(RLIMIT_CORE, &no_core);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	in_probe = 1;
}

static void probe_child(const char *path, dsv_h5_probe_fn work)
{
	child_setup();
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
	const h5_probed *known = st ? probed_find(st) : NULL;
	if (known) {
		sig = known->sig;
		goto done;
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
		probed_add(st, sig);
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

/* A batch child: files todo[0 .. n) of paths probed one after the other,
 * each announced on fd before it is (k + 1, 4 bytes): the last number
 * read before a crash names the file that crashed. */
static void batch_child(char *const *paths, const size_t *todo, size_t n, int fd,
			dsv_h5_probe_fn work)
{
	child_setup();
	for (size_t k = 0; k < n; k++) {
		uint32_t started = (uint32_t)(k + 1);
		if (write(fd, &started, sizeof(started)) != sizeof(started))
			_exit(0);
		work(paths[todo[k]]);
	}
	_exit(0);
}

/* One batch child over todo[0 .. n) (under probe_lock): the files it
 * finished remembered as sound, the one it died on as damaged. @return
 * how many files it settled, 0 when it could not tell (the rest are then
 * probed one by one at their opens). */
static size_t probe_batch(char *const *paths, const size_t *todo, const struct stat *sts, size_t n,
			  dsv_h5_probe_fn work)
{
	uint32_t started = 0, got;
	int pfd[2], status = 0, sig = 0;
	pid_t pid, r;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return 0;
	(void)dsv_h5_lock(); /* as probe_stat: no other thread inside the library */
	pid = fork();
	if (pid == 0) {
		dsv_h5_unlock();
		close(pfd[0]);
		batch_child(paths, todo, n, pfd[1], work);
	}
	dsv_h5_unlock();
	close(pfd[1]);
	while (pid > 0 && read(pfd[0], &got, sizeof(got)) == sizeof(got))
		started = got;
	close(pfd[0]);
	if (pid < 0)
		return 0;
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r < 0 || started == 0 || started > n)
		return 0;
	if (WIFSIGNALED(status))
		sig = WTERMSIG(status);
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		sig = SIGABRT;
	for (size_t k = 0; k + (sig ? 1 : 0) < started; k++)
		probed_add(&sts[todo[k]], 0);
	if (sig)
		probed_add(&sts[todo[started - 1]], sig);
	return started;
}

void dsv_h5_probe_many(char *const *paths, size_t n, dsv_h5_probe_fn work)
{
	struct stat *sts = n > 1 && !in_probe ? malloc(n * sizeof(*sts)) : NULL;
	size_t *todo = sts ? malloc(n * sizeof(*todo)) : NULL, m = 0;

	if (!todo) {
		free(sts);
		return;
	}
	probe_lock_take();
	for (size_t i = 0; i < n; i++)
		if (!dsv_url_scheme_len(paths[i]) && stat(paths[i], &sts[i]) == 0 &&
		    S_ISREG(sts[i].st_mode) && !probed_find(&sts[i]))
			todo[m++] = i;
	for (size_t at = 0, done = 1; at < m && done; at += done)
		done = probe_batch(paths, todo + at, sts, m - at, work);
	probe_lock_give();
	free(todo);
	free(sts);
}
