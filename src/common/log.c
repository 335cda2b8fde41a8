/* One line per message, one write(2) per line, so threads never interleave. */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/str.h"
#include "dsview/dsview.h"

static int log_fd = 2;
static int log_syslog;
static int log_level = DSV_LOG_INFO;
static char log_path[4096];

int dsv_log_parse_level(const char *s)
{
	if (!strcmp(s, "error"))
		return DSV_LOG_ERROR;
	if (!strcmp(s, "warning") || !strcmp(s, "warn"))
		return DSV_LOG_WARN;
	if (!strcmp(s, "info"))
		return DSV_LOG_INFO;
	return -1;
}

void dsv_log_set_level(int level)
{
	log_level = level;
}

int dsv_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return DSV_ERR_IO;
	log_fd = fd;
	snprintf(log_path, sizeof(log_path), "%s", path);
	return 0;
}

const char *dsv_log_target(void)
{
	return log_syslog ? "syslog" : log_path[0] ? log_path : "stderr";
}

void dsv_log_use_syslog(void)
{
	openlog("dsview", LOG_PID, LOG_DAEMON);
	log_syslog = 1;
}

static void vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

void dsv_log(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

/* The table of dsv_log_limited: per slot, the key, when its minute began,
 * how many messages it dropped since, and the last one written (its level
 * and text, for the count that dsv_log_limited_flush writes). */
#define LIMIT_SLOTS 1024
#define LIMIT_SECONDS 60
static struct {
	unsigned long long key;
	time_t since;
	unsigned long dropped;
	int level;
	char msg[256];
} limits[LIMIT_SLOTS];
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writes slot's count of dropped messages, if any, and clears it; with
 * limit_lock held. */
static void flush_slot(size_t slot, time_t now)
{
	if (!limits[slot].dropped)
		return;
	dsv_log(limits[slot].level, "%s (%lu more like it in the last %lld s)", limits[slot].msg,
		limits[slot].dropped, (long long)(now - limits[slot].since));
	limits[slot].dropped = 0;
}

void dsv_log_limited(unsigned long long key, int level, const char *fmt, ...)
{
	struct timespec now;
	char msg[1024];
	size_t slot = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 54) % LIMIT_SLOTS;
	va_list ap;
	if (level > log_level)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&limit_lock);
	if (limits[slot].key == key && limits[slot].since &&
	    now.tv_sec - limits[slot].since < LIMIT_SECONDS) {
		limits[slot].dropped++;
		pthread_mutex_unlock(&limit_lock);
		return;
	}
	flush_slot(slot, now.tv_sec); /* its minute is over, or another key takes the slot */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	limits[slot].key = key;
	limits[slot].since = now.tv_sec ? now.tv_sec : 1;
	limits[slot].level = level;
	size_t n = strnlen(msg, sizeof(limits[slot].msg) - 1);
	memcpy(limits[slot].msg, msg, n);
	limits[slot].msg[n] = '\0';
	dsv_log(level, "%s", msg);
	pthread_mutex_unlock(&limit_lock);
}

void dsv_log_limited_flush(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&limit_lock);
	for (size_t i = 0; i < LIMIT_SLOTS; i++)
		flush_slot(i, now.tv_sec);
	pthread_mutex_unlock(&limit_lock);
}

static void vlog(int level, const char *fmt, va_list ap)
{
	static const char *const names[] = { "error", "warning", "info" };
	char msg[1024], shown[4 * sizeof(msg) + 4], line[sizeof(shown) + 96];
	struct timeval tv;
	struct tm tm;
	if (level < DSV_LOG_ERROR || level > DSV_LOG_INFO)
		level = DSV_LOG_INFO;
	if (level > log_level)
		return;
	/* Names in messages come from files: control characters and other
	 * bytes outside printable ASCII are written \xNN, so no name can
	 * start a line of its own or reach a terminal as an escape. */
	int m = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (m < 0)
		return;
	dsv_shown(msg, strlen(msg), sizeof(msg), shown);
	if (log_syslog) {
		static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO };
		syslog(prio[level], "%s", shown);
		return;
	}
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	int n = snprintf(line, sizeof(line),
			 "%04d-%02d-%02d %02d:%02d:%02d.%03d dsview[%d] %s: %s\n",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, (int)(tv.tv_usec / 1000), (int)getpid(), names[level], shown);
	if (n < 0)
		return;
	if (n >= (int)sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	ssize_t w = write(log_fd, line, (size_t)n);
	(void)w;
}
