/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Diagnostic logging with levels and subsystems. The level is checked before
 * the arguments are evaluated (the macros expand to an if). Lines go to
 * stderr as "<RFC3339 time> <level> <subsystem>: <message>". Audit logging is
 * a separate concern and does not use this module.
 *
 * Threading: any thread may log; lines are written with one write(2) each.
 */
#ifndef KB_LOG_H
#define KB_LOG_H

#include <stdbool.h>

enum kb_log_level { KB_LOG_ERROR = 0, KB_LOG_WARN, KB_LOG_INFO, KB_LOG_DEBUG };

extern int kb_log_level;

/* Parses "error", "warn", "info", "debug"; returns 0 or -EINVAL. */
int kb_log_set_level(const char *name);

void kb_log_write(int level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define KB_LOG(lvl, subsys, ...)                                    \
	do {                                                        \
		if ((lvl) <= kb_log_level)                          \
			kb_log_write((lvl), (subsys), __VA_ARGS__); \
	} while (0)
#define kb_err(subsys, ...)   KB_LOG(KB_LOG_ERROR, subsys, __VA_ARGS__)
#define kb_warn(subsys, ...)  KB_LOG(KB_LOG_WARN, subsys, __VA_ARGS__)
#define kb_info(subsys, ...)  KB_LOG(KB_LOG_INFO, subsys, __VA_ARGS__)
#define kb_debug(subsys, ...) KB_LOG(KB_LOG_DEBUG, subsys, __VA_ARGS__)

/* Always-on invariant check: failure means corruption, so abort. */
#define KB_REQUIRE(cond)                                              \
	do {                                                          \
		if (!(cond))                                          \
			kb_require_failed(#cond, __FILE__, __LINE__); \
	} while (0)
void kb_require_failed(const char *expr, const char *file, int line) __attribute__((noreturn));

/* Recoverable check: logs and makes the caller return `ret`. */
#define KB_CHECK(cond, ret)                                                                    \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			kb_err("check", "%s:%d: check failed: %s", __FILE__, __LINE__, #cond); \
			return (ret);                                                          \
		}                                                                              \
	} while (0)

#endif
