/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The four Kubernetes patch types as pure functions over jansson values:
 * JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch
 * (kubectl's default, driven by the patch strategies and merge keys of the
 * built-in types in proxy/model/types.h) and server-side apply (structured-merge-
 * diff field ownership recorded in metadata.managedFields).
 *
 * Ownership: every input json_t is borrowed and never modified (except `obj`
 * of patch_track_update, documented there); results are new references the
 * caller must json_decref(). Nothing is written to *out on error.
 *
 * Errors (negative errno) and the Kubernetes Status each one maps to:
 *   -EINVAL  the patch document is malformed (not an object/array, bad op,
 *            bad directive, list element without its merge key, ...)
 *            → 400 BadRequest.
 *   -EDOM    the patch is well formed but does not apply to this object
 *            (JSON patch path missing, index out of range, "test" failed)
 *            → 422 Invalid (kube answers 422 for json-patch apply errors).
 *   -EBUSY   server-side apply conflicts (see patch_apply) → 409 Conflict.
 *   -ENOMEM  out of memory → 500.
 * On error `err` (may be NULL when errlen is 0) holds a human message fit for
 * a Status "message".
 *
 * Threading: pure functions; any thread.
 */
#ifndef KB_PROXY_PATCH_H
#define KB_PROXY_PATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * RFC 7386 JSON merge patch: objects merge recursively, null deletes a key,
 * anything else (arrays included) replaces. A non-object patch replaces the
 * whole document. doc may be NULL (treated as absent). Returns 0 or -ENOMEM.
 */
int patch_merge(const json_t *doc, const json_t *patch, json_t **out);

/*
 * RFC 6902 JSON patch: ops is an array of {"op","path",["value"|"from"]} with
 * op add, remove, replace, move, copy or test; paths are RFC 6901 pointers
 * (~0 is "~", ~1 is "/"), "-" appends to an array on add/move/copy. The ops
 * run against a deep copy, so a failing op leaves nothing half applied.
 * Returns 0, -EINVAL (malformed ops), -EDOM (an op does not apply) or -ENOMEM.
 */
int patch_json(const json_t *doc, const json_t *ops, json_t **out, char *err, size_t errlen);

/*
 * Kubernetes strategic merge patch of doc (an object) with patch (an object)
 * for the type msg_name ("k8s.io.api.core.v1.Pod"). Lists whose field has
 * patch strategy "merge" merge by their merge key (lists of scalars merge as
 * sets); other lists are replaced; maps merge recursively; null deletes.
 * Directives: "$patch": replace|delete|merge (in maps and list elements),
 * "$setElementOrder/<list>", "$retainKeys", "$deleteFromPrimitiveList/<list>";
 * other "$" keys are dropped. Fields the type does not know (and all fields
 * when msg_name is NULL or unknown) merge like a JSON merge patch.
 * Returns 0, -EINVAL (bad patch) or -ENOMEM.
 */
int patch_strategic(const json_t *doc, const json_t *patch, const char *msg_name, json_t **out,
		    char *err, size_t errlen);

/*
 * Server-side apply of `applied` (the caller's full intent, with apiVersion,
 * kind and metadata.name) by field manager `manager` onto `live` (NULL when
 * the object does not exist yet). Fields this manager applied last time and
 * no longer applies are removed unless another manager owns them; fields set
 * to a value different from live and owned by another manager conflict:
 * without force the call returns -EBUSY, *conflicts gets an array of
 * {"field": ".spec.replicas", "manager": "x", "message": "conflict with \"x\"
 * using apps/v1"} and err the kube message ("Apply failed with 1 conflict:
 * ..."); with force this manager takes the fields over. *out is the merged
 * object with metadata.managedFields updated (time = now_rfc3339). Server-
 * managed metadata (resourceVersion, uid, ...) of live is kept. msg_name may
 * be NULL or unknown (CRDs): lists are then atomic and maps granular.
 * conflicts may be NULL. The manager "kubectl" takes over without force
 * the fields of live's kubectl.kubernetes.io/last-applied-configuration
 * that live still holds (an object last written by client-side apply), and
 * keeps that annotation in step with what it applies, as kube does.
 * Returns 0, -EINVAL, -EBUSY or -ENOMEM.
 */
int patch_apply(const json_t *live, const json_t *applied, const char *msg_name,
		const char *manager, bool force, const char *now_rfc3339, json_t **out,
		json_t **conflicts, char *err, size_t errlen);
/* The same through a subresource ("status", "scale"; NULL for the object):
 * the manager's entry is the one of that subresource, as kube keeps it. */
int patch_apply_sub(const json_t *live, const json_t *applied, const char *msg_name,
		    const char *manager, const char *subresource, bool force,
		    const char *now_rfc3339, json_t **out, json_t **conflicts, char *err,
		    size_t errlen);

/*
 * Records a non-apply write (create, update, any non-apply patch) in obj's
 * metadata.managedFields: the fields that differ between old (NULL on create)
 * and obj go to `manager` with `operation` ("Update"), and are taken away
 * from every other manager; entries left empty are dropped. obj is borrowed
 * and modified in place (only metadata.managedFields). Ownership starts from
 * the managedFields obj carries when it has some (a writer may set them, as
 * on kube; [] or [{}] clears them; entries kube could not decode are
 * ignored) and the write is not through a subresource,
 * else from old's. Returns 0 or -ENOMEM.
 */
int patch_track_update(const json_t *old, json_t *obj, const char *msg_name, const char *manager,
		       const char *operation, const char *now_rfc3339);
/* The same for a write through a subresource (NULL: the object itself). */
int patch_track_update_sub(const json_t *old, json_t *obj, const char *msg_name,
			   const char *manager, const char *operation, const char *subresource,
			   const char *now_rfc3339);
/*
 * patch_track_update(NULL, obj, msg_name, manager, "Update", now) for a
 * create. With `raw`, the fieldsV1 made (when obj takes the one-walk path:
 * no managedFields sent by the writer) is a raw value (lib/json.h
 * kb_json_raw): its text, which kb_json_dump and kb_json_copy write and copy
 * as that object, without the tree of it. Only for an object whose readers
 * all know raw values (ownership reads here do: patch_track_update and
 * patch_apply on obj or a copy of it take the text); proxy/api/handlers.c
 * handle_create says which. Returns 0 or -ENOMEM.
 */
int patch_track_create(json_t *obj, const char *msg_name, const char *manager,
		       const char *now_rfc3339, bool raw);

#endif
