/*
 * The descriptor cache: every source that reads a file with pread holds its
 * descriptor through here, one budget for the process (every view, every
 * mount of it), so a view of more files than the descriptor limit allows
 * is served. Open descriptors are kept in one list, most recently read
 * first; past the budget the least recently read one that no read is
 * using is closed. A source whose descriptor was closed opens its file
 * again at its next read and checks it is the file it first opened
 * (device, inode, size, mtime): a file replaced or changed meanwhile
 * fails the read with DSV_ERR_IO and one log line, as its bytes no longer
 * match what the open learnt about them.
 *
 * One mutex guards the list, every source's fd and pins, and the counts;
 * files are opened outside it. A fork waits for it (pthread_atfork), so
 * a child (the HDF5 probe's, which opens files through here) never
 * starts with it held by a thread it does not have.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/log.h"
#include "source/source_i.h"

/* Descriptors kept out of the budget for everything else a process holds
 * (FUSE, the log, sockets, the HDF5 library's files, Zarr chunk files
 * being read): a quarter of the limit. */
#define BUDGET_SHARE_NUM 3
#define BUDGET_SHARE_DEN 4
#define BUDGET_MIN 4

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dsv_source *head, *tail; /* most recently read first */
static size_t nopen, budget;
static uint64_t reopens, replaced, firsts;

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void lock_it(void)
{
	pthread_mutex_lock(&lock);
}

static void unlock_it(void)
{
	pthread_mutex_unlock(&lock);
}

static void register_atfork(void)
{
	(void)pthread_atfork(lock_it, unlock_it, unlock_it);
}

void dsv_source_fds_atfork(void)
{
	pthread_once(&atfork_once, register_atfork);
}

/* The budget, from the knob or the soft limit, once (under lock). */
static size_t get_budget(void)
{
	if (!budget) {
		struct rlimit rl;
		int64_t k = dsv_knob_int(DSV_KNOB_OPEN_FILES);
		uint64_t soft = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
					? (uint64_t)rl.rlim_cur
					: 1u << 20;
		budget = k > 0 ? (size_t)k : (size_t)(soft / BUDGET_SHARE_DEN * BUDGET_SHARE_NUM);
		if (budget < BUDGET_MIN)
			budget = BUDGET_MIN;
	}
	return budget;
}

static void unlink_lru(dsv_source *s)
{
	if (s->fd_prev)
		s->fd_prev->fd_next = s->fd_next;
	else
		head = s->fd_next;
	if (s->fd_next)
		s->fd_next->fd_prev = s->fd_prev;
	else
		tail = s->fd_prev;
	s->fd_prev = s->fd_next = NULL;
}

static void push_front(dsv_source *s)
{
	s->fd_next = head;
	s->fd_prev = NULL;
	if (head)
		head->fd_prev = s;
	head = s;
	if (!tail)
		tail = s;
}

/* Closes the least recently read descriptors no read is using until at
 * most keep are open. @return how many it closed. */
static size_t shed(size_t keep)
{
	size_t closed = 0;
	for (dsv_source *s = tail; s && nopen > keep;) {
		dsv_source *prev = s->fd_prev;
		if (!s->fd_pins) {
			unlink_lru(s);
			close(s->fd);
			s->fd = -1;
			nopen--;
			closed++;
		}
		s = prev;
	}
	return closed;
}

/* Puts s's new descriptor fd in the list (under lock), over the budget
 * closing others. */
static void add_open(dsv_source *s, int fd)
{
	s->fd = fd;
	nopen++;
	push_front(s);
	if (nopen > get_budget())
		shed(get_budget());
}

/* open(2) of path, read-only; at the process's limit (EMFILE), once more
 * after closing a quarter of the budget's idle descriptors. */
static int open_shedding(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == EMFILE) {
		pthread_mutex_lock(&lock);
		size_t closed = shed(nopen - nopen / 4);
		pthread_mutex_unlock(&lock);
		if (closed)
			fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			errno = EMFILE;
	}
	return fd;
}

int dsv_source_open_path(const char *path)
{
	pthread_once(&atfork_once, register_atfork);
	return open_shedding(path);
}

const char *dsv_source_open_hint(int e)
{
	return e == EMFILE || e == ENFILE ? " (the limit of open files: raise it with ulimit -n)"
					  : "";
}

