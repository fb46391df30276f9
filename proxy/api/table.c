/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meta.k8s.io/v1 Table output for `kubectl get`: column definitions and
 * cells from proxy/printers, and each row's object as includeObject asks
 * (PartialObjectMetadata by default, the whole object, or none).
 */
#include <string.h>

#include "lib/json.h"
#include "proxy/model/printers.h"
#include "proxy/api/api.h"

static json_t *row_object(const struct req *r, const json_t *obj)
{
	if (r->q.include == INC_NONE)
		return NULL;
	if (r->q.include == INC_OBJECT)
		return json_incref((json_t *)obj);
	json_t *meta = json_deep_copy(json_object_get(obj, "metadata"));
	json_object_del(meta, "managedFields");
	return json_pack("{s:s,s:s,s:o}", "kind", "PartialObjectMetadata", "apiVersion",
			 "meta.k8s.io/v1", "metadata", meta ? meta : json_object());
}

static json_t *table_new(const char *rv, const char *cont)
{
	json_t *t = json_pack("{s:s,s:s,s:{}}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
			      "metadata");
	json_t *m = json_object_get(t, "metadata");
	if (rv)
		json_object_set_new(m, "resourceVersion", json_string(rv));
	if (cont)
		json_object_set_new(m, "continue", json_string(cont));
	return t;
}

json_t *table_row(struct req *r, const json_t *obj)
{
	json_t *row = json_pack("{s:o}", "cells", printers_cells(r->res, obj, r->now));
	json_t *o = row_object(r, obj);
	if (o)
		json_object_set_new(row, "object", o);
	return row;
}

json_t *table_build(struct req *r, json_t *items, const char *rv, const char *cont, bool headers)
{
	json_t *t = table_new(rv, cont);
	json_object_set_new(t, "columnDefinitions",
			    headers ? printers_columns(r->res) : json_array());
	json_t *rows = json_array();
	size_t i;
	json_t *item;
	json_array_foreach (items, i, item)
		json_array_append_new(rows, table_row(r, item));
	json_object_set_new(t, "rows", rows);
	return t;
}

int table_text_head(struct req *r, const char *rv, const char *cont, struct kb_buf *b)
{
	json_t *t = table_build(r, NULL, rv, cont, true);
	size_t start = b->len;
	int rc = kb_json_dump(t, b);
	json_decref(t);
	if (rc < 0)
		return rc;
	/* ... "rows":[]} without its "]}" */
	if (b->len - start < 2 || memcmp(b->data + b->len - 2, "]}", 2) != 0)
		return -EINVAL;
	b->len -= 2;
	return 0;
}

/* A built-in kind's /scale is printed as a Scale (kube's ScaleREST hands the
 * Scale to the kind's table convertor, whose printers know Scale); a custom
 * resource's Scale goes through the CRD's columns, as apiextensions' does. */
json_t *table_build_scale(struct req *r, const json_t *scale)
{
	if (r->res->crd) {
		json_t *items = json_pack("[O]", scale);
		json_t *t =
		    table_build(r, items, obj_str(scale, "metadata.resourceVersion"), NULL, true);
		json_decref(items);
		return t;
	}
	json_t *t = table_new(obj_str(scale, "metadata.resourceVersion"), NULL);
	json_t *row = json_pack("{s:o}", "cells", printers_scale_cells(scale, r->now));
	json_t *o = row_object(r, scale);
	if (o)
		json_object_set_new(row, "object", o);
	json_object_set_new(t, "columnDefinitions", printers_scale_columns());
	json_object_set_new(t, "rows", json_pack("[o]", row));
	return t;
}
