/*
 * Logging for the daemon and the CLI. Messages go to stderr, or to the file
 * set with dsv_log_open (the daemon's --log), one line each, prefixed with a
 * timestamp and level. Thread-safe: each line is written with one write(2).
 */
#ifndef DSV_COMMON_LOG_H
#define DSV_COMMON_LOG_H

/* Every message is written: there is no debug level (FUSE request tracing
 * is libfuse's own, `dsview mount --debug`). */
enum { DSV_LOG_ERROR, DSV_LOG_WARN, DSV_LOG_INFO };

/* Redirects the log to path (appending). @return 0 or DSV_ERR_IO. */
int dsv_log_open(const char *path);
/* Sends the log to syslog (a daemon started without --log). */
void dsv_log_use_syslog(void);
void dsv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define dsv_log_error(...) dsv_log(DSV_LOG_ERROR, __VA_ARGS__)
#define dsv_log_warn(...) dsv_log(DSV_LOG_WARN, __VA_ARGS__)
#define dsv_log_info(...) dsv_log(DSV_LOG_INFO, __VA_ARGS__)

#endif
