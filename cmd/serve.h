/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kubicle serve`: one tenant's API server (store, TLS, API, cluster DNS,
 * syncer, controllers) on the default loop until SIGTERM or SIGINT.
 *
 * serve_run() is the same path for another program built on it (the tests'
 * host stand-in, tests/host/standin_main.c): its hooks run once the API
 * listens and again at shutdown, so it adds behaviour through the proxy's
 * public hooks (proxy/proxy.h) and never through code in the product.
 *
 * Threading: the calling thread runs the loop; the hooks are called on it.
 */
#ifndef KB_CMD_SERVE_H
#define KB_CMD_SERVE_H

#include <uv.h>

#include "proxy/proxy.h"
#include "store/store.h"

/* What a caller's hooks get: all borrowed, valid from `start` until `stop`
 * has returned. */
struct serve_env {
	uv_loop_t *loop;
	store_t *store;
	proxy_t *proxy;
	const char *data_dir;
	const char *host_namespace; /* --host-namespace (the syncer's hooks follow), or NULL */
};

/* A caller's additions to the serve path (all fields may be NULL). */
struct serve_hooks {
	const char *usage; /* printed by --help and after a bad flag; NULL: serve_usage */
	/* Once the API listens (before the kubeconfig is written, the syncer
	 * and the controllers start). 0, or a negative errno: serving fails and
	 * `stop` is not called. */
	int (*start)(void *arg, const struct serve_env *env);
	/* At shutdown, before the proxy stops (unset the hooks set in start). */
	void (*stop)(void *arg);
	void *arg; /* borrowed, outlives serve_run */
};

/* The flags of `kubicle serve` for a usage text ("  kubicle serve ...\n"
 * lines, each indented by two spaces). */
extern const char serve_usage[];

/* Parses the serve flags (argv[0] is the command's name), serves until a
 * signal, and returns the process's exit code: 0 after a clean stop, 1 when
 * serving could not start, 2 for bad flags. hooks may be NULL. */
int serve_run(int argc, char **argv, const struct serve_hooks *hooks);

/* `kubicle serve`: serve_run without hooks. The supervisor (cmd/supervise.c)
 * runs it in a forked child. */
int cmd_serve(int argc, char **argv);

#endif
