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
#include "common/str.h"
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
	char msg[1024], shown[4 * sizeof(msg) + 4], line[sizeof(shown) + 96];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	if (level < DSV_LOG_ERROR || level > DSV_LOG_INFO)
		level = DSV_LOG_INFO;
	/* Names in messages come from files: control characters and other
	 * bytes outside printable ASCII are written \xNN, so no name can
	 * start a line of its own or reach a terminal as an escape. */
	va_start(ap, fmt);
	int m = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
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
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02d %02d:%02d:%02d.%03d dsview[%d] %s: %s\n",
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
