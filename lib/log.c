/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnostic logging: see log.h. */
#include "lib/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int kb_log_level = KB_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int kb_log_set_level(const char *name)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			kb_log_level = i;
			return 0;
		}
	}
	return -EINVAL;
}

void kb_log_write(int level, const char *subsys, const char *fmt, ...)
{
	char line[2048];
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	int n = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += snprintf(line + n, sizeof(line) - (size_t)n,
		      ".%03dZ %s %s: ", (int)(tv.tv_usec / 1000), level_names[level], subsys);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

void kb_require_failed(const char *expr, const char *file, int line)
{
	kb_log_write(KB_LOG_ERROR, "require", "%s:%d: invariant violated: %s", file, line, expr);
	abort();
}
