/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LimitRange as kube-apiserver's LimitRanger admission plugin applies it to
 * the objects of a namespace: container defaults (default limits,
 * defaultRequest) set on new pods, with the kubernetes.io/limit-ranger
 * annotation saying what was set; min, max and maxLimitRequestRatio enforced
 * per Container and per Pod; min/max storage per PersistentVolumeClaim.
 * Refusals carry kube's words, e.g. "maximum cpu usage per Container is 1,
 * but limit is 2"; several become "[a, b]". A LimitRange itself gets kube's
 * defaulting (default from max, defaultRequest from default, then min).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/admission/admission.h"
#include "proxy/admission/limitrange.h"
#include "proxy/admission/quota.h"

#define ANNOTATION "kubernetes.io/limit-ranger"

static const char *const ctr_kinds[] = {"containers", "initContainers"};

/* ---- defaults on pods ---- */

/* Appends "k1, k2 request for container c" for the keys of defaults that
 * res[which] lacks, after setting them. */
static void merge(json_t *res, const char *which, const json_t *defaults, const char *prefix,
		  const char *cname, struct kb_buf *note)
{
	size_t n = 0;
	const char **keys = kb_json_sorted_keys(defaults, &n);
	struct kb_buf set = {0};
	for (size_t i = 0; keys && i < n; i++) {
		if (json_object_get(json_object_get(res, which), keys[i]))
			continue;
		json_object_set(kb_json_object_at(res, which), keys[i],
				json_object_get(defaults, keys[i]));
		kb_buf_printf(&set, "%s%s", set.len ? ", " : "", keys[i]);
	}
	free(keys);
	if (set.len)
		kb_buf_printf(note, "%s%s %s for %s %s", note->len ? "; " : "", set.data,
			      strcmp(which, "limits") == 0 ? "limit" : "request", prefix, cname);
	kb_buf_free(&set);
}

void limitrange_mutate_pod(const json_t *lr, json_t *pod)
{
	json_t *def_req = json_object(), *def_lim = json_object();
	size_t i;
	json_t *item, *c;
	json_array_foreach (obj_get(lr, "spec.limits"), i, item)
		if (obj_limit_item_is(item, "Container")) {
			json_object_update(def_req, json_object_get(item, "defaultRequest"));
			json_object_update(def_lim, json_object_get(item, "default"));
		}
	struct kb_buf note = {0};
	for (size_t k = 0; k < KB_ARRAY_SIZE(ctr_kinds); k++)
		json_array_foreach (json_object_get(obj_get(pod, "spec"), ctr_kinds[k]), i, c) {
			if (!json_is_object(c))
				continue;
			json_t *res = kb_json_object_at(c, "resources");
			const char *cn = json_string_value(json_object_get(c, "name"));
			const char *pfx = k == 0 ? "container" : "init container";
			/* the API defaults a request to its limit before admission */
			obj_fill_missing(res, "requests", json_object_get(res, "limits"));
			struct kb_buf lim = {0};
			merge(res, "limits", def_lim, pfx, cn ? cn : "", &lim);
			merge(res, "requests", def_req, pfx, cn ? cn : "", &note);
			if (lim.len)
				kb_buf_printf(&note, "%s%s", note.len ? "; " : "", lim.data);
			kb_buf_free(&lim);
		}
	if (note.len) {
		struct kb_buf val = {0};
		kb_buf_printf(&val, "LimitRanger plugin set: %s", note.data);
		if (val.data)
			json_object_set_new(kb_json_object_at(obj_meta(pod), "annotations"),
					    ANNOTATION, json_string(val.data));
		kb_buf_free(&val);
	}
	kb_buf_free(&note);
	json_decref(def_req);
	json_decref(def_lim);
}

/* ---- validation ---- */

/* One observed amount: present or not, thousandths, and as kube prints it. */
struct obs {
	bool has;
	int64_t v;
	char s[64];
};

static void obs_json(struct obs *o, const json_t *v)
{
	o->has = v && qty_parse(v, &o->v) == 0;
	if (o->has)
		qty_format(o->v, qty_binary(v), o->s, sizeof(o->s));
}

static void obs_list(struct obs *o, const json_t *rl, const char *k, bool binary)
{
	json_t *v = json_object_get(rl, k);
	o->has = v != NULL;
	o->v = json_integer_value(v);
	if (o->has)
		qty_format(o->v, binary, o->s, sizeof(o->s));
}

