/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `kubicle token` and `kubicle kubeconfig` subcommands (cmd/users.c):
 * credentials for a tenant's users, made offline from DIR.
 * Threading: blocking; CLI only.
 */
#ifndef KB_CMD_USERS_H
#define KB_CMD_USERS_H

#include <stddef.h>

/* argv[0] is the subcommand name; return the process exit code. */
int cmd_token(int argc, char **argv);
int cmd_kubeconfig(int argc, char **argv);
/* Seconds of a Go-style duration ("90s", "1h30m", "7d"); -1 if malformed
 * or past 10^8 of its unit. */
long users_parse_duration(const char *s);
/* s seconds (negative: 0) in one unit, as `kubicle list` shows an age or
 * what is left of a TTL: "90s", "45m", "5h", "3d" (NUL-terminated in buf). */
void users_format_duration(long s, char *buf, size_t len);

#endif
