/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The audit trail: one audit.k8s.io/v1 Event per request, as a JSON line in
 * DIR/audit.log, at level Metadata (who, what, when, the answer's code;
 * never a request or response body, so secrets' data never appears).
 *
 * DESIGN: lines are appended to a memory buffer and written by a uv_check
 * handle once per loop iteration (or at once past 256 KiB), with plain
 * write(2) and no fsync, so no request waits on the disk. When the file
 * passes the size limit (100 MiB, or KUBICLE_AUDIT_MAX_BYTES) it is rotated
 * to audit.log.1 ... audit.log.N (N = 5, or KUBICLE_AUDIT_KEEP).
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/core/core.h"

#define AUDIT_FLUSH_AT (256 * 1024)

struct audit {
	int fd;
	char path[1100];
	struct kb_buf buf;
	off_t size;
	off_t max_size;
	int keep;
	uv_check_t check;
	bool check_active;
};

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	long n = v ? strtol(v, NULL, 10) : 0;
	return n > 0 ? n : def;
}

static int open_file(struct audit *a)
{
	a->fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (a->fd < 0)
		return -errno;
	struct stat st;
	a->size = fstat(a->fd, &st) == 0 ? st.st_size : 0;
	return 0;
}

static void rotate(struct audit *a)
{
	char from[1200], to[1200];
	close(a->fd);
	a->fd = -1;
	for (int i = a->keep - 1; i >= 1; i--) {
		snprintf(from, sizeof(from), "%s.%d", a->path, i);
		snprintf(to, sizeof(to), "%s.%d", a->path, i + 1);
		rename(from, to);
	}
	snprintf(to, sizeof(to), "%s.1", a->path);
	rename(a->path, to);
	if (open_file(a) < 0)
		kb_err("audit", "cannot reopen %s: %s", a->path, strerror(errno));
}

static void flush(struct audit *a)
{
	size_t off = 0;
	while (a->fd >= 0 && off < a->buf.len) {
		ssize_t n = write(a->fd, a->buf.data + off, a->buf.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			kb_err("audit", "write %s: %s", a->path, strerror(errno));
			break;
		}
		off += (size_t)n;
		a->size += n;
	}
	a->buf.len = 0;
	if (a->fd >= 0 && a->size >= a->max_size)
		rotate(a);
}

static void on_check(uv_check_t *h)
{
	struct audit *a = h->data;
	flush(a);
	uv_check_stop(h);
	a->check_active = false;
}

int audit_open(struct proxy *px)
{
	if (!px->data_dir[0])
		return 0;
	struct audit *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	snprintf(a->path, sizeof(a->path), "%s/audit.log", px->data_dir);
	a->max_size = env_long("KUBICLE_AUDIT_MAX_BYTES", 100L * 1024 * 1024);
	a->keep = (int)env_long("KUBICLE_AUDIT_KEEP", 5);
	int rc = open_file(a);
	if (rc < 0) {
		free(a);
		return rc;
	}
	uv_check_init(px->loop, &a->check);
	a->check.data = a;
	uv_unref((uv_handle_t *)&a->check);
	px->audit = a;
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct audit *a = h->data;
	kb_buf_free(&a->buf);
	free(a);
}

void audit_close(struct proxy *px)
{
	struct audit *a = px->audit;
	if (!a)
		return;
	flush(a);
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	px->audit = NULL;
	uv_close((uv_handle_t *)&a->check, on_closed);
}

static void micro_time(int64_t us, char *buf, size_t len)
{
	time_t s = (time_t)(us / 1000000);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(us % 1000000));
}

/* "ip" out of "ip:port" or "[ip]:port". */
static void source_ip(const char *peer, char *buf, size_t len)
{
	const char *end = strrchr(peer, ':');
	size_t n = end ? (size_t)(end - peer) : strlen(peer);
	if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
		peer++;
		n -= 2;
	}
	snprintf(buf, len, "%.*s", (int)n, peer);
}

