/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Events the controllers record, as kube's controller-manager does through
 * client-go's recorder: a core/v1 Event named "<object>.<hex nanoseconds>"
 * whose source and reportingComponent are the controller ("Scaled up
 * replica set web-5d8f from 0 to 2", "Created pod: web-5d8f-x2b9q"). An
 * event equal to one recorded before (same object, type, reason and
 * message) counts up that event instead (the recorder's correlator).
 *
 * The event TTL: kube-apiserver keeps an event for --event-ttl (one hour)
 * after its last write. Here a sweep once a minute deletes the events,
 * the syncer's and the clients' included, last written before that.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/client.h"

#define EVENT_TTL_DEFAULT 3600
#define SWEEP_EVERY_MS    60000
#define REMEMBERED_MAX    4096

void ctrl_event(struct ctrl *c, const json_t *obj, const char *api_version, const char *kind,
		const char *type, const char *reason, const char *component, const char *fmt, ...)
{
	char msg[1024], key[1400], ts[40], name[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	const char *ns = ctrl_ns(obj), *uid = ctrl_uid(obj);
	ctrl_now_str(ts, sizeof(ts));
	snprintf(key, sizeof(key), "%s|%s|%s|%s", uid ? uid : "", type, reason, msg);
	/* the same event again: count it on the first one */
	const char *seen = kmap_get(c->events, key);
	json_t *old = NULL;
	if (seen && proxy_object_get(c->px, "", "v1", "events", ns, seen, &old) == 0) {
		json_object_set_new(old, "count", json_integer(ctrl_int(old, "count", 1) + 1));
		json_object_set_new(old, "lastTimestamp", json_string(ts));
		proxy_object_update(c->px, "", "v1", "events", old, component, NULL);
		json_decref(old);
		return;
	}
	/* client-go names an event after its object and the time in hex
	 * nanoseconds; one later than the last keeps names apart */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	if (t <= c->last_event_ns)
		t = c->last_event_ns + 1;
	c->last_event_ns = t;
	snprintf(name, sizeof(name), "%.*s.%llx", 240, ctrl_name(obj), (unsigned long long)t);
	const char *rv = json_string_value(ctrl_path(obj, "metadata.resourceVersion"));
	json_t *ev = json_pack(
	    "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:i,s:s,s:s,s:{s:s},"
	    "s:s,s:s}",
	    "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", ns,
	    "involvedObject", "kind", kind, "namespace", ns, "name", ctrl_name(obj), "uid",
	    uid ? uid : "", "apiVersion", api_version, "resourceVersion", rv ? rv : "", "type",
	    type, "reason", reason, "message", msg, "count", 1, "firstTimestamp", ts,
	    "lastTimestamp", ts, "source", "component", component, "reportingComponent", component,
	    "reportingInstance", "");
	if (!ev)
		return;
	/* as kube's event recorder's, through the webhooks (-EINPROGRESS: on
	 * its way) */
	int rc = proxy_object_create_admitted(c->px, "", "v1", "events", ev, component, NULL, NULL,
					      NULL);
	json_decref(ev);
	if (rc < 0 && rc != -EINPROGRESS) {
		kb_debug("ctrl", "event %s/%s %s: %s", ns, name, reason, strerror(-rc));
		return;
	}
	if (kmap_size(c->events) >= REMEMBERED_MAX) { /* forget the old ones */
		struct kmap *fresh = kmap_new(free);
		if (fresh) {
			kmap_free(c->events);
			c->events = fresh;
		}
	}
	kmap_put(c->events, key, strdup(name));
}

/* When an event was last written: its lastTimestamp, series or eventTime,
 * else its creation. */
static time_t last_write(const json_t *ev)
{
	const char *paths[] = {"series.lastObservedTime", "lastTimestamp", "eventTime",
			       "metadata.creationTimestamp"};
	time_t best = 0;
	for (size_t i = 0; i < KB_ARRAY_SIZE(paths); i++) {
		const char *s = json_string_value(ctrl_path(ev, paths[i]));
		time_t t = s ? ctrl_time(s) : 0;
		if (t > best)
			best = t;
	}
	return best;
}

void ctrl_events_expire(struct ctrl *c)
{
	long ttl = c->event_ttl > 0 ? c->event_ttl : EVENT_TTL_DEFAULT;
	/* once a minute, or twice a TTL when that is shorter */
	uint64_t every =
	    (uint64_t)ttl * 500u < SWEEP_EVERY_MS ? (uint64_t)ttl * 500u : SWEEP_EVERY_MS;
	uint64_t now_ms = kb_now_ms();
	if (c->last_sweep_ms && now_ms - c->last_sweep_ms < every)
		return;
	c->last_sweep_ms = now_ms;
	time_t now = time(NULL);
	json_t *all = ctrl_list(c, "/events", NULL);
	size_t i, gone = 0;
	json_t *ev;
	json_array_foreach (all, i, ev) {
		time_t t = last_write(ev);
		if (!t || t + ttl > now)
			continue;
		if (proxy_object_delete(c->px, "", "v1", "events", ctrl_ns(ev), ctrl_name(ev),
					ctrl_uid(ev), NULL, NULL) == 0)
			gone++;
	}
	json_decref(all);
	if (gone)
		kb_info("ctrl", "%zu event(s) older than the event TTL (%lds) deleted", gone, ttl);
}

void ctrl_set_event_ttl(ctrl_t *c, long seconds)
{
	c->event_ttl = seconds;
	c->last_sweep_ms = 0; /* a new TTL applies at the next tick */
}
