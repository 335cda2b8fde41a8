/* One line per message, one write(2) per line, so threads never interleave. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "dsview/dsview.h"

static int log_fd = 2;
static int log_syslog;

int dsv_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return DSV_ERR_IO;
	log_fd = fd;
	return 0;
}

void dsv_log_use_syslog(void)
{
	openlog("dsview", LOG_PID, LOG_DAEMON);
	log_syslog = 1;
}

void dsv_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info" };
	char line[2048];
	struct timeval tv;
	struct tm tm;
	if (level < DSV_LOG_ERROR || level > DSV_LOG_INFO)
		level = DSV_LOG_INFO;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02d %02d:%02d:%02d.%03d dsview[%d] %s: ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, (int)(tv.tv_usec / 1000), (int)getpid(), names[level]);
	va_list ap;
	if (log_syslog) {
		static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO };
		va_start(ap, fmt);
		vsyslog(prio[level], fmt, ap);
		va_end(ap);
		return;
	}
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(log_fd, line, (size_t)n);
	(void)w;
}