/* Collected refusals: distinct messages in order. */
struct errs {
	struct kb_buf b;
	json_t *seen;
	int n;
};

static void err_add(struct errs *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err_add(struct errs *e, const char *fmt, ...)
{
	char m[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (json_object_get(e->seen, m))
		return;
	json_object_set_new(e->seen, m, json_true());
	kb_buf_printf(&e->b, "%s%s", e->n ? ", " : "", m);
	e->n++;
}

/* What one limit of `kind` (min, max, maxLimitRequestRatio, or the PVC max
 * on requests) says about a request and a limit. */
static void constrain(struct errs *e, const char *kind, const char *type, const char *k,
		      const json_t *enf_v, const struct obs *req, const struct obs *lim)
{
	struct obs enf;
	obs_json(&enf, enf_v);
	if (!enf.has)
		return;
	if (strcmp(kind, "min") == 0) {
		if (!req->has)
			err_add(e, "minimum %s usage per %s is %s.  No request is specified", k,
				type, enf.s);
		else if (req->v < enf.v)
			err_add(e, "minimum %s usage per %s is %s, but request is %s", k, type,
				enf.s, req->s);
		else if (lim && lim->has && lim->v < enf.v)
			err_add(e, "minimum %s usage per %s is %s, but limit is %s", k, type, enf.s,
				lim->s);
	} else if (strcmp(kind, "max") == 0 && lim) {
		if (!lim->has)
			err_add(e, "maximum %s usage per %s is %s.  No limit is specified", k, type,
				enf.s);
		else if (lim->v > enf.v)
			err_add(e, "maximum %s usage per %s is %s, but limit is %s", k, type, enf.s,
				lim->s);
		else if (req->has && req->v > enf.v)
			err_add(e, "maximum %s usage per %s is %s, but request is %s", k, type,
				enf.s, req->s);
	} else if (strcmp(kind, "max") == 0) {
		if (!req->has)
			err_add(e, "maximum %s usage per %s is %s.  No request is specified", k,
				type, enf.s);
		else if (req->v > enf.v)
			err_add(e, "maximum %s usage per %s is %s, but request is %s", k, type,
				enf.s, req->s);
	} else if (!req->has || req->v == 0) {
		err_add(
		    e,
		    "%s max limit to request ratio per %s is %s, but no request is specified or "
		    "request is 0",
		    k, type, enf.s);
	} else if (!lim || !lim->has || lim->v == 0) {
		err_add(e,
			"%s max limit to request ratio per %s is %s, but no limit is specified or "
			"limit is 0",
			k, type, enf.s);
	} else if ((double)lim->v / (double)req->v * 1000.0 > (double)enf.v) {
		err_add(e, "%s max limit to request ratio per %s is %s, but provided ratio is %f",
			k, type, enf.s, (double)lim->v / (double)req->v);
	}
}

static const char *const kinds[] = {"min", "max", "maxLimitRequestRatio"};

static void check_container(struct errs *e, const json_t *item, const json_t *c)
{
	const json_t *res = json_object_get(c, "resources");
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		const json_t *lim_map = json_object_get(item, kinds[k]);
		size_t n = 0;
		const char **keys = kb_json_sorted_keys(lim_map, &n);
		for (size_t i = 0; keys && i < n; i++) {
			struct obs req, lim;
			obs_json(&req, json_object_get(json_object_get(res, "requests"), keys[i]));
			obs_json(&lim, json_object_get(json_object_get(res, "limits"), keys[i]));
			constrain(e, kinds[k], "Container", keys[i],
				  json_object_get(lim_map, keys[i]), &req, &lim);
		}
		free(keys);
	}
}

static void check_pod(struct errs *e, const json_t *item, const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	json_t *reqs = qty_pod_resources(spec, true, false);
	json_t *lims = qty_pod_resources(spec, false, false);
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		const json_t *lim_map = json_object_get(item, kinds[k]);
		size_t n = 0;
		const char **keys = kb_json_sorted_keys(lim_map, &n);
		for (size_t i = 0; keys && i < n; i++) {
			bool bin = qty_binary(json_object_get(lim_map, keys[i]));
			struct obs req, lim;
			obs_list(&req, reqs, keys[i], bin);
			obs_list(&lim, lims, keys[i], bin);
			constrain(e, kinds[k], "Pod", keys[i], json_object_get(lim_map, keys[i]),
				  &req, &lim);
		}
		free(keys);
	}
	json_decref(reqs);
	json_decref(lims);
}

