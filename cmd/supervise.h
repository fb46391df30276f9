/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-tenant supervisor: a small process that runs the tenant's
 * `kubicle serve`, restarts it when it dies, and deletes the tenant when its
 * TTL is up.
 */
#ifndef KB_CMD_SUPERVISE_H
#define KB_CMD_SUPERVISE_H

#include "cmd/home.h"

/* Starts t's supervisor in the background (detached: its own session,
 * output to DIR/server.log) and returns without waiting for the server.
 * 0 or a negative errno. */
int supervise_spawn(const struct tenant *t);

/* `kubicle supervise NAME`: the supervisor's main (not for people). Exits
 * 0 when told to stop (SIGTERM/SIGINT), after a TTL deletion, or when
 * another supervisor already runs the tenant; 1 when the server cannot
 * start at all. */
int cmd_supervise(int argc, char **argv);

/*
 * Time to live. A TTL (`kubicle create --ttl`, tenant.json's expires minus
 * created) counts the time the tenant's supervisor has run, on the
 * monotonic clock, not the calendar: the supervisor adds it up in DIR/ttl-used
 * (seconds, saved every minute and when it stops). A clock step (a machine
 * that boots with its clock hours ahead, an NTP correction) can neither
 * expire a tenant nor keep one alive, and a stopped tenant, or a machine
 * that is off, does not age. Seconds left of t's TTL (<= 0: expired);
 * LONG_MAX when it has none.
 */
long supervise_ttl_left(const struct tenant *t);

/* Deletes the tenant (implemented in cmd/tenant.c): its host objects and
 * its folder. kill_processes: stop its supervisor and server first (false
 * from the supervisor itself, which has stopped its server). */
int tenant_destroy(const struct tenant *t, bool kill_processes, bool wait, unsigned timeout_s);

/* Before a TTL deletes a tenant (cmd/tenant.c): a snapshot of its store in
 * $KUBICLE_HOME/expired/NAME-<UTC time>.db (path in `file`), which
 * `kubicle restore NAME FILE` brings back; the newest EXPIRED_KEEP such
 * files are kept. 0, or a negative errno (then the tenant is not deleted:
 * a TTL never destroys a store it could not keep). */
#define EXPIRED_KEEP 10
int tenant_keep_expired(const struct tenant *t, char *file, size_t len);

#endif
