/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Large-list benchmark client (bench/run.sh 6): one kept-alive TLS
 * connection, requests one after another, each timed; prints one line of
 * key=value pairs.
 *
 *   bulk create -p PORT --cert F --key F --body FILE -n N [--prefix P]
 *               [--start S] [-u PATH]
 *       N POSTs of FILE with "@NAME@" replaced by P-S .. P-(S+N-1); every
 *       answer must be 201.
 *   bulk get    ... -n N [--prefix P] [--start S] [-u PATH]
 *       N GETs of PATH/P-i; every answer must be 200.
 *   bulk list   ... -u PATH [--accept A] [--limit L]
 *       GET PATH (with limit=L and then each continue token until the last
 *       page, as kubectl's chunked lists do); the time to the last byte.
 *   bulk watch  ... -u PATH -n N
 *       GET PATH (a watch) and the time until N ADDED events came.
 *
 * Bodies are read incrementally (a list of 10,000 pods is tens of MB), and
 * only the head of each page is looked at (its "continue" token), so the
 * client does little beside the TLS decryption.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bn.h"

#define IO_TIMEOUT_NS (120LL * 1000000000)
#define MAX_PATH      4096

struct opts {
	const char *cmd, *cert, *key, *body, *prefix, *path, *accept, *label;
	int port, n, limit, start;
};

static void usage(void)
{
	fprintf(stderr, "usage: bulk create|get|list|watch -p PORT [--cert F --key F] [-n N] "
			"[--body FILE] [--prefix P] [-u PATH] [--accept A] [--limit L] "
			"[--label L]\n");
	exit(2);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},
	    {"body", required_argument, NULL, 'b'},
	    {"prefix", required_argument, NULL, 'P'},
	    {"accept", required_argument, NULL, 'a'},
	    {"limit", required_argument, NULL, 'L'},
	    {"label", required_argument, NULL, 'l'},
	    {"start", required_argument, NULL, 's'},
	    {NULL, 0, NULL, 0},
	};
	if (argc < 2)
		usage();
	*o = (struct opts){.cmd = argv[1],
			   .prefix = "bulk",
			   .path = "/api/v1/namespaces/default/pods",
			   .accept = "application/json"};
	o->label = o->cmd;
	int ch;
	optind = 2;
	while ((ch = getopt_long(argc, argv, "p:n:u:", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o->port = atoi(optarg); break;
		case 'n': o->n = atoi(optarg); break;
		case 'u': o->path = optarg; break;
		case 'C': o->cert = optarg; break;
		case 'K': o->key = optarg; break;
		case 'b': o->body = optarg; break;
		case 'P': o->prefix = optarg; break;
		case 'a': o->accept = optarg; break;
		case 'L': o->limit = atoi(optarg); break;
		case 'l': o->label = optarg; break;
		case 's': o->start = atoi(optarg); break;
		default: usage();
		}
	}
	if (!o->port)
		usage();
}

static long long body_bytes; /* body bytes received, all requests */

/* Waits for the socket, then moves what it holds into c->in. */
static int pump(struct bn_conn *c, int64_t deadline)
{
	if (bn_conn_flush(c) < 0)
		return -EIO;
	int left = (int)((deadline - bn_mono_ns()) / 1000000);
	if (left <= 0)
		return -ETIMEDOUT;
	struct pollfd p = {.fd = c->fd, .events = POLLIN | (c->out.len ? POLLOUT : 0)};
	if (poll(&p, 1, left) < 0 && errno != EINTR)
		return -errno;
	return bn_conn_read(c);
}

/* After the last chunk: the CRLF that ends the message (no trailers). */
static int end_chunked(struct bn_conn *c, int64_t deadline)
{
	int rc = 0;
	while (rc >= 0 && c->in.len < 2)
		rc = pump(c, deadline);
	if (rc < 0)
		return rc;
	if (memcmp(c->in.data, "\r\n", 2) != 0)
		return -EPROTO;
	bn_buf_consume(&c->in, 2);
	return 0;
}

/*
 * Sends `req` and reads the answer's head into *r and its body into `body`
 * (decoded when chunked; at most `keep` bytes of it kept). With on_data, the
 * body is handed over as it comes and the read stops when it returns
 * nonzero. Returns 0 or -errno.
 */
