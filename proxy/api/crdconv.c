/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conversion webhooks of CustomResourceDefinitions (spec.conversion.strategy
 * Webhook), called as kube-apiserver calls them
 * (k8s.io/apiextensions-apiserver pkg/apiserver/conversion/webhook_converter.go,
 * webhookConverter.Convert): a POST of a ConversionReview (the first of the
 * CRD's conversionReviewVersions kube knows, v1 or v1beta1:
 * createConversionReviewObjects) with request.uid, desiredAPIVersion and the
 * objects whose apiVersion differs from the desired one, to the CRD's
 * clientConfig (proxy/core/whclient.h, `?timeout=30s`). The answer is checked
 * as getConvertedObjectsFromResponse and Convert check it (the review's
 * apiVersion and kind, response.uid, result.status Success, as many objects
 * as sent, each of the desired group/version and the same kind, name,
 * namespace and uid: validateConvertedObject), and the converted objects
 * keep the stored metadata but for their labels and annotations
 * (restoreObjectMeta), pruned to the version's schema as kube's
 * schemaCoercingConverter prunes them (pkg/apiserver/customresource_handler.go).
 * A failure answers 500 with kube's words, `conversion
 * webhook for <group>/<version>, Kind=<Kind> failed: ...` (a plain error in
 * kube: no reason).
 *
 * Served here: reads through a version other than the storage one (get and
 * list of objects, their status and scale, Tables), and writes through it
 * (create, update, patch of every kind, server-side apply, status): the
 * object, once validated and admitted, is converted to the storage version
 * by the webhook before it is stored (kube converts when it encodes for
 * storage; a dry run is not converted, as kube's dry-run storage does not
 * encode). Same-version requests never call the webhook.
 * Deletes (of one object or a collection) too: the objects are converted to
 * be read, and a deletionTimestamp is stored on the stored content (kube's
 * conversions keep metadata). Watches: the current objects converted as a
 * list, then each event's object (and the one before it, for selectors)
 * converted by one call, events delivered in order; a failing webhook ends
 * the watch with an ERROR event.
 * A write's answer is the stored object converted back to the request's
 * version by a second call, as kube decodes what it stored
 * (crdconv_reply). Not done yet: a watch's bookmarks wait while events are
 * being converted (crdconv_watch_busy).
 *
 * DESIGN: the read and write paths are synchronous, the webhook answers
 * later. A request through another version is parked (r->async, state on r
 * as a req_ext) before its handler runs when it reads stored objects: they
 * are read from the store and sent in one review; with the answer, the
 * converted objects are kept on r, keyed by namespace/name, and the request
 * is served again from its start (r->resume): the rows' from_storage
 * (crdconv_out) takes each object's converted form while the handler runs
 * (crdconv_begin sets the request whose conversions apply, crdconv_end
 * clears it). A write is parked again at the end of write_validate
 * (crdconv_write, as the admission webhooks park it), and on the next pass
 * the rows' to_storage (crdconv_in) stores the converted object, found by
 * its content but for its metadata (write_key: a create's uid and creation
 * time are new on each pass); the stored metadata is the request's but for
 * the labels and annotations the webhook returns (restoreObjectMeta). An
 * object written between two passes (another resourceVersion) is shown with
 * the None strategy's conversion (apiVersion only). A watch keeps its
 * events in a queue on r (crdconv_watch_event): one call at a time, for the
 * first; its answer is delivered through watch.c's callback with the
 * conversions in force, then the next is sent.
 *
 * Each CRD's client (a kept-alive connection) is made at its first call
 * and replaced when its clientConfig changes, once no call uses it.
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/validation/crd_validate.h"
#include "proxy/api/api.h"

#define CONV_TIMEOUT_S  30          /* kube's conversion webhook client's */
#define CONV_MAX_ANSWER (64u << 20) /* a webhook's answer */

struct conv_target {
	struct conv_target *next;
	char *crd;  /* the CRD's name */
	json_t *cc; /* the clientConfig it was made from (owned) */
	struct whc_target t;
	int inflight; /* calls using it */
	bool stale;   /* replaced: freed when no call uses it */
};

struct conv_req {
	struct req_ext ext; /* on r (conv_of) */
	struct req *r;
	struct conv_target *tg;
	kb_httpc_req_t *hc;
	char peer[64]; /* the address the failed call tried (kb_httpc_req_peer) */
	char uid[40];
	char in_gvk[600];   /* "<group>/<storage version>, Kind=<Kind>" */
	char desired[300];  /* "<group>/<version>" */
	const char *review; /* "v1" or "v1beta1" */
	bool list;          /* a list was asked for (kube's messages differ) */
	json_t *sent;       /* the objects sent (owned) */
	json_t *done;       /* "ns/name" -> converted object (owned), once answered */
	bool writing;       /* the call in flight converts a written object to storage */
	json_t *written;    /* write_key -> the object converted to storage (owned) */
	json_t *originals;  /* "ns/name" -> the stored object sent to be read (owned) */
	/* a watch: its events waiting for their conversion, in order */
	struct conv_event *events, **events_tail;
	crdconv_deliver_fn deliver;
	void *deliver_arg;
	bool watching; /* the call in flight converts the first event */
	/* the call in flight converts the stored object back for the write's
	 * answer (crdconv_reply), answered with reply_code */
	bool replying;
	int reply_code;
};

struct conv_event {
	struct conv_event *next;
	struct store_event ev; /* obj and prev owned */
};

static struct conv_target *targets;
static struct conv_req *current; /* whose conversions crdconv_out applies */

/* ---- clients ------------------------------------------------------------------ */

static void target_free(struct conv_target *tg)
{
	whc_target_free(&tg->t);
	json_decref(tg->cc);
	free(tg->crd);
	free(tg);
}

static void targets_sweep(void)
{
	struct conv_target **pp = &targets;
	while (*pp) {
		struct conv_target *tg = *pp;
		if (tg->stale && tg->inflight == 0) {
			*pp = tg->next;
			target_free(tg);
		} else {
			pp = &tg->next;
		}
	}
}

/* The target of crd's conversion webhook, or NULL with why. */
static struct conv_target *target_of(const json_t *crd, char *why, size_t wl)
{
	const char *name = obj_str(crd, "metadata.name");
	const json_t *cc = obj_get(crd, "spec.conversion.webhook.clientConfig");
	for (struct conv_target *tg = targets; tg; tg = tg->next) {
		if (tg->stale || strcmp(tg->crd, name) != 0)
			continue;
		if (json_equal(tg->cc, (json_t *)cc))
			return tg;
		tg->stale = true;
	}
	targets_sweep();
	struct conv_target *tg = calloc(1, sizeof(*tg));
	if (!tg || !(tg->crd = strdup(name))) {
		free(tg);
		snprintf(why, wl, "out of memory");
		return NULL;
	}
	tg->cc = json_deep_copy(cc);
	if (whc_target_init(&tg->t, cc, CONV_TIMEOUT_S) < 0) {
		snprintf(why, wl, "the CRD's conversion webhook clientConfig cannot be used");
		target_free(tg);
		return NULL;
	}
	tg->next = targets;
	targets = tg;
	return tg;
}

/* ---- what a CRD asks ------------------------------------------------------------ */

static const char *storage_version(const json_t *crd)
{
	size_t i;
	json_t *v;
	json_array_foreach (obj_get(crd, "spec.versions"), i, v)
		if (json_is_true(json_object_get(v, "storage")))
			return json_string_value(json_object_get(v, "name"));
	return NULL;
}

static bool uses_webhook(const json_t *crd)
{
	const char *s = obj_str(crd, "spec.conversion.strategy");
	return s && strcmp(s, "Webhook") == 0;
}

/* createConversionReviewObjects: the first version kube knows, or NULL. */
static const char *review_version(const json_t *crd)
{
	size_t i;
	json_t *v;
	json_array_foreach (obj_get(crd, "spec.conversion.webhook.conversionReviewVersions"), i,
			    v) {
		const char *s = json_string_value(v);
		if (s && strcmp(s, "v1") == 0)
			return "v1";
		if (s && strcmp(s, "v1beta1") == 0)
			return "v1beta1";
	}
	return NULL;
}

bool crdconv_applies(const struct proxy_resource *res)
{
	const char *sv;
	return res->crd && uses_webhook(res->crd) && (sv = storage_version(res->crd)) &&
	       strcmp(sv, res->version) != 0;
}

/* ---- the request's state -------------------------------------------------------- */

static void conv_free(struct req_ext *e)
{
	struct conv_req *cr = kb_container_of(e, struct conv_req, ext);
	if (cr->hc)
		kb_httpc_cancel(cr->hc);
	if (cr->hc && cr->tg)
		cr->tg->inflight--;
	if (current == cr)
		current = NULL;
	json_decref(cr->sent);
	json_decref(cr->done);
	json_decref(cr->written);
	json_decref(cr->originals);
	while (cr->events) {
		struct conv_event *ce = cr->events;
		cr->events = ce->next;
		json_decref((json_t *)ce->ev.obj);
		json_decref((json_t *)ce->ev.prev);
		free(ce);
	}
	free(cr);
	targets_sweep();
}

static struct conv_req *conv_of(const struct req *r)
{
	struct req_ext *e = req_ext_find(r, conv_free);
	return e ? kb_container_of(e, struct conv_req, ext) : NULL;
}

static void key_of(const json_t *obj, char *key, size_t len)
{
	const char *ns = obj_str(obj, "metadata.namespace"), *name = obj_str(obj, "metadata.name");
	snprintf(key, len, "%s/%s", ns ? ns : "", name ? name : "");
}

/* "ns/name@resourceVersion": one state of an object (a watch event's
 * object and the one before it share a name). */
static void rv_key(const json_t *obj, char *key, size_t len)
{
	const char *rv = obj_str(obj, "metadata.resourceVersion");
	size_t n;
	key_of(obj, key, len);
	n = strlen(key);
	snprintf(key + n, len - n, "@%s", rv ? rv : "");
}

/* A written object's identity across the passes of its request (malloc'ed,
 * or NULL): all but its metadata, and its labels and annotations (a create
 * gets a new uid and creation time on each pass). */
static char *write_key(const json_t *obj)
{
	json_t *k = json_deep_copy(obj);
	const json_t *m = json_object_get(obj, "metadata");
	char *out;
	if (!k)
		return NULL;
	json_object_set_new(k, "metadata", json_object());
	if (json_object_get(m, "labels"))
		json_object_set(json_object_get(k, "metadata"), "labels",
				json_object_get(m, "labels"));
	if (json_object_get(m, "annotations"))
		json_object_set(json_object_get(k, "metadata"), "annotations",
				json_object_get(m, "annotations"));
	out = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(k);
	return out;
}

/* ---- checking the answer (webhook_converter.go) ---------------------------------- */

/* Go's schema.GroupVersion String of an apiVersion: itself. */
static const char *gv_of(const json_t *obj)
{
	const char *av = obj_str(obj, "apiVersion");
	return av ? av : "";
}

/* validateConvertedObject; NULL when in and out agree. */
static const char *same_identity(const json_t *in, const json_t *out, char *why, size_t wl)
{
	static const char *const fields[][2] = {{"kind", "kind"},
						{"metadata.name", "name"},
						{"metadata.namespace", "namespace"},
						{"metadata.uid", "UID"}};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *a = obj_str(in, fields[i][0]), *b = obj_str(out, fields[i][0]);
		if (strcmp(a ? a : "", b ? b : "") != 0) {
			snprintf(why, wl, "must have the same %s: %s != %s", fields[i][1],
				 a ? a : "", b ? b : "");
			return why;
		}
	}
	return NULL;
}

/* restoreObjectMeta: out keeps in's metadata but for its own labels and
 * annotations. -1 with why when out has no metadata object. */
static int restore_meta(const json_t *in, json_t *out, char *why, size_t wl)
{
	json_t *m = json_object_get(out, "metadata");
	if (!m) {
		snprintf(why, wl, "missing metadata in converted object");
		return -1;
	}
	if (!json_is_object(m)) {
		snprintf(why, wl, "invalid metadata of type %s in converted object",
			 json_is_array(m) ? "[]interface {}" : "string");
		return -1;
	}
	json_t *meta = json_deep_copy(json_object_get(in, "metadata"));
	json_t *labels = json_object_get(m, "labels"), *ann = json_object_get(m, "annotations");
	json_object_del(meta, "labels");
	json_object_del(meta, "annotations");
	if (labels)
		json_object_set(meta, "labels", labels);
	if (ann)
		json_object_set(meta, "annotations", ann);
	json_object_set_new(out, "metadata", meta);
	return 0;
}

/* One converted object at index i against what was sent; 0, or -1 with
 * kube's message in msg. */
static int check_object(struct conv_req *cr, size_t i, json_t *out, char *msg, size_t ml)
{
	const json_t *in = json_array_get(cr->sent, i);
	char why[1200], at[64];
	const char *w;
	if (cr->list)
		snprintf(at, sizeof(at), "returned invalid converted object at index %zu", i);
	if (!json_is_object(out)) {
		snprintf(msg, ml,
			 "conversion webhook for %s %s: json: cannot unmarshal into Go value",
			 cr->in_gvk, cr->list ? at : "returned invalid object at index 0");
		return -1;
	}
	if (strcmp(gv_of(out), cr->desired) != 0) {
		snprintf(
		    msg, ml,
		    "conversion webhook for %s %s: invalid groupVersion (expected %s, received "
		    "%s)",
		    cr->in_gvk, cr->list ? at : "returned invalid object at index 0", cr->desired,
		    gv_of(out));
		return -1;
	}
	const char *k1 = obj_str(in, "kind"), *k2 = obj_str(out, "kind");
	if (strcmp(k1 ? k1 : "", k2 ? k2 : "") != 0) {
		snprintf(msg, ml,
			 "conversion webhook for %s %s: invalid kind (expected %s, received %s)",
			 cr->in_gvk, cr->list ? at : "returned invalid object at index 0",
			 k1 ? k1 : "", k2 ? k2 : "");
		return -1;
	}
	if ((w = same_identity(in, out, why, sizeof(why)))) {
		snprintf(msg, ml, "conversion webhook for %s %s: %s", cr->in_gvk,
			 cr->list ? at : "returned invalid object", w);
		return -1;
	}
	if (restore_meta(in, out, why, sizeof(why)) < 0) {
		if (cr->list)
			snprintf(msg, ml,
				 "conversion webhook for %s returned invalid metadata in object at "
				 "index %zu: %s",
				 cr->in_gvk, i, why);
		else
			snprintf(msg, ml, "conversion webhook for %s returned invalid metadata: %s",
				 cr->in_gvk, why);
		return -1;
	}
	return 0;
}

/* getConvertedObjectsFromResponse: the converted objects (borrowed from
 * doc), or NULL with the error (unwrapped) in why. */
static const json_t *converted_of(struct conv_req *cr, const json_t *doc, char *why, size_t wl)
{
	const json_t *resp = json_object_get(doc, "response");
	bool v1 = strcmp(cr->review, "v1") == 0;
	if (v1) {
		const char *av = gv_of(doc), *kind = obj_str(doc, "kind");
		if (strcmp(av, "apiextensions.k8s.io/v1") != 0 || !kind ||
		    strcmp(kind, "ConversionReview") != 0) {
			const char *sl = strchr(av, '/');
			snprintf(why, wl,
				 "expected webhook response of apiextensions.k8s.io/v1, "
				 "Kind=ConversionReview, got %.*s/%s, Kind=%s",
				 sl ? (int)(sl - av) : 0, av, sl ? sl + 1 : av, kind ? kind : "");
			return NULL;
		}
	}
	if (!json_is_object(resp)) {
		snprintf(why, wl, "no response provided");
		return NULL;
	}
	const char *uid = obj_str(resp, "uid");
	if (v1 && strcmp(uid ? uid : "", cr->uid) != 0) {
		snprintf(why, wl, "expected response.uid=\"%s\", got \"%s\"", cr->uid,
			 uid ? uid : "");
		return NULL;
	}
	const char *status = obj_str(resp, "result.status");
	if (!status || strcmp(status, "Success") != 0) {
		const char *m = obj_str(resp, "result.message");
		if (m && *m)
			snprintf(why, wl, "%s", m);
		else
			snprintf(why, wl, "response.result.status was '%s', not 'Success'",
				 status ? status : "");
		return NULL;
	}
	return json_object_get(resp, "convertedObjects");
}

/* The converted objects into cr->done; 0, or -1 with kube's message. */
static int take_answer(struct conv_req *cr, int err, long status, const char *body, size_t len,
		       char *msg, size_t ml)
{
	char why[4096] = "";
	if (err) {
		whc_dial_error(err, cr->peer, cr->tg->t.where, why, sizeof(why));
		snprintf(msg, ml, "conversion webhook for %s failed: Post \"%s\": %s", cr->in_gvk,
			 cr->tg->t.where, why);
		return -1;
	}
	if (status < 200 || status > 299) {
		snprintf(msg, ml,
			 "conversion webhook for %s failed: the server responded with the status "
			 "code %ld but did not return more information (post %s)",
			 cr->in_gvk, status, cr->tg->t.where);
		return -1;
	}
	json_error_t je;
	json_t *doc = kb_json_loadb(body, len, 0, &je);
	const json_t *objs = NULL;
	int rc = -1;
	if (!json_is_object(doc))
		snprintf(msg, ml, "conversion webhook for %s failed: %s", cr->in_gvk,
			 doc ? "json: cannot unmarshal into Go value of type v1.ConversionReview"
			     : je.text);
	else if (!(objs = converted_of(cr, doc, why, sizeof(why))) && why[0])
		snprintf(msg, ml, "conversion webhook for %s failed: %s", cr->in_gvk, why);
	else if (json_array_size(objs) != json_array_size(cr->sent))
		snprintf(msg, ml, "conversion webhook for %s returned %zu objects, expected %zu",
			 cr->in_gvk, json_array_size(objs), json_array_size(cr->sent));
	else
		rc = 0;
	if (!cr->done)
		cr->done = json_object();
	if (!cr->written)
		cr->written = json_object();
	for (size_t i = 0; rc == 0 && i < json_array_size(objs); i++) {
		json_t *out = json_deep_copy(json_array_get(objs, i));
		char key[600];
		if (check_object(cr, i, out, msg, ml) < 0) {
			json_decref(out);
			rc = -1;
			break;
		}
		if (cr->writing) {
			char *wk = write_key(json_array_get(cr->sent, i));
			json_object_set_new(cr->written, wk ? wk : "", out);
			free(wk);
			continue;
		}
		key_of(out, key, sizeof(key));
		json_object_set(cr->done, key, out);
		rv_key(out, key, sizeof(key));
		json_object_set_new(cr->done, key, out);
	}
	json_decref(doc);
	return rc;
}

/* ---- the call ------------------------------------------------------------------- */

static void watch_answer(struct conv_req *cr, int err, long status, const char *body, size_t len);

static void on_abort(kb_http_req_t *http, void *arg)
{
	(void)http;
	struct req *r = arg;
	r->http = NULL;
	req_free(r); /* cancels the call */
}

static void reply_converted(struct conv_req *cr, int err, long status, const char *body,
			    size_t len);

static void on_answer(kb_httpc_req_t *hc, int err, long status, const char *body, size_t len,
		      void *arg)
{
	struct conv_req *cr = arg;
	struct req *r = cr->r;
	char msg[8192];
	snprintf(cr->peer, sizeof(cr->peer), "%s", err ? kb_httpc_req_peer(hc) : "");
	cr->hc = NULL;
	cr->tg->inflight--;
	if (cr->watching) {
		watch_answer(cr, err, status, body, len);
		return;
	}
	if (cr->replying) {
		reply_converted(cr, err, status, body, len);
		return;
	}
	kb_http_req_on_abort(r->http, NULL, NULL);
	r->async = false;
	if (take_answer(cr, err, status, body, len, msg, sizeof(msg)) < 0) {
		kb_warn("crdconv", "%s", msg);
		reply_status(r, 500, NULL, msg, NULL); /* kube: a plain error, 500, no reason */
	} else {
		r->resume(r); /* served again, with the conversions (crdconv_begin) */
		if (r->async)
			return;
		if (r->http && r->q.watch)
			return; /* a watch started: it owns r */
		if (r->http)
			reply_status(r, 500, "InternalError", "no response", NULL);
	}
	req_free(r);
	targets_sweep();
}

static json_t *review_of(const struct conv_req *cr)
{
	char av[64];
	snprintf(av, sizeof(av), "apiextensions.k8s.io/%s", cr->review);
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:O},s:{s:s,s:n,s:{s:{}}}}", "kind",
			 "ConversionReview", "apiVersion", av, "request", "uid", cr->uid,
			 "desiredAPIVersion", cr->desired, "objects", cr->sent, "response", "uid",
			 "", "convertedObjects", "result", "metadata");
}

/* Sends cr->sent; 0 when the call is in flight, else -1 with msg. */
static int call_start(struct conv_req *cr, char *msg, size_t ml)
{
	struct req *r = cr->r;
	char why[2048] = "", ct[600] = "";
	int rc;
	cr->tg = target_of(r->res->crd, why, sizeof(why));
	kb_httpc_t *c =
	    cr->tg ? whc_client(r->px, &cr->tg->t, "kube-apiserver", why, sizeof(why)) : NULL;
	if (c && cr->tg->t.svc_name &&
	    (rc = whc_service_address(r->px, &cr->tg->t, ct, sizeof(ct), why, sizeof(why))) < 0) {
		c = NULL;
		/* the lister's NotFound through kube's ClusterIP resolver, under Go's
		 * `Post "<url>": ` */
		if (rc == -ENOENT)
			snprintf(why, sizeof(why), "service \"%s\" not found", cr->tg->t.svc_name);
	}
	if (!c) {
		const char *w = strncmp(why, "failed to call webhook: ", 24) == 0 ? why + 24 : why;
		if (cr->tg)
			snprintf(msg, ml, "conversion webhook for %s failed: Post \"%s\": %s",
				 cr->in_gvk, cr->tg->t.where, w);
		else
			snprintf(msg, ml, "conversion webhook for %s failed: %s", cr->in_gvk, w);
		return -1;
	}
	kb_uuid(cr->uid);
	json_t *review = review_of(cr);
	cr->hc = whc_post_json(c, &cr->tg->t, ct, review, CONV_MAX_ANSWER, on_answer, cr);
	json_decref(review);
	if (!cr->hc) {
		snprintf(msg, ml, "conversion webhook for %s failed: out of memory", cr->in_gvk);
		return -1;
	}
	cr->tg->inflight++;
	return 0;
}

/* ---- the gate --------------------------------------------------------------------- */

/* The stored objects r will read (new reference), those not yet in the
 * desired version (getObjectsToConvert). */
static json_t *objects_to_convert(struct req *r, const char *desired)
{
	json_t *all = json_array(), *one = NULL, *out = json_array();
	const char *ns = r->res->namespaced && r->ns ? r->ns : NULL;
	if (r->name) {
		if (store_get(r->px->store, r->res->store_key, ns ? ns : "", r->name, &one) == 0)
			json_array_append_new(all, one);
	} else {
		struct store_list_req lr = {.res = r->res->store_key, .ns = ns};
		struct store_list_result res = {0};
		if (store_list(r->px->store, &lr, &res) == 0) {
			json_array_extend(all, res.items);
			json_decref(res.items);
			free(res.next);
		}
	}
	size_t i;
	json_t *o;
	json_array_foreach (all, i, o)
		if (strcmp(gv_of(o), desired) != 0)
			json_array_append(out, o);
	json_decref(all);
	return out;
}

static bool refuse(struct req *r, const char *desired, const char *sv)
{
	reply_statusf(r, 405, "MethodNotAllowed",
		      "conversion webhook for %s: %s through %s, a version other than the "
		      "storage version %s, is not supported yet (Kubicle converts get, list, "
		      "create, update, patch and delete)",
		      obj_str(r->res->crd, "metadata.name"),
		      r->q.watch                               ? "watch"
		      : strcmp(r->http->method, "DELETE") == 0 ? "deleting"
							       : "writing",
		      desired, sv);
	return true;
}

bool crdconv_begin(struct req *r)
{
	const char *sv, *m = r->http ? r->http->method : "";
	char msg[8192];
	current = NULL;
	if (!r->http || !crdconv_applies(r->res))
		return false;
	struct conv_req *cr = conv_of(r);
	if (cr && cr->done) {
		current = cr;
		return false;
	}
	sv = storage_version(r->res->crd);
	char desired[300];
	snprintf(desired, sizeof(desired), "%s/%s", r->res->group, r->res->version);
	bool write = strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0;
	bool del = strcmp(m, "DELETE") == 0;
	if (!write && !del && strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0)
		return refuse(r, desired, sv);
	json_t *objs = strcmp(m, "POST") == 0 ? json_array() : objects_to_convert(r, desired);
	if (json_array_size(objs) == 0 && !write) {
		json_decref(objs);
		return false;
	}
	cr = calloc(1, sizeof(*cr));
	KB_REQUIRE(cr);
	cr->r = r;
	if (json_array_size(objs) == 0) { /* a write with nothing to read first */
		cr->ext.free = conv_free;
		req_ext_add(r, &cr->ext);
		cr->done = json_object();
		json_decref(objs);
		current = cr;
		return false;
	}
	cr->sent = objs;
	cr->list = !r->name;
	cr->originals = json_object();
	size_t i;
	json_t *o;
	json_array_foreach (objs, i, o) {
		char key[600];
		key_of(o, key, sizeof(key));
		json_object_set(cr->originals, key, o);
	}
	snprintf(cr->desired, sizeof(cr->desired), "%s", desired);
	snprintf(cr->in_gvk, sizeof(cr->in_gvk), "%s/%s, Kind=%s", r->res->group, sv, r->res->kind);
	cr->ext.free = conv_free;
	req_ext_add(r, &cr->ext);
	cr->review = review_version(r->res->crd);
	if (!cr->review) {
		reply_status(r, 500, NULL, "no supported conversion review versions", NULL);
		return true;
	}
	if (call_start(cr, msg, sizeof(msg)) < 0) {
		kb_warn("crdconv", "%s", msg);
		reply_status(r, 500, NULL, msg, NULL);
		return true;
	}
	r->async = true; /* parked: on_answer serves it again */
	kb_http_req_on_abort(r->http, on_abort, r);
	return true;
}

void crdconv_end(struct req *r)
{
	(void)r;
	current = NULL;
}

/* Whether a and b agree but for their metadata (labels and annotations
 * compared). */
static bool same_content(const json_t *a, const json_t *b)
{
	char *ka = write_key(a), *kb = write_key(b);
	bool same = ka && kb && strcmp(ka, kb) == 0;
	free(ka);
	free(kb);
	return same;
}

void crdconv_out(const struct proxy_resource *res, json_t *obj)
{
	char key[600], why[256];
	const json_t *conv, *orig;
	if (current && obj) {
		rv_key(obj, key, sizeof(key));
		conv = json_object_get(current->done, key);
		key_of(obj, key, sizeof(key));
		orig = json_object_get(current->originals, key);
		if (!conv && orig && same_content(orig, obj))
			conv = json_object_get(current->done, key);
		/* the object converted, or the same content under newer metadata
		 * (a delete's last state) */
		if (conv) {
			json_t *copy = json_deep_copy(conv);
			if (restore_meta(obj, copy, why, sizeof(why)) == 0) {
				json_object_clear(obj);
				json_object_update(obj, copy);
			}
			json_decref(copy);
			/* kube's schemaCoercingConverter: the converted object is
			 * pruned to the version's schema
			 * (customresource_handler.go, unstructuredSchemaCoercer.apply) */
			if (res->schema)
				crd_schema_prune(res->schema, obj, NULL);
		}
	}
	rstore_crd_out(res, obj);
}

/* ---- writes: the object to storage ---------------------------------------------- */

static const json_t *storage_schema(const json_t *crd)
{
	size_t i;
	json_t *v;
	json_array_foreach (obj_get(crd, "spec.versions"), i, v)
		if (json_is_true(json_object_get(v, "storage")))
			return obj_get(v, "schema.openAPIV3Schema");
	return NULL;
}

bool crdconv_write_ahead(struct req *r, const json_t *obj)
{
	struct conv_req *cr = conv_of(r);
	if (!r->http || r->q.dry_run || !crdconv_applies(r->res))
		return false; /* kube's dry run does not encode for storage */
	char *k = write_key(obj);
	bool ahead = !cr || !k || !json_object_get(cr->written, k);
	free(k);
	return ahead;
}

int crdconv_write(struct req *r, const json_t *obj)
{
	char msg[8192];
	struct conv_req *cr = conv_of(r);
	if (!crdconv_write_ahead(r, obj))
		return 0;
	if (!cr) {
		cr = calloc(1, sizeof(*cr));
		KB_REQUIRE(cr);
		cr->r = r;
		cr->done = json_object();
		cr->ext.free = conv_free;
		req_ext_add(r, &cr->ext);
	}
	const char *sv = storage_version(r->res->crd);
	json_decref(cr->sent);
	cr->sent = json_pack("[O]", obj);
	cr->writing = true;
	cr->list = false;
	snprintf(cr->desired, sizeof(cr->desired), "%s/%s", r->res->group, sv);
	snprintf(cr->in_gvk, sizeof(cr->in_gvk), "%s/%s, Kind=%s", r->res->group, r->res->version,
		 r->res->kind);
	cr->review = review_version(r->res->crd);
	if (!cr->review) {
		reply_status(r, 500, NULL, "no supported conversion review versions", NULL);
		return -EIO;
	}
	if (call_start(cr, msg, sizeof(msg)) < 0) {
		kb_warn("crdconv", "%s", msg);
		reply_status(r, 500, NULL, msg, NULL);
		return -EIO;
	}
	r->async = true; /* parked: on_answer serves it again */
	kb_http_req_on_abort(r->http, on_abort, r);
	return -EINPROGRESS;
}

void crdconv_in(const struct proxy_resource *res, json_t *obj)
{
	char *k = current ? write_key(obj) : NULL;
	const json_t *conv = k ? json_object_get(current->written, k) : NULL;
	char why[256];
	free(k);
	if (!conv && current) {
		/* a change of metadata only, not through write_validate (a delete's
		 * deletionTimestamp): the stored content under the new metadata,
		 * as kube's conversion keeps metadata (restoreObjectMeta) */
		char key[600];
		key_of(obj, key, sizeof(key));
		const json_t *orig = json_object_get(current->originals, key);
		if (orig) {
			json_t *out = json_deep_copy(orig);
			json_object_set(out, "metadata", json_object_get(obj, "metadata"));
			json_object_clear(obj);
			json_object_update(obj, out);
			json_decref(out);
			return;
		}
	}
	if (!conv) {
		rstore_version_in(res, obj); /* not through a request's write: as None */
		return;
	}
	json_t *out = json_deep_copy(conv);
	if (restore_meta(obj, out, why, sizeof(why)) == 0) {
		json_object_clear(obj);
		json_object_update(obj, out);
		const json_t *schema = storage_schema(res->crd);
		if (schema)
			crd_schema_prune(schema, obj, NULL);
	}
	json_decref(out);
}

/* ---- writes: the answer back in the request's version ---------------------------- */

/*
 * kube answers a write with the object decoded from what it stored, and
 * the decoding converts it back to the request's version: a second webhook
 * call (the storage codec's Decode through the CRD's converter,
 * k8s.io/apiextensions-apiserver pkg/apiserver/customresource_handler.go;
 * the same object unless the webhook does not round-trip). A failing call
 * answers kube's 500 although the write is stored, as kube's does.
 */
bool crdconv_reply(struct req *r, int code, const json_t *obj)
{
	struct conv_req *cr = conv_of(r);
	char msg[8192];
	json_t *stored = NULL;
	if (!cr || !json_object_size(cr->written) || cr->replying || !r->http || r->q.dry_run ||
	    r->as_scale || r->want_table || !obj || obj_str(obj, "metadata.deletionTimestamp"))
		return false;
	if (store_get(r->px->store, r->res->store_key, r->ns ? r->ns : "",
		      obj_str(obj, "metadata.name"), &stored) < 0)
		return false;
	const char *sv = storage_version(r->res->crd);
	json_decref(cr->sent);
	cr->sent = json_pack("[o]", stored);
	cr->writing = false;
	cr->replying = true;
	cr->reply_code = code;
	json_decref(cr->done);
	cr->done = json_object();
	snprintf(cr->desired, sizeof(cr->desired), "%s/%s", r->res->group, r->res->version);
	snprintf(cr->in_gvk, sizeof(cr->in_gvk), "%s/%s, Kind=%s", r->res->group, sv, r->res->kind);
	if (call_start(cr, msg, sizeof(msg)) < 0) {
		kb_warn("crdconv", "%s", msg);
		reply_status(r, 500, NULL, msg, NULL);
		return true;
	}
	r->async = true; /* parked: reply_converted answers it */
	kb_http_req_on_abort(r->http, on_abort, r);
	return true;
}

static void reply_converted(struct conv_req *cr, int err, long status, const char *body, size_t len)
{
	struct req *r = cr->r;
	char msg[8192], key[600], why[256];
	kb_http_req_on_abort(r->http, NULL, NULL);
	r->async = false;
	const json_t *stored = json_array_get(cr->sent, 0);
	if (take_answer(cr, err, status, body, len, msg, sizeof(msg)) < 0) {
		kb_warn("crdconv", "%s", msg);
		reply_status(r, 500, NULL, msg, NULL);
	} else {
		key_of(stored, key, sizeof(key));
		json_t *out = json_deep_copy(json_object_get(cr->done, key));
		if (out && restore_meta(stored, out, why, sizeof(why)) == 0) {
			if (r->res->schema) /* schemaCoercingConverter, as crdconv_out */
				crd_schema_prune(r->res->schema, out, NULL);
			rstore_crd_out(r->res, out);
			reply_json(r, cr->reply_code, out);
		} else {
			reply_status(r, 500, "InternalError", "the converted object is missing",
				     NULL);
		}
		json_decref(out);
	}
	req_free(r);
	targets_sweep();
}

/* ---- watches ---------------------------------------------------------------------- */

static struct conv_req *conv_new(struct req *r)
{
	struct conv_req *cr = calloc(1, sizeof(*cr));
	KB_REQUIRE(cr);
	cr->r = r;
	cr->done = json_object();
	cr->ext.free = conv_free;
	req_ext_add(r, &cr->ext);
	return cr;
}

static void watch_pop(struct conv_req *cr)
{
	struct conv_event *e = cr->events;
	cr->events = e->next;
	if (!cr->events)
		cr->events_tail = &cr->events;
	json_decref((json_t *)e->ev.obj);
	json_decref((json_t *)e->ev.prev);
	free(e);
}

/* Starts the conversion of the first queued event (its object and the one
 * before); on a failure the watch is told and ends. */
static void watch_pump(struct conv_req *cr)
{
	struct req *r = cr->r;
	char msg[8192];
	if (cr->hc || !cr->events)
		return;
	const struct store_event *ev = &cr->events->ev;
	const char *sv = storage_version(r->res->crd);
	json_decref(cr->sent);
	cr->sent = json_array();
	if (ev->obj && strcmp(gv_of(ev->obj), cr->desired) != 0)
		json_array_append(cr->sent, (json_t *)ev->obj);
	if (ev->prev && strcmp(gv_of(ev->prev), cr->desired) != 0)
		json_array_append(cr->sent, (json_t *)ev->prev);
	cr->writing = false;
	cr->watching = true;
	cr->list = json_array_size(cr->sent) > 1;
	snprintf(cr->in_gvk, sizeof(cr->in_gvk), "%s/%s, Kind=%s", r->res->group, sv, r->res->kind);
	cr->review = review_version(r->res->crd);
	if (!cr->review)
		snprintf(msg, sizeof(msg), "no supported conversion review versions");
	if (cr->review && call_start(cr, msg, sizeof(msg)) == 0)
		return;
	kb_warn("crdconv", "%s", msg);
	cr->deliver(cr->deliver_arg, NULL, msg); /* the watch closes: cr is gone */
}

static void watch_answer(struct conv_req *cr, int err, long status, const char *body, size_t len)
{
	char msg[8192];
	json_decref(cr->done);
	cr->done = NULL;
	json_decref(cr->originals);
	cr->originals = json_object();
	for (size_t i = 0; i < json_array_size(cr->sent); i++) {
		char key[600];
		key_of(json_array_get(cr->sent, i), key, sizeof(key));
		json_object_set(cr->originals, key, json_array_get(cr->sent, i));
	}
	if (take_answer(cr, err, status, body, len, msg, sizeof(msg)) < 0) {
		kb_warn("crdconv", "%s", msg);
		cr->deliver(cr->deliver_arg, NULL, msg); /* the watch closes: cr is gone */
		return;
	}
	/* an event's object and the one before share namespace/name: the
	 * object's conversion is delivered first, then the previous one's */
	current = cr;
	int rc = cr->deliver(cr->deliver_arg, &cr->events->ev, NULL);
	current = NULL;
	if (rc < 0)
		return; /* the watch closed: cr is gone */
	watch_pop(cr);
	targets_sweep();
	watch_pump(cr);
}

void crdconv_watch_event(struct req *r, const struct store_event *ev, crdconv_deliver_fn deliver,
			 void *arg)
{
	struct conv_req *cr = conv_of(r);
	if (!cr)
		cr = conv_new(r);
	if (!cr->events_tail)
		cr->events_tail = &cr->events;
	cr->deliver = deliver;
	cr->deliver_arg = arg;
	snprintf(cr->desired, sizeof(cr->desired), "%s/%s", r->res->group, r->res->version);
	struct conv_event *e = calloc(1, sizeof(*e));
	KB_REQUIRE(e);
	e->ev = *ev;
	e->ev.obj = ev->obj ? json_deep_copy(ev->obj) : NULL;
	e->ev.prev = ev->prev ? json_deep_copy(ev->prev) : NULL;
	*cr->events_tail = e;
	cr->events_tail = &e->next;
	watch_pump(cr);
}

bool crdconv_watch_busy(const struct req *r)
{
	const struct conv_req *cr = conv_of(r);
	return cr && cr->events;
}
