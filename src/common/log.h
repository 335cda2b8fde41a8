/*
 * Logging for the daemon and the CLI. Messages go to stderr, or to the file
 * set with dsv_log_open (the daemon's --log, or its default file), or to
 * syslog, one line each, prefixed with a timestamp and level. Thread-safe:
 * each line is written with one write(2).
 */
#ifndef DSV_COMMON_LOG_H
#define DSV_COMMON_LOG_H

/* There is no debug level (FUSE request tracing is libfuse's own,
 * `dsview mount --debug`); dsv_log_set_level drops the levels below one. */
enum { DSV_LOG_ERROR, DSV_LOG_WARN, DSV_LOG_INFO };

/* "error", "warning" (or "warn"), "info" -> DSV_LOG_*, or -1. */
int dsv_log_parse_level(const char *s);
/* Messages less severe than level are dropped (default DSV_LOG_INFO). */
void dsv_log_set_level(int level);

/* Redirects the log to path (appending). @return 0 or DSV_ERR_IO. */
int dsv_log_open(const char *path);
/* Sends the log to syslog (a daemon started without --log). */
void dsv_log_use_syslog(void);
/* Where the log goes: the file's path, "syslog" or "stderr". */
const char *dsv_log_target(void);
void dsv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* dsv_log at most once a minute per key (e.g. one bad chunk that the
 * kernel's retries hit again and again): the first message of a minute is
 * written, the rest only counted; the count is written, after the message
 * again, with "(12 more like it in the last 60 s)", when the key comes
 * back after its minute, when another key takes its slot (keys share a
 * fixed table: two in one slot may each be written more often, never
 * less), or at dsv_log_limited_flush (the daemon's end). */
void dsv_log_limited(unsigned long long key, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Writes every count dsv_log_limited still holds. */
void dsv_log_limited_flush(void);

#define dsv_log_error(...) dsv_log(DSV_LOG_ERROR, __VA_ARGS__)
#define dsv_log_warn(...) dsv_log(DSV_LOG_WARN, __VA_ARGS__)
#define dsv_log_info(...) dsv_log(DSV_LOG_INFO, __VA_ARGS__)

#endif