static int exchange(struct bn_conn *c, const char *req, size_t len, struct bn_resp *r,
		    struct bn_buf *body, size_t keep, int (*on_data)(struct bn_buf *, void *),
		    void *arg)
{
	int64_t deadline = bn_mono_ns() + IO_TIMEOUT_NS;
	int rc = bn_conn_send(c, req, len);
	while (rc >= 0 &&
	       (rc = bn_http_parse(c->in.data ? c->in.data : "", c->in.len, true, r)) == 0)
		rc = pump(c, deadline);
	if (rc < 0)
		return rc;
	bn_buf_consume(&c->in, r->head_len);
	struct bn_dechunk dc = {0};
	long long want = r->content_length < 0 ? 0 : r->content_length, got = 0;
	for (;;) {
		size_t n = c->in.len;
		if (r->chunked) {
			size_t had = body->len;
			long used = bn_dechunk(&dc, c->in.data ? c->in.data : "", n, body);
			if (used < 0)
				return -EPROTO;
			n = (size_t)used;
			body_bytes += (long long)(body->len - had);
		} else {
			if ((long long)n > want - got)
				n = (size_t)(want - got);
			if (body->len < keep)
				bn_buf_append(body, c->in.data, n);
			got += (long long)n;
			body_bytes += (long long)n;
		}
		bn_buf_consume(&c->in, n);
		if (on_data && on_data(body, arg))
			return 0;
		if (r->chunked && bn_dechunk_done(&dc))
			return end_chunked(c, deadline);
		if (!r->chunked && got >= want)
			return 0;
		if (body->len > keep) { /* the first `keep` bytes stay */
			body->len = keep;
			body->data[keep] = '\0';
		}
		if ((rc = pump(c, deadline)) < 0)
			return rc;
	}
}

static int request(const struct opts *o, struct bn_conn *c, const char *method, const char *path,
		   const char *payload, size_t plen, struct bn_buf *body, size_t keep,
		   struct bn_resp *r)
{
	char head[MAX_PATH + 512];
	int n = snprintf(head, sizeof(head),
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: %s\r\n"
			 "User-Agent: kubicle-bench-bulk\r\n%s",
			 method, path, o->port, o->accept,
			 payload ? "Content-Type: application/json\r\n" : "");
	struct bn_buf req = {0};
	bn_buf_append(&req, head, (size_t)n);
	n = snprintf(head, sizeof(head), "Content-Length: %zu\r\n\r\n", plen);
	bn_buf_append(&req, head, (size_t)n);
	if (payload)
		bn_buf_append(&req, payload, plen);
	int rc = exchange(c, req.data, req.len, r, body, keep, NULL, NULL);
	bn_buf_free(&req);
	return rc;
}

/* ---- create, get ---- */

static void print_times(const struct opts *o, double *ms, int n, double total_s, int bad)
{
	double p50 = bn_quantile(ms, (size_t)n, 0.5), p99 = bn_quantile(ms, (size_t)n, 0.99);
	printf("%s: n=%d total_s=%.3f per_s=%.0f p50_ms=%.3f p99_ms=%.3f bad=%d\n", o->label, n,
	       total_s, n / total_s, p50, p99, bad);
}

static int run_each(const struct opts *o, struct bn_conn *c)
{
	bool create = strcmp(o->cmd, "create") == 0;
	struct bn_buf tmpl = {0}, body = {0}, obj = {0};
	const char *mark = NULL;
	if (create && (!o->body || bn_buf_read_file(&tmpl, o->body) < 0 ||
		       !(mark = strstr(tmpl.data, "@NAME@")))) {
		fprintf(stderr, "bulk: --body FILE with @NAME@ needed\n");
		return 1;
	}
	double *ms = calloc((size_t)o->n, sizeof(*ms));
	int bad = 0;
	char path[MAX_PATH], name[256];
	int64_t t0 = bn_mono_ns();
	for (int i = 0; i < o->n; i++) {
		struct bn_resp r;
		snprintf(name, sizeof(name), "%s-%d", o->prefix, o->start + i);
		int64_t s = bn_mono_ns();
		int rc;
		body.len = 0;
		if (create) {
			obj.len = 0;
			bn_buf_append(&obj, tmpl.data, (size_t)(mark - tmpl.data));
			bn_buf_append(&obj, name, strlen(name));
			bn_buf_append(&obj, mark + 6, strlen(mark + 6));
			rc = request(o, c, "POST", o->path, obj.data, obj.len, &body, 0, &r);
		} else {
			snprintf(path, sizeof(path), "%s/%s", o->path, name);
			rc = request(o, c, "GET", path, NULL, 0, &body, 0, &r);
		}
		if (rc < 0) {
			fprintf(stderr, "bulk: %s %d: %s\n", o->cmd, i, strerror(-rc));
			return 1;
		}
		ms[i] = (double)(bn_mono_ns() - s) / 1e6;
		bad += r.status != (create ? 201 : 200);
	}
	print_times(o, ms, o->n, (double)(bn_mono_ns() - t0) / 1e9, bad);
	free(ms);
	bn_buf_free(&tmpl);
	bn_buf_free(&body);
	bn_buf_free(&obj);
	return bad ? 1 : 0;
}

