/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A request's life outside its routing: the made-up requests of the
 * tenant's controllers, the upper layers' state hung on a request
 * (struct req_ext), freeing a request once answered, and what every layer
 * asks of one (its selectors, whether it names a streaming pod
 * subresource).
 *
 * Threading: loop thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/selector.h"
#include "proxy/core/core.h"

void req_ext_add(struct req *r, struct req_ext *e)
{
	e->next = r->exts;
	r->exts = e;
}

struct req_ext *req_ext_find(const struct req *r, void (*free_fn)(struct req_ext *e))
{
	for (struct req_ext *e = r->exts; e; e = e->next)
		if (e->free == free_fn)
			return e;
	return NULL;
}

void req_ext_remove(struct req *r, struct req_ext *e)
{
	for (struct req_ext **p = &r->exts; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			e->free(e);
			return;
		}
}

void req_forget_user(struct req *r)
{
	r->user[0] = '\0';
	for (int i = 0; i < r->ngroups; i++)
		free(r->groups[i]);
	r->ngroups = 0;
	json_decref(r->extra);
	r->extra = NULL;
}

json_t *req_user_info(const struct req *r)
{
	json_t *groups = json_array();
	if (!r->user[0]) {
		json_array_append_new(groups, json_string("system:unauthenticated"));
		return json_pack("{s:s,s:o}", "username", "system:anonymous", "groups", groups);
	}
	for (int i = 0; i < r->ngroups; i++)
		json_array_append_new(groups, json_string(r->groups[i]));
	json_t *u = json_pack("{s:s,s:o}", "username", r->user, "groups", groups);
	if (r->uid)
		json_object_set_new(u, "uid", json_string(r->uid));
	if (json_object_size(r->extra))
		json_object_set(u, "extra", r->extra);
	return u;
}

struct req *req_controller(struct proxy *px, const struct proxy_resource *res, const char *manager)
{
	struct req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->px = px;
	r->res = res;
	r->now = time(NULL);
	/* kube-apiserver's own writes through its loopback client (the
	 * eviction's budget update) are system:apiserver's, in system:masters
	 * (apiserver pkg/server/config.go AuthorizeClientBearerToken) */
	bool self = manager && strcmp(manager, "kube-apiserver") == 0;
	/* kube's controllers call the API as service accounts of kube-system */
	if (self)
		snprintf(r->user, sizeof(r->user), "system:apiserver");
	else
		snprintf(r->user, sizeof(r->user), "system:serviceaccount:kube-system:%s",
			 manager ? manager : "kubicle-controller");
	const char *groups[] = {"system:serviceaccounts", "system:serviceaccounts:kube-system",
				"system:authenticated"};
	const char *own[] = {"system:authenticated", "system:masters"};
	for (size_t i = 0; i < (self ? KB_ARRAY_SIZE(own) : KB_ARRAY_SIZE(groups)); i++)
		if ((r->groups[r->ngroups] = strdup(self ? own[i] : groups[i])))
			r->ngroups++;
	return r;
}

void req_resume(struct req *r)
{
	kb_http_req_on_abort(r->http, NULL, NULL);
	r->async = false;
	if (r->resume)
		r->resume(r);
	if (r->async)
		return; /* parked again */
	if (r->http)
		reply_status(r, 500, "InternalError", "no response", NULL);
	req_free(r);
}

void req_free(struct req *r)
{
	while (r->exts) {
		struct req_ext *e = r->exts;
		r->exts = e->next;
		e->free(e);
	}
	prom_req_free(r);
	req_forget_user(r);
	free(r->q.buf);
	free(r->pathbuf);
	free(r->uid);
	json_decref(r->real_user);
	json_decref(r->warnings);
	json_decref(r->audit_annotations);
	free(r->authz_reason);
	free(r->audit_name);
	free(r);
}

bool req_is_connect(const struct req *r)
{
	return r->res && !r->res->group[0] && strcmp(r->res->plural, "pods") == 0 && r->sub &&
	       (strcmp(r->sub, "exec") == 0 || strcmp(r->sub, "attach") == 0 ||
		strcmp(r->sub, "portforward") == 0);
}

bool req_filter_match(const json_t *obj, void *arg)
{
	const struct filter *f = arg;
	if (f->labels && !sel_label_match(f->labels, obj_get(obj, "metadata.labels")))
		return false;
	if (f->fields && !sel_field_match(f->fields, obj))
		return false;
	return true;
}

int req_filter_parse(struct req *r, struct filter *f)
{
	char err[512];
	memset(f, 0, sizeof(*f));
	if (r->q.label_selector && *r->q.label_selector &&
	    sel_label_parse(r->q.label_selector, &f->labels, err, sizeof(err)) < 0) {
		reply_statusf(r, 400, "BadRequest", "unable to parse requirement: %s", err);
		return -EINVAL;
	}
	if (r->q.field_selector && *r->q.field_selector &&
	    sel_field_parse(r->q.field_selector, r->res, &f->fields, err, sizeof(err)) < 0) {
		sel_label_free(f->labels);
		f->labels = NULL;
		reply_status(r, 400, "BadRequest", err, NULL);
		return -EINVAL;
	}
	return 0;
}

void req_filter_free(struct filter *f)
{
	sel_label_free(f->labels);
	sel_field_free(f->fields);
}
