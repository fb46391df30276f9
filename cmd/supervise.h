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

/* Deletes the tenant (implemented in cmd/tenant.c): its host objects and
 * its folder. kill_processes: stop its supervisor and server first (false
 * from the supervisor itself, which has stopped its server). */
int tenant_destroy(const struct tenant *t, bool kill_processes, bool wait, unsigned timeout_s);

#endif
