/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serving process's certificates made sure of on a thread of their own
 * (see kb_pki_job_start in pki.h).
 *
 * DESIGN: one thread runs pki_ensure_keep_tell and then kb_pki_server_ctx,
 * while the starting thread opens its store and loads the tenant's built-in
 * objects: a start spends about as many instructions on each (OpenSSL's
 * first fetches, key generation and the files' fsyncs on one side; SQLite,
 * RBAC and the APIServices on the other), and a machine with two cores does
 * them side by side. The starting thread meets the job twice: for the CA's
 * text, which the store's "ca.crt" key and the namespaces' kube-root-ca.crt
 * ConfigMaps need before the proxy bootstraps them, and for the TLS context
 * just before it listens. Everything the job hands over is guarded by one
 * mutex; nothing it made is touched by the starting thread before the
 * condition that says it is there. The aggregation layer's front-proxy
 * folder (kb_pki_client_ca_start) is made on a thread of its own likewise,
 * joined before its files are read.
 */
#include "lib/pki.h"
#include "lib/pki_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "lib/log.h"

struct kb_pki_job {
	/* the request, borrowed from the caller until kb_pki_job_join */
	const char *dir, *user;
	const char *const *sans, *const *groups;
	size_t nsans, ngroups;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* guarded by lock */
	char *ca_pem;   /* the CA's text, once told; never replaced */
	char *ca_later; /* a second telling that differs from it */
	bool pki_done;  /* pki_rc and pki are final */
	bool done;      /* tls_rc and tls too */
	int pki_rc, tls_rc;
	kb_pki_t *pki;
	SSL_CTX *tls;
};

static void ca_known(void *arg, const char *pem, size_t len)
{
	struct kb_pki_job *j = arg;
	char *copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, pem, len);
		copy[len] = '\0';
	}
	pthread_mutex_lock(&j->lock);
	if (!j->ca_pem) {
		j->ca_pem = copy;
	} else if (copy && strcmp(j->ca_pem, copy) != 0) {
		free(j->ca_later);
		j->ca_later = copy;
	} else {
		free(copy);
	}
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

static void *job_main(void *arg)
{
	struct kb_pki_job *j = arg;
	kb_pki_t *pki = NULL;
	SSL_CTX *tls = NULL;
	int rc = pki_ensure_keep_tell(j->dir, j->sans, j->nsans, j->user, j->groups, j->ngroups,
				      ca_known, j, &pki);
	pthread_mutex_lock(&j->lock);
	j->pki_rc = rc;
	j->pki_done = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	int trc = rc == 0 ? kb_pki_server_ctx(pki, &tls) : rc;
	pthread_mutex_lock(&j->lock);
	j->pki = pki;
	j->tls = tls;
	j->tls_rc = trc;
	j->done = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

int kb_pki_job_start(const char *dir, const char *const *sans, size_t nsans, const char *admin_user,
		     const char *const *admin_groups, size_t ngroups, kb_pki_job_t **out)
{
	KB_CHECK(dir && admin_user && (ngroups == 0 || admin_groups) && out, -EINVAL);
	KB_CHECK(nsans == 0 || sans, -EINVAL);
	struct kb_pki_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct kb_pki_job){.dir = dir,
				 .user = admin_user,
				 .sans = sans,
				 .groups = admin_groups,
				 .nsans = nsans,
				 .ngroups = ngroups};
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	int rc = pthread_create(&j->thread, NULL, job_main, j);
	if (rc != 0) {
		pthread_cond_destroy(&j->cond);
		pthread_mutex_destroy(&j->lock);
		free(j);
		return -rc;
	}
	*out = j;
	return 0;
}

int kb_pki_job_ca(kb_pki_job_t *j, const char **pem)
{
	pthread_mutex_lock(&j->lock);
	while (!j->ca_pem && !j->pki_done)
		pthread_cond_wait(&j->cond, &j->lock);
	int rc = j->ca_pem ? 0 : j->pki_rc < 0 ? j->pki_rc : -EIO;
	*pem = j->ca_pem; /* never replaced: kept until kb_pki_job_join */
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int kb_pki_job_tls(kb_pki_job_t *j, SSL_CTX **tls)
{
	pthread_mutex_lock(&j->lock);
	while (!j->done)
		pthread_cond_wait(&j->cond, &j->lock);
	int rc = j->pki_rc < 0 ? j->pki_rc : j->tls_rc;
	*tls = NULL;
	if (rc == 0) {
		*tls = j->tls; /* the caller's from here */
		j->tls = NULL;
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int kb_pki_job_join(kb_pki_job_t *j, kb_pki_t **pki, bool *pki_failed, char **ca_later)
{
	pthread_join(j->thread, NULL);
	int rc = j->pki_rc < 0 ? j->pki_rc : j->tls_rc;
	*pki_failed = j->pki_rc < 0;
	*pki = j->pki;
	if (ca_later) {
		*ca_later = rc == 0 ? j->ca_later : NULL;
		if (rc == 0)
			j->ca_later = NULL;
	}
	if (rc < 0) {
		kb_pki_free(j->pki);
		*pki = NULL;
	}
	SSL_CTX_free(j->tls); /* not taken by kb_pki_job_tls */
	free(j->ca_pem);
	free(j->ca_later);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	free(j);
	return rc;
}

/* ---- the client CA's folder on a thread -------------------------------------------- */

struct kb_pki_client_ca_task {
	char *dir, *user;
	pthread_t thread;
	int rc; /* read after the join */
};

static void *client_ca_main(void *arg)
{
	struct kb_pki_client_ca_task *t = arg;
	t->rc = kb_pki_ensure_client_ca(t->dir, t->user);
	return NULL;
}

int kb_pki_client_ca_start(const char *dir, const char *user, kb_pki_client_ca_task_t **out)
{
	KB_CHECK(dir && user && out, -EINVAL);
	struct kb_pki_client_ca_task *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->dir = strdup(dir);
	t->user = strdup(user);
	int rc = t->dir && t->user ? pthread_create(&t->thread, NULL, client_ca_main, t) : ENOMEM;
	if (rc != 0) {
		free(t->dir);
		free(t->user);
		free(t);
		return -rc;
	}
	*out = t;
	return 0;
}

int kb_pki_client_ca_join(kb_pki_client_ca_task_t *t)
{
	pthread_join(t->thread, NULL);
	int rc = t->rc;
	free(t->dir);
	free(t->user);
	free(t);
	return rc;
}
