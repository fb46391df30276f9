/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenants' home folder and what it records of each tenant.
 *
 *   $KUBICLE_HOME (default $HOME/.kubicle)
 *     tenants/NAME/          the tenant's `kubicle serve --data-dir`
 *       tenant.json          its settings and desired state (struct tenant)
 *       kubeconfig           admin kubeconfig, written by the server
 *       kubicle.db           its store (SQLite, WAL)
 *       host.kubeconfig      the syncer's host credentials (tokenFile:
 *       host-token           host-token, a host ServiceAccount's token)
 *       supervisor.pid/.lock the supervisor (cmd/supervise.c)
 *       server.pid           the server process
 *       server.log           both processes' logs
 *       failed               why the supervisor gave up, when it did
 *
 * Threading: blocking file I/O; command line only.
 */
#ifndef KB_CMD_HOME_H
#define KB_CMD_HOME_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define TENANT_NAME_MAX 40

#define TENANT_EGRESS_MAX 16

struct tenant {
	char name[TENANT_NAME_MAX + 1];
	char dir[2048];             /* absolute */
	char host_kubeconfig[2048]; /* the platform's kubeconfig (absolute), "" : no host */
	char host_namespace[64];
	char queue[64];
	char scheduler[16]; /* kai | kueue | volcano | hami | none */
	char policy[1024];  /* shipped name or absolute file, "" : none */
	char floor[16];     /* --floor: privileged | baseline | restricted, "" : baseline */
	char listen[128];   /* "127.0.0.1:0" until the first start chose a port */
	char advertise[128];
	/* --egress-allow prefixes, comma-separated ("" : none); at most
	 * TENANT_EGRESS_MAX of them */
	char egress_allow[1024];
	long gpus; /* the queue's GPU quota; -1: unlimited */
	time_t created;
	time_t expires;                  /* 0: no TTL */
	bool stopped;                    /* desired state */
	bool made_namespace, made_queue; /* created by kubicle: deleted with it */
	char host_limits[4096];          /* hostquota.h's settings, JSON; "": defaults */
};

/* $KUBICLE_HOME or $HOME/.kubicle, made absolute (not created). */
int home_dir(char *buf, size_t len);
/* The tenant's folder path. -EINVAL for a bad name. */
int home_tenant_dir(const char *name, char *buf, size_t len);
/* A tenant name is a DNS label of at most 40 characters without "-x-"
 * (it is part of host object names) and not ending in "token-" and 16 hex
 * digits (it would make a translated name that of a token Secret). NULL
 * when valid, else why not. */
const char *home_check_name(const char *name);

/* Reads DIR/tenant.json of `name`. -ENOENT when there is no such tenant. */
int home_load(const char *name, struct tenant *t);
/* Writes DIR/tenant.json atomically. */
int home_save(const struct tenant *t);
/* Names of every tenant, sorted; *out is a malloc'ed array of malloc'ed
 * strings (home_free_names). */
int home_list(char ***out, size_t *n);
void home_free_names(char **names, size_t n);

/* The process recorded in DIR/FILE when it is alive, else 0. For the
 * supervisor, alive means it holds DIR/supervisor.lock. */
int home_pid(const struct tenant *t, const char *file);
/* The process exists and is not a zombie (exited, not yet reaped: an init
 * that does not reap leaves those). */
bool home_pid_alive(int pid);
bool home_supervisor_alive(const struct tenant *t, int *pid);

/* Path of a file in the tenant's folder. */
void home_path(const struct tenant *t, const char *file, char *buf, size_t len);
/* Removes a folder and everything in it. */
int home_rmtree(const char *dir);
/* The port in DIR/kubeconfig's server address, or 0. */
int home_port(const struct tenant *t);

#endif
