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

/* Writers of the event line; w_err remembers a failed append (out of
 * memory) so that audit_log takes the partial line back. */
static int w_err;

static void w_chr(struct kb_buf *b, char c)
{
	w_err |= kb_buf_append(b, &c, 1);
}

static void w_puts(struct kb_buf *b, const char *s)
{
	w_err |= kb_buf_puts(b, s);
}

/* A literal's bytes, its length known (no strlen: a line has some forty). */
#define W_LIT(b, lit) (w_err |= kb_buf_append((b), (lit), sizeof(lit) - 1))

static void w_str(struct kb_buf *b, const char *s)
{
	w_err |= kb_json_put_string(b, s);
}

static void w_json(struct kb_buf *b, const json_t *v)
{
	w_err |= kb_json_dump(v, b);
}

/* RFC 3339 with microseconds (kube's metav1.MicroTime); the date and time
 * of day are formatted once per second. */
static void micro_time(struct kb_buf *b, int64_t us)
{
	static time_t last = -1;
	static char day[64];
	time_t s = (time_t)(us / 1000000);
	if (s != last) {
		struct tm tm;
		gmtime_r(&s, &tm);
		snprintf(day, sizeof(day), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		last = s;
	}
	char frac[10];
	long f = (long)(us % 1000000);
	frac[0] = '.';
	for (int i = 6; i >= 1; i--, f /= 10)
		frac[i] = (char)('0' + f % 10);
	frac[7] = 'Z';
	frac[8] = '"';
	w_chr(b, '"');
	w_puts(b, day);
	w_err |= kb_buf_append(b, frac, 9);
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
	if (n >= len) /* cut as snprintf would */
		n = len - 1;
	memcpy(buf, peer, n);
	buf[n] = '\0';
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

/* ,"key":"value" (keys are this file's constants: plain ASCII, written as
 * they are, with the punctuation around them in one append; values are
 * escaped) */
#define put_field(b, key, value) \
	put_field_((b), ",\"" key "\":", sizeof(",\"" key "\":") - 1, (value))

static void put_field_(struct kb_buf *b, const char *head, size_t n, const char *value)
{
	w_err |= kb_buf_append(b, head, n);
	w_str(b, value);
}

/* The request's own identity (as req_user_info), written directly. */
static void put_user(struct kb_buf *b, const struct req *r)
{
	if (!r->user[0]) {
		W_LIT(b, "{\"username\":\"system:anonymous\","
			 "\"groups\":[\"system:unauthenticated\"]}");
		return;
	}
	W_LIT(b, "{\"username\":");
	w_str(b, r->user);
	W_LIT(b, ",\"groups\":[");
	for (int i = 0; i < r->ngroups; i++) {
		if (i)
			w_chr(b, ',');
		w_str(b, r->groups[i]);
	}
	w_chr(b, ']');
	if (r->uid)
		put_field(b, "uid", r->uid);
	if (json_object_size(r->extra)) {
		W_LIT(b, ",\"extra\":");
		w_json(b, r->extra);
	}
	w_chr(b, '}');
}

static void put_object_ref(struct kb_buf *b, const struct req *r)
{
	W_LIT(b, ",\"objectRef\":{\"resource\":");
	w_str(b, r->res->plural);
	if (r->ns)
		put_field(b, "namespace", r->ns);
	if (r->name || (r->audit_name && *r->audit_name))
		put_field(b, "name", r->name ? r->name : r->audit_name);
	put_field(b, "apiGroup", r->res->group);
	put_field(b, "apiVersion", r->res->version);
	if (r->sub)
		put_field(b, "subresource", r->sub);
	w_chr(b, '}');
}

/*
 * The Event of one request as one JSON line, written straight into the
 * buffer (it is built for every request, so no object tree is made): the
 * fields in audit.k8s.io/v1 Event's order. Text from the wire (URI, user
 * agent) with invalid UTF-8 is written with U+FFFD, so no request can keep
 * its line out of the log.
 */
static void put_event(struct kb_buf *b, const struct req *r, int code)
{
	char ip[80], vbuf[16];
	source_ip(r->http->peer, ip, sizeof(ip));
	W_LIT(b, "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\","
		 "\"level\":\"Metadata\"");
	put_field(b, "auditID", r->audit_id);
	put_field(b, "stage", r->q.watch && code == 200 ? "ResponseStarted" : "ResponseComplete");
	W_LIT(b, ",\"requestURI\":");
	if (r->http->query && r->http->query[0]) {
		struct kb_buf uri = {0};
		kb_buf_printf(&uri, "%s?%s", r->http->path, r->http->query);
		w_str(b, uri.data ? uri.data : "/");
		kb_buf_free(&uri);
	} else {
		w_str(b, r->http->path && r->http->path[0] ? r->http->path : "/");
	}
	put_field(b, "verb", audit_verb(r, vbuf, sizeof(vbuf)));
	W_LIT(b, ",\"user\":");
	if (r->real_user)
		w_json(b, r->real_user);
	else
		put_user(b, r);
	W_LIT(b, ",\"sourceIPs\":[");
	w_str(b, ip);
	w_chr(b, ']');
	if (r->real_user) {
		W_LIT(b, ",\"impersonatedUser\":");
		put_user(b, r);
	}
	const char *ua = kb_http_req_header(r->http, "user-agent");
	if (ua)
		put_field(b, "userAgent", ua);
	if (r->res)
		put_object_ref(b, r);
	char num[16];
	int i = (int)sizeof(num);
	num[--i] = '\0';
	num[--i] = '}';
	unsigned u = code > 0 ? (unsigned)code : 0;
	do
		num[--i] = (char)('0' + u % 10);
	while ((u /= 10) && i > 0);
	W_LIT(b, ",\"responseStatus\":{\"metadata\":{},\"code\":");
	w_puts(b, num + i);
	W_LIT(b, ",\"requestReceivedTimestamp\":");
	micro_time(b, r->recv_us ? r->recv_us : kb_now_us());
	W_LIT(b, ",\"stageTimestamp\":");
	micro_time(b, kb_now_us());
	/* the authorizer's two first, as kube's filter adds them before admission */
	size_t n = json_object_size(r->audit_annotations);
	if (r->authz_decision || n) {
		W_LIT(b, ",\"annotations\":{");
		if (r->authz_decision) {
			W_LIT(b, "\"authorization.k8s.io/decision\":");
			w_str(b, r->authz_decision);
			put_field(b, "authorization.k8s.io/reason",
				  r->authz_reason ? r->authz_reason : "");
		}
		const char *k;
		json_t *v;
		bool first = !r->authz_decision;
		json_object_foreach (r->audit_annotations, k, v) {
			if (!first)
				w_chr(b, ',');
			first = false;
			w_str(b, k);
			w_chr(b, ':');
			w_json(b, v);
		}
		w_chr(b, '}');
	}
	W_LIT(b, "}\n");
}

void audit_annotate(struct req *r, const char *key, const char *value)
{
	if (!r->px || !r->px->audit)
		return;
	if (!r->audit_annotations)
		r->audit_annotations = json_object();
	json_object_set_new(r->audit_annotations, key, json_string(value));
}

void audit_authz(struct req *r, bool allow, const char *why)
{
	if (!r->px || !r->px->audit)
		return;
	r->authz_decision = allow ? "allow" : "forbid";
	free(r->authz_reason);
	r->authz_reason = strdup(why ? why : "");
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
	size_t mark = a->buf.len;
	w_err = 0;
	put_event(&a->buf, r, code);
	if (w_err) { /* a line that failed is taken back */
		a->buf.len = mark;
		if (a->buf.data)
			a->buf.data[mark] = '\0';
	}
	if (a->buf.len >= AUDIT_FLUSH_AT)
		flush(a);
	else if (!a->check_active) {
		uv_check_start(&a->check, on_check);
		a->check_active = true;
	}
}