/* ---- list ---- */

/* The page's continue token (in its metadata, before any item) into tok;
 * empty on the last page. */
static void continue_token(const struct bn_buf *b, char *tok, size_t len)
{
	tok[0] = '\0';
	const char *k = b->data ? strstr(b->data, "\"continue\":\"") : NULL;
	if (!k)
		return;
	k += strlen("\"continue\":\"");
	const char *e = strchr(k, '"');
	if (e && (size_t)(e - k) < len) {
		memcpy(tok, k, (size_t)(e - k));
		tok[e - k] = '\0';
	}
}

static int run_list(const struct opts *o, struct bn_conn *c)
{
	char path[MAX_PATH], tok[2048] = "";
	struct bn_buf body = {0};
	int pages = 0, bad = 0;
	long long bytes0 = body_bytes;
	int64_t t0 = bn_mono_ns();
	do {
		int n = snprintf(path, sizeof(path), "%s", o->path);
		if (o->limit)
			n += snprintf(path + n, sizeof(path) - (size_t)n, "%slimit=%d",
				      strchr(o->path, '?') ? "&" : "?", o->limit);
		if (tok[0])
			snprintf(path + n, sizeof(path) - (size_t)n, "&continue=%s", tok);
		struct bn_resp r;
		body.len = 0;
		/* keeps only the page's first 4 KiB: its metadata */
		int rc = request(o, c, "GET", path, NULL, 0, &body, 4096, &r);
		if (rc < 0) {
			fprintf(stderr, "bulk: list: %s\n", strerror(-rc));
			return 1;
		}
		bad += r.status != 200;
		pages++;
		continue_token(&body, tok, sizeof(tok));
	} while (tok[0] && o->limit && !bad);
	double s = (double)(bn_mono_ns() - t0) / 1e9;
	printf("%s: pages=%d total_ms=%.1f bytes=%lld bad=%d\n", o->label, pages, s * 1e3,
	       body_bytes - bytes0, bad);
	bn_buf_free(&body);
	return bad ? 1 : 0;
}

/* ---- watch ---- */

struct watch_count {
	int added, want;
	size_t scanned;
};

/* Counts ADDED events in the decoded stream (one JSON object a line). */
static int count_added(struct bn_buf *b, void *arg)
{
	struct watch_count *w = arg;
	static const char key[] = "{\"type\":\"ADDED\"";
	char *line = b->data, *nl;
	while (line && (nl = memchr(line, '\n', b->len - (size_t)(line - b->data))) != NULL) {
		w->added += strncmp(line, key, sizeof(key) - 1) == 0;
		line = nl + 1;
	}
	if (line)
		bn_buf_consume(b, (size_t)(line - b->data));
	return w->added >= w->want;
}

static int run_watch(const struct opts *o, struct bn_conn *c)
{
	char head[MAX_PATH + 256];
	int n = snprintf(head, sizeof(head),
			 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: application/json\r\n"
			 "User-Agent: kubicle-bench-bulk\r\n\r\n",
			 o->path, o->port);
	struct bn_buf body = {0};
	struct bn_resp r;
	struct watch_count w = {.want = o->n};
	int64_t t0 = bn_mono_ns();
	int rc = exchange(c, head, (size_t)n, &r, &body, SIZE_MAX, count_added, &w);
	double ms = (double)(bn_mono_ns() - t0) / 1e6;
	if (rc < 0 || r.status != 200) {
		fprintf(stderr, "bulk: watch: %s (status %d)\n", strerror(rc < 0 ? -rc : EPROTO),
			rc < 0 ? 0 : r.status);
		return 1;
	}
	printf("%s: added=%d total_ms=%.1f\n", o->label, w.added, ms);
	bn_buf_free(&body);
	return w.added >= w.want ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct opts o;
	parse_opts(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	SSL_CTX *ctx = bn_ssl_ctx(o.cert, o.key);
	struct bn_conn c;
	int fd = ctx ? bn_tcp_connect("127.0.0.1", o.port) : -1;
	if (fd < 0 || bn_conn_init(&c, ctx, fd) < 0 || bn_conn_handshake(&c, 5000) < 0) {
		fprintf(stderr, "bulk: cannot connect to port %d\n", o.port);
		return 1;
	}
	int rc;
	if (strcmp(o.cmd, "create") == 0 || strcmp(o.cmd, "get") == 0)
		rc = run_each(&o, &c);
	else if (strcmp(o.cmd, "list") == 0)
		rc = run_list(&o, &c);
	else if (strcmp(o.cmd, "watch") == 0)
		rc = run_watch(&o, &c);
	else
		usage();
	bn_conn_close(&c);
	SSL_CTX_free(ctx);
	return rc;
}