static void check_pvc(struct errs *e, const json_t *item, const json_t *pvc)
{
	const json_t *requests = obj_get(pvc, "spec.resources.requests");
	for (size_t k = 0; k < 2; k++) {
		const json_t *lim_map = json_object_get(item, kinds[k]);
		size_t n = 0;
		const char **keys = kb_json_sorted_keys(lim_map, &n);
		for (size_t i = 0; keys && i < n; i++) {
			struct obs req, none = {0};
			obs_json(&req, json_object_get(requests, keys[i]));
			constrain(e, kinds[k], "PersistentVolumeClaim", keys[i],
				  json_object_get(lim_map, keys[i]), &req, k == 0 ? &none : NULL);
		}
		free(keys);
	}
}

static void check_item(struct errs *e, const json_t *item, bool pod, const json_t *obj)
{
	if (pod && obj_limit_item_is(item, "Container")) {
		for (size_t k = 0; k < KB_ARRAY_SIZE(ctr_kinds); k++) {
			size_t i;
			json_t *c;
			json_array_foreach (
			    json_object_get(json_object_get(obj, "spec"), ctr_kinds[k]), i, c)
				check_container(e, item, c);
		}
	} else if (pod && obj_limit_item_is(item, "Pod")) {
		check_pod(e, item, obj);
	} else if (!pod && obj_limit_item_is(item, "PersistentVolumeClaim")) {
		check_pvc(e, item, obj);
	}
}

int limitrange_validate(const json_t *lr, const struct proxy_resource *res, const json_t *obj,
			char *msg, size_t len)
{
	bool pod = res->group[0] == '\0' && strcmp(res->plural, "pods") == 0;
	bool pvc = res->group[0] == '\0' && strcmp(res->plural, "persistentvolumeclaims") == 0;
	if (!pod && !pvc)
		return 0;
	struct errs e = {.seen = json_object()};
	size_t i;
	json_t *item;
	json_array_foreach (obj_get(lr, "spec.limits"), i, item)
		check_item(&e, item, pod, obj);
	int rc = 0;
	if (e.n) {
		snprintf(msg, len, e.n > 1 ? "[%s]" : "%s", e.b.data);
		rc = -EACCES;
	}
	kb_buf_free(&e.b);
	json_decref(e.seen);
	return rc;
}

/* ---- admission ---- */

/* The LimitRanges of namespace ns (a new array reference; read only). */
static json_t *limit_ranges(struct proxy *px, const char *ns)
{
	json_t *all = cfg_cache_items(px, px->limitranges, resource_find("", "v1", "limitranges"));
	json_t *mine = json_array(), *lr;
	size_t i;

	json_array_foreach (all, i, lr) {
		const char *lns = obj_str(lr, "metadata.namespace");
		if (mine && lns && strcmp(lns, ns) == 0)
			json_array_append(mine, lr);
	}
	json_decref(all);
	return mine ? mine : json_array();
}

int limitrange_admit(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		     const json_t *old, char *msg, size_t len)
{
	if (res->group[0] != '\0')
		return 0;
	if (strcmp(res->plural, "limitranges") == 0) {
		obj_limitrange_defaults(obj);
		return 0;
	}
	bool pod = strcmp(res->plural, "pods") == 0;
	const char *ns = obj_str(obj, "metadata.namespace");
	if ((!pod && strcmp(res->plural, "persistentvolumeclaims") != 0) || (pod && old) || !ns ||
	    (old && obj_str(old, "metadata.deletionTimestamp")))
		return 0;
	json_t *lrs = limit_ranges(px, ns), *lr;
	size_t i;
	int rc = 0;
	if (pod)
		json_array_foreach (lrs, i, lr)
			limitrange_mutate_pod(lr, obj);
	json_array_foreach (lrs, i, lr)
		if ((rc = limitrange_validate(lr, res, obj, msg, len)) < 0)
			break;
	json_decref(lrs);
	return rc;
}
