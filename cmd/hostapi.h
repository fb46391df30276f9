/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A blocking Kubernetes API client for the command line (kubicle create,
 * delete, stop, ...): lib/httpc driven by a private libuv loop until each
 * call is answered. Not for the server: it blocks.
 *
 * Threading: one thread per client.
 */
#ifndef KB_CMD_HOSTAPI_H
#define KB_CMD_HOSTAPI_H

#include <jansson.h>
#include <stdbool.h>

typedef struct hostapi hostapi_t;

/* Opens a client for the cluster of `kubeconfig` (its current context).
 * `timeout_ms` bounds each call (0: 10 s). 0 or a negative errno (-ENOENT:
 * no such file or context; -EINVAL: not a kubeconfig). */
int hostapi_open(const char *kubeconfig, unsigned timeout_ms, hostapi_t **out);
void hostapi_close(hostapi_t *h);

/*
 * One request. `body` (borrowed, may be NULL) is sent as JSON, or as a
 * merge patch for PATCH. On an HTTP answer returns 0 with *status set and
 * *resp (may be NULL when not wanted) a new reference to the decoded body
 * (NULL when it is not JSON). A transport failure returns a negative errno
 * (-ECONNREFUSED, -ETIMEDOUT, -EPROTO ...).
 */
int hostapi_call(hostapi_t *h, const char *method, const char *path, const json_t *body,
		 long *status, json_t **resp);

/* From now on, calls end with -ETIMEDOUT at in_ms from now (a call then
 * in flight is cancelled, one made later fails at once), whatever their
 * own timeout; 0 lifts the deadline. As a Go context's deadline bounds
 * every request made with it (the Lease's renewal, cmd/operator_lease.c). */
void hostapi_set_deadline(hostapi_t *h, unsigned in_ms);

/* The `message` of a Status body, or a short text for `status` (borrowed
 * from resp, or static). */
const char *hostapi_message(const json_t *resp, long status);

#endif
