/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The resource table: one row per served resource (group, version, kind,
 * plural, scope, short names, verbs, subresources, protobuf message, field
 * selectors). Every generic handler, discovery, OpenAPI and Table output is
 * driven from it; a CustomResourceDefinition adds a row at run time.
 *
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_RESOURCE_H
#define KB_PROXY_RESOURCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct req;

enum proxy_verb {
	VERB_GET = 1 << 0,
	VERB_LIST = 1 << 1,
	VERB_WATCH = 1 << 2,
	VERB_CREATE = 1 << 3,
	VERB_UPDATE = 1 << 4,
	VERB_PATCH = 1 << 5,
	VERB_DELETE = 1 << 6,
	VERB_DELETECOLLECTION = 1 << 7,
};
#define VERBS_ALL 0xff
#define VERBS_RO  (VERB_GET | VERB_LIST | VERB_WATCH)

struct proxy_subresource {
	const char *name;  /* "status", "scale", "log", "token" */
	const char *group; /* response kind's group, version and kind */
	const char *version;
	const char *kind;
	unsigned verbs;
};

/* A custom resource's scale subresource: its CRD's paths (NULL: none). */
struct resource_scale {
	const char *spec_replicas, *status_replicas, *selector_path;
};

struct proxy_resource {
	const char *group;     /* "" for core */
	const char *version;   /* "v1" */
	const char *kind;      /* "Pod" */
	const char *list_kind; /* "PodList" */
	const char *plural;    /* "pods" */
	const char *singular;  /* "pod" */
	bool namespaced;
	unsigned verbs;                               /* enum proxy_verb bits */
	const char *const *short_names;               /* NULL-terminated or NULL */
	const char *const *categories;                /* NULL-terminated or NULL */
	const struct proxy_subresource *subresources; /* terminated by name NULL */
	const char *proto; /* protobuf message, "k8s.io.api.core.v1.Pod"; NULL: none */
	const char *const *field_selectors; /* extra field selector paths beyond
					       metadata.name/metadata.namespace */
	bool has_status;                    /* spec/status split: generation bumps on
				     changes outside metadata and status */
	bool no_generation;                 /* with has_status: no metadata.generation (kube's
			       strategy sets none, e.g. APIService) */
	bool stored;                        /* false: virtual (reviews), never stored */
	bool conditional_update;            /* kube's AllowUnconditionalUpdate() false: a PUT
				    (main resource or status) must carry
				    metadata.resourceVersion */
	/* storage in another row's shape: store_key names that row's storage and
	 * objects convert in place on the way in and out (NULL: as served) */
	const char *storage; /* e.g. "/events" */
	void (*to_storage)(const struct proxy_resource *res, json_t *obj);
	void (*from_storage)(const struct proxy_resource *res, json_t *obj);
	/* a kind's own strategy, validation and admission of a write by an API
	 * request (struct req: proxy/core/core.h), in place of the generic
	 * validation; < 0 when it answered (NULL: the generic one). Set at
	 * start by the layer that owns it (resource_set_write_check), never
	 * named here. */
	int (*write_check)(struct req *r, json_t *obj, const json_t *old);
	/* a row served by a module of its own (the metrics API's rows:
	 * proxy/aggregation/metrics.c), in place of the generic verbs; set by
	 * that module on its own rows, NULL for every other row */
	void (*serve)(struct req *r);
	/* run-time rows (CRDs) */
	json_t *crd;                        /* owned reference to the CRD object, or NULL */
	json_t *schema;                     /* owned: openAPIV3Schema of this version, or NULL */
	const struct resource_scale *scale; /* a CRD's scale paths, or NULL */
	char store_key[256];                /* "<group>/<plural>", filled by the table */
};

/* Finds by group, version and plural; NULL if not served. */
const struct proxy_resource *resource_find(const char *group, const char *version,
					   const char *plural);
/* Finds by group and kind (any served version, preferred first). */
const struct proxy_resource *resource_find_kind(const char *group, const char *kind);
/* Iteration over every served row, in discovery order. */
size_t resource_count(void);
const struct proxy_resource *resource_at(size_t i);
/* The subresource row of `r`, or NULL. */
const struct proxy_subresource *resource_sub(const struct proxy_resource *r, const char *name);

/* Sets the write_check of the built-in rows of group/plural (at start-up,
 * before serving; the upper layer that owns the check calls it). 0, or
 * -ENOENT when no such row. */
typedef int (*resource_write_check_fn)(struct req *r, json_t *obj, const json_t *old);
int resource_set_write_check(const char *group, const char *plural, resource_write_check_fn fn);

/* Adds a run-time row (CRD); the row is borrowed until resource_remove.
 * Returns 0 or -ENOSPC. */
int resource_add(struct proxy_resource *r);
void resource_remove(const struct proxy_resource *r);

#endif