int dsv_source_fd_first(dsv_source *s, dsv_errbuf *eb)
{
	struct stat st;
	int fd;

	pthread_once(&atfork_once, register_atfork);
	dsv_source_fd_close(s); /* a source opened again (HDF5's retry) */
	if ((fd = open_shedding(s->path)) < 0) {
		int e = errno;
		return dsv_errf_at(eb, e == ENOENT ? DSV_ERR_NOTFOUND : DSV_ERR_IO, s->path, NULL,
				   "%s%s", strerror(e), dsv_source_open_hint(e));
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return dsv_errf_at(eb, DSV_ERR_IO, s->path, NULL, "%s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return dsv_errf_at(eb, DSV_ERR_INVALID, s->path, NULL, "not a regular file");
	}
	s->file_size = (uint64_t)st.st_size;
	s->info.mtime = st.st_mtim;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->fd_file = 1;
	pthread_mutex_lock(&lock);
	firsts++;
	add_open(s, fd);
	pthread_mutex_unlock(&lock);
	return 0;
}

int dsv_source_open_beside(const dsv_source *s, const char *name, dsv_source **out, dsv_errbuf *eb)
{
	const char *slash = strrchr(s->path, '/');
	int dir = slash ? (int)(slash - s->path + 1) : 0, len = snprintf(NULL, 0, "%s", name);
	char *path = malloc((size_t)dir + (size_t)len + 1);
	dsv_source *d = NULL;
	int err;

	*out = NULL;
	if (path)
		snprintf(path, (size_t)dir + (size_t)len + 1, "%.*s%s", dir, s->path, name);
	if (!path || !(d = dsv_source_alloc(path, NULL))) {
		free(path);
		return dsv_errf_at(eb, DSV_ERR_NOMEM, s->path, NULL, "out of memory");
	}
	free(path);
	if ((err = dsv_source_fd_first(d, eb))) {
		dsv_source_close(d);
		return err;
	}
	*out = d;
	return 0;
}

/* The file s names opened again, or -1 (logged) when it cannot be or is
 * no longer the file s first opened. */
static int reopen(const dsv_source *s)
{
	struct stat st;
	int fd = open_shedding(s->path), e = errno;
	const char *why = NULL;

	if (fd < 0)
		why = strerror(e);
	else if (fstat(fd, &st) < 0)
		why = strerror(errno);
	else if (st.st_dev != s->dev || st.st_ino != s->ino)
		why = "replaced by another file since it was opened";
	else if ((uint64_t)st.st_size != s->file_size ||
		 st.st_mtim.tv_sec != s->info.mtime.tv_sec ||
		 st.st_mtim.tv_nsec != s->info.mtime.tv_nsec)
		why = "changed (size or modification time) since it was opened";
	if (!why)
		return fd;
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&lock);
	replaced++;
	pthread_mutex_unlock(&lock);
	dsv_log_limited((unsigned long long)(uintptr_t)s, DSV_LOG_ERROR,
			"%s: cannot open it again to read: %s%s; its reads fail (EIO)", s->shown,
			why, fd < 0 ? dsv_source_open_hint(e) : "");
	errno = fd < 0 ? e : ESTALE; /* for a caller that says why itself */
	return -1;
}

int dsv_source_fd_get(const dsv_source *cs)
{
	dsv_source *s = (dsv_source *)cs; /* the cache's fields, under lock */
	int fd;

	pthread_mutex_lock(&lock);
	if (s->fd >= 0) {
		s->fd_pins++;
		if (head != s) {
			unlink_lru(s);
			push_front(s);
		}
		fd = s->fd;
		pthread_mutex_unlock(&lock);
		return fd;
	}
	pthread_mutex_unlock(&lock);
	if (!s->fd_file || (fd = reopen(s)) < 0)
		return -1;
	pthread_mutex_lock(&lock);
	reopens++;
	s->fd_pins++;   /* before add_open, whose shedding must pass it over */
	if (s->fd >= 0) /* another reader opened it meanwhile */
		close(fd);
	else
		add_open(s, fd);
	fd = s->fd;
	pthread_mutex_unlock(&lock);
	return fd;
}

void dsv_source_fd_put(const dsv_source *cs)
{
	dsv_source *s = (dsv_source *)cs;
	pthread_mutex_lock(&lock);
	s->fd_pins--;
	if (nopen > get_budget())
		shed(get_budget());
	pthread_mutex_unlock(&lock);
}

void dsv_source_fd_close(dsv_source *s)
{
	pthread_mutex_lock(&lock);
	if (s->fd >= 0) {
		unlink_lru(s);
		close(s->fd);
		s->fd = -1;
		nopen--;
	}
	pthread_mutex_unlock(&lock);
}

long dsv_source_raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return -1;
	}
	pthread_mutex_lock(&lock);
	budget = 0; /* sized again from the new limit */
	pthread_mutex_unlock(&lock);
	return rl.rlim_cur == RLIM_INFINITY ? -1 : (long)rl.rlim_cur;
}

void dsv_source_fd_counts(dsv_source_fd_stats *out)
{
	pthread_mutex_lock(&lock);
	out->open = nopen;
	out->budget = get_budget();
	out->reopens = reopens;
	out->replaced = replaced;
	out->firsts = firsts;
	pthread_mutex_unlock(&lock);
}