static const char *audit_verb(const struct req *r, char *buf, size_t len)
{
	if (r->verb && r->res)
		return r->verb;
	snprintf(buf, len, "%s", r->http->method);
	for (char *p = buf; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return buf;
}

static json_t *object_ref(const struct req *r)
{
	if (!r->res)
		return NULL;
	json_t *o = json_pack("{s:s}", "resource", r->res->plural);
	if (r->ns)
		json_object_set_new(o, "namespace", json_string(r->ns));
	if (r->name || (r->audit_name && *r->audit_name))
		json_object_set_new(o, "name", json_string(r->name ? r->name : r->audit_name));
	json_object_set_new(o, "apiGroup", json_string(r->res->group));
	json_object_set_new(o, "apiVersion", json_string(r->res->version));
	if (r->sub)
		json_object_set_new(o, "subresource", json_string(r->sub));
	return o;
}

/* The Event of one request (new reference). */
static json_t *event_of(const struct req *r, int code)
{
	char recv[64], stage[64], ip[80], vbuf[16];
	micro_time(r->recv_us ? r->recv_us : kb_now_us(), recv, sizeof(recv));
	micro_time(kb_now_us(), stage, sizeof(stage));
	source_ip(r->http->peer, ip, sizeof(ip));
	struct kb_buf uri = {0};
	kb_buf_puts(&uri, r->http->path);
	if (r->http->query && r->http->query[0])
		kb_buf_printf(&uri, "?%s", r->http->query);
	const char *ua = kb_http_req_header(r->http, "user-agent");
	json_t *ev = json_pack(
	    "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:[s]}", "kind", "Event", "apiVersion",
	    "audit.k8s.io/v1", "level", "Metadata", "auditID", r->audit_id, "stage",
	    r->q.watch && code == 200 ? "ResponseStarted" : "ResponseComplete", "requestURI",
	    uri.data ? uri.data : "/", "verb", audit_verb(r, vbuf, sizeof(vbuf)), "user",
	    r->real_user ? json_incref(r->real_user) : req_user_info(r), "sourceIPs", ip);
	if (r->real_user)
		json_object_set_new(ev, "impersonatedUser", req_user_info(r));
	kb_buf_free(&uri);
	if (ua)
		json_object_set_new(ev, "userAgent", json_string(ua));
	json_t *ref = object_ref(r);
	if (ref)
		json_object_set_new(ev, "objectRef", ref);
	json_object_set_new(ev, "responseStatus",
			    json_pack("{s:{},s:i}", "metadata", "code", code));
	json_object_set_new(ev, "requestReceivedTimestamp", json_string(recv));
	json_object_set_new(ev, "stageTimestamp", json_string(stage));
	if (r->audit_annotations)
		json_object_set(ev, "annotations", r->audit_annotations);
	return ev;
}

void audit_annotate(struct req *r, const char *key, const char *value)
{
	if (!r->px || !r->px->audit)
		return;
	if (!r->audit_annotations)
		r->audit_annotations = json_object();
	json_object_set_new(r->audit_annotations, key, json_string(value));
}

void audit_init(struct req *r)
{
	const char *id = kb_http_req_header(r->http, "audit-id");
	size_t n = id ? strlen(id) : 0;
	bool ok = n > 0 && n < sizeof(r->audit_id);
	for (size_t i = 0; ok && i < n; i++)
		ok = id[i] > 0x20 && id[i] < 0x7f;
	if (ok)
		memcpy(r->audit_id, id, n + 1);
	else
		kb_uuid(r->audit_id);
}

void audit_id_header(const struct req *r, struct kb_buf *hdr)
{
	if (r->audit_id[0])
		kb_buf_printf(hdr, "Audit-Id: %s\r\n", r->audit_id);
}

void audit_object_name(struct req *r, const char *name)
{
	if (!r->px || !r->px->audit || !name || r->audit_name)
		return;
	r->audit_name = strdup(name);
}

void audit_log(struct req *r, int code)
{
	struct audit *a = r->px ? r->px->audit : NULL;
	if (!a || r->audited || !r->http)
		return;
	r->audited = true;
	json_t *ev = event_of(r, code);
	size_t mark = a->buf.len;
	/* written straight into the buffer; a line that fails is taken back */
	if (kb_json_dump(ev, &a->buf) < 0 || kb_buf_puts(&a->buf, "\n") < 0) {
		a->buf.len = mark;
		if (a->buf.data)
			a->buf.data[mark] = '\0';
	}
	json_decref(ev);
	if (a->buf.len >= AUDIT_FLUSH_AT)
		flush(a);
	else if (!a->check_active) {
		uv_check_start(&a->check, on_check);
		a->check_active = true;
	}
}
