/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pods/log on the host stand-in (standin.h): it has no containers, so a
 * pod's log is whatever the test scheduler (tests/host/scheduler.py) wrote
 * into the pod's annotation kubicle.dev/log, cut by tailLines and
 * limitBytes. A follow ends at once, with the text there is. A real host's
 * kubelet serves real container logs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/host/standin.h"

#define LOG_ANNOTATION "kubicle.dev/log"

/* The log text, cut to the last `tail` lines (-1: all). */
static const char *tail_lines(const char *text, long tail)
{
	if (tail < 0)
		return text;
	const char *p = text + strlen(text);
	if (p > text && p[-1] == '\n')
		p--;
	long n = 0;
	while (p > text) {
		if (p[-1] == '\n' && ++n == tail)
			return p;
		p--;
	}
	return tail == 0 ? text + strlen(text) : text;
}

/* The last value of `key` in a raw query as a number; *out is left alone
 * when the key is absent. */
static void query_long(const char *query, const char *key, long *out)
{
	char *buf = strdup(query ? query : "");
	char *cur = buf, *k, *v;
	while (buf && kb_http_query_next(&cur, &k, &v))
		if (strcmp(k, key) == 0)
			*out = strtol(v, NULL, 10);
	free(buf);
}

void standin_pod_log(void *arg, kb_http_req_t *req, const char *ns, const char *name,
		     const char *query)
{
	struct standin *st = arg;
	json_t *pod = NULL;
	int rc = proxy_object_get(st->proxy, "", "v1", "pods", ns, name, &pod);
	if (rc < 0) { /* the proxy has just read it: a delete in between */
		standin_reply_status(req, 404, "NotFound", "pods \"%s\" not found", name);
		return;
	}
	const char *text = json_string_value(
	    json_object_get(kb_json_path(pod, "metadata.annotations"), LOG_ANNOTATION));
	long tail = -1, limit = -1;
	query_long(query, "tailLines", &tail);
	query_long(query, "limitBytes", &limit);
	const char *out = tail_lines(text ? text : "", tail);
	size_t len = strlen(out);
	if (limit >= 0 && (size_t)limit < len)
		len = (size_t)limit;
	kb_http_respond(req, 200, "text/plain", "Cache-Control: no-cache, private\r\n", out, len);
	json_decref(pod);
}
