/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scale subresource as data: the autoscaling/v1 Scale of an object
 * (a workload's spec.replicas, status.replicas and selector; a custom
 * object's through its CRD's scale paths, the row's `scale`), and setting
 * the replicas a Scale write asks for.
 *
 * Threading: any thread (no global mutable state).
 */
#include "proxy/model/scale.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/object.h"
#include "proxy/model/selector.h"

/* Sets the value (stolen) at a dotted path, creating objects on the way. */
static void set_path(json_t *obj, const char *path, json_t *value)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *cur = obj;
	char *save = NULL, *seg = strtok_r(buf, ".", &save), *next;
	for (; seg; seg = next) {
		next = strtok_r(NULL, ".", &save);
		if (!next) {
			json_object_set_new(cur, seg, value);
			return;
		}
		json_t *c = json_object_get(cur, seg);
		if (!json_is_object(c)) {
			c = json_object();
			json_object_set_new(cur, seg, c);
		}
		cur = c;
	}
	json_decref(value);
}

static json_t *custom_view(const struct resource_scale *c, const json_t *obj)
{
	json_t *m = json_object_get(obj, "metadata"), *sm = json_object();
	const char *keys[] = {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		if (json_object_get(m, keys[i]))
			json_object_set(sm, keys[i], json_object_get(m, keys[i]));
	json_t *spec = c->spec_replicas ? obj_get(obj, c->spec_replicas) : NULL;
	json_t *st = c->status_replicas ? obj_get(obj, c->status_replicas) : NULL;
	json_t *scale = json_pack("{s:s,s:s,s:o,s:{s:I},s:{s:I}}", "kind", "Scale", "apiVersion",
				  "autoscaling/v1", "metadata", sm, "spec", "replicas",
				  (json_int_t)json_integer_value(spec), "status", "replicas",
				  (json_int_t)json_integer_value(st));
	const char *sel = c->selector_path ? obj_str(obj, c->selector_path) : NULL;
	if (sel)
		json_object_set_new(json_object_get(scale, "status"), "selector", json_string(sel));
	return scale;
}

json_t *scale_view_workload(const json_t *obj)
{
	json_t *m = json_object_get(obj, "metadata");
	json_t *sm = json_object();
	const char *keys[] = {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(m, keys[i]);
		if (v)
			json_object_set(sm, keys[i], v);
	}
	json_t *spec_rep = obj_get(obj, "spec.replicas");
	json_t *st_rep = obj_get(obj, "status.replicas");
	json_t *scale =
	    json_pack("{s:s,s:s,s:o,s:{s:I},s:{s:I}}", "kind", "Scale", "apiVersion",
		      "autoscaling/v1", "metadata", sm, "spec", "replicas",
		      (json_int_t)(spec_rep ? json_integer_value(spec_rep) : 1), "status",
		      "replicas", (json_int_t)(st_rep ? json_integer_value(st_rep) : 0));
	struct sel_label *sel = NULL;
	char err[128];
	/* a ReplicationController's selector is a map of labels */
	json_t *ls =
	    strcmp(obj_str(obj, "kind") ? obj_str(obj, "kind") : "", "ReplicationController") == 0
		? json_pack("{s:O}", "matchLabels", obj_get(obj, "spec.selector"))
		: json_incref(obj_get(obj, "spec.selector"));
	int src = sel_label_from_object(ls, &sel, err, sizeof(err));
	json_decref(ls);
	if (src == 0) {
		char *s = sel_label_string(sel);
		if (s && *s)
			json_object_set_new(json_object_get(scale, "status"), "selector",
					    json_string(s));
		free(s);
		sel_label_free(sel);
	}
	return scale;
}

json_t *scale_view(const struct proxy_resource *res, const json_t *obj)
{
	if (!res->crd)
		return scale_view_workload(obj);
	return res->scale && res->scale->spec_replicas ? custom_view(res->scale, obj) : NULL;
}

int scale_set_custom(const struct proxy_resource *res, json_t *obj, int64_t replicas)
{
	if (!res->crd || !res->scale || !res->scale->spec_replicas)
		return -ENOTSUP;
	set_path(obj, res->scale->spec_replicas, json_integer(replicas));
	return 0;
}

void scale_set(const struct proxy_resource *res, json_t *obj, json_t *replicas)
{
	if (res->crd) {
		scale_set_custom(res, obj, json_integer_value(replicas));
		return;
	}
	json_t *spec = json_object_get(obj, "spec");
	if (json_is_object(spec))
		json_object_set(spec, "replicas", replicas);
}
