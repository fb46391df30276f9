/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch benchmark: opens N TLS connections each watching pods in one
 * namespace from the resourceVersion of a list, reads the server's PSS
 * before and after, then creates pods one at a time and measures, for every
 * (create, watcher) pair, the delay from the create's response to that
 * watcher receiving the ADDED event. Prints one line of key=value pairs.
 *
 *   watchers -p PORT --cert F --key F --body TEMPLATE --pid SERVER_PID
 *            [--ns default] [-n 1000] [--creates 50] [--warmup 1] [--label L]
 *            [--per-create] [--pause-ms MS] [--hold-ms MS]
 *   watchers -p PORT --cert F --key F --pid SERVER_PID --idle PATH [-n 1000]
 *
 * The first --warmup creates are made and waited for but not counted (the
 * server's first event after the watches opened also pays for setting up
 * its send batch). fanout_* is, per counted create, the delay of its last
 * event: how long one event takes to reach every watcher (median and
 * worst over the creates). --per-create also prints, to stderr, each
 * create's round trip and the delays of its first, middle and last event,
 * with the time it was sent (to match a disturbed one with a trace).
 * --pause-ms waits that long once every watch streams, before the first
 * create, after saying so on stderr (time to zero a profiler's counters).
 * --hold-ms sleeps that long after each create's answer before reading the
 * events (they wait in the sockets, already stamped): the fan-out then
 * runs with this client idle (a diagnostic: what the client's reading
 * during the fan-out does to the server's figures).
 * server_cpu_per_create_ms and client_cpu_per_create_ms are the CPU time
 * of the server (all its threads, as the scheduler counts it: with the
 * softirq work of loopback done in its context) and of this client over
 * the counted creates, per create: what one event to all watchers costs
 * each side, whatever else runs on their cores.
 *
 * The second form is the memory reference: N connections that each GET PATH
 * once and then stay open, idle (for a server without watches, e.g. nginx).
 *
 * Both ends of each delay are kernel receive timestamps (SO_TIMESTAMPNS) of
 * the bytes that completed the response or carried the event, so the order
 * in which this single-threaded client gets round to each socket does not
 * skew the figures; a negative delay means the event arrived before the
 * response. The delay from sending the create request is printed too
 * (sent_*). TEMPLATE is a pod whose first "@NAME@" is replaced.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bn.h"

#define MAX_EVENTS       512
#define MAX_HANDSHAKING  64
#define NAME_PREFIX      "bwatch-"
#define EVENT_TIMEOUT_NS (5LL * 1000000000)
#define OPEN_TIMEOUT_NS  (30LL * 1000000000)

enum wstate { WS_HANDSHAKE, WS_SENT, WS_STREAMING, WS_DEAD };

struct opts {
	const char *cert, *key, *ns, *body_file, *label, *idle_path;
	int port, n, creates, warmup, pid, pause_ms, hold_ms;
	bool per_create;
};

struct watcher {
	struct bn_conn conn;
	int id;
	enum wstate state;
	bool chunked;
	bool want_out; /* EPOLLOUT in its epoll interest */
	struct bn_dechunk dc;
	struct bn_buf lines; /* de-chunked stream, up to an incomplete line */
};

struct bench {
	const struct opts *o;
	SSL_CTX *ctx;
	int epfd;
	struct watcher *w;
	struct bn_conn ctl; /* the connection that lists and creates */
	char *rv;           /* resourceVersion of the list */
	struct bn_buf tmpl; /* pod template */
	int64_t *rx;        /* rx[create * n + watcher]: event receive time, 0 if not yet */
	int64_t *resp;      /* resp[create]: create response receive time */
	int64_t *sent;      /* sent[create]: when the create request was sent */
	int64_t srv_cpu_ns, cli_cpu_ns; /* CPU time over the counted creates */
	int opened, handshaking, streaming, dead, errors_seen;
	long got;           /* events received for the current create */
	size_t event_bytes; /* the newest ADDED line, with its newline */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: watchers -p PORT --cert F --key F --body TEMPLATE --pid PID "
		"[--ns NS] [-n N] [--creates M] [--label L] [--idle PATH] [--per-create]\n");
	exit(2);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},
	    {"ns", required_argument, NULL, 's'},
	    {"body", required_argument, NULL, 'b'},
	    {"creates", required_argument, NULL, 'm'},
	    {"pid", required_argument, NULL, 'P'},
	    {"label", required_argument, NULL, 'l'},
	    {"idle", required_argument, NULL, 'i'},
	    {"per-create", no_argument, NULL, 'v'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"pause-ms", required_argument, NULL, 'z'},
	    {"hold-ms", required_argument, NULL, 'H'},
	    {NULL, 0, NULL, 0},
	};
	*o =
	    (struct opts){.ns = "default", .n = 1000, .creates = 50, .warmup = 1, .label = "watch"};
	int ch;
	while ((ch = getopt_long(argc, argv, "p:n:", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o->port = atoi(optarg); break;
		case 'n': o->n = atoi(optarg); break;
		case 'C': o->cert = optarg; break;
		case 'K': o->key = optarg; break;
		case 's': o->ns = optarg; break;
		case 'b': o->body_file = optarg; break;
		case 'm': o->creates = atoi(optarg); break;
		case 'P': o->pid = atoi(optarg); break;
		case 'l': o->label = optarg; break;
		case 'i': o->idle_path = optarg; break;
		case 'v': o->per_create = true; break;
		case 'w': o->warmup = atoi(optarg); break;
		case 'z': o->pause_ms = atoi(optarg); break;
		case 'H': o->hold_ms = atoi(optarg); break;
		default: usage();
		}
	}
	if (o->port <= 0 || o->n <= 0 || o->creates <= 0 || o->warmup < 0 || !o->pid ||
	    (!o->body_file && !o->idle_path))
		usage();
}

/* ---- the control connection: list and creates ---- */

static int ctl_request(struct bench *b, const char *method, const char *path, const char *body,
		       struct bn_resp *r)
{
	char head[512];
	size_t blen = body ? strlen(body) : 0;
	int n = snprintf(head, sizeof(head),
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: application/json\r\n"
			 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
			 method, path, b->o->port, blen);
	struct bn_buf req = {0};
	bn_buf_append(&req, head, (size_t)n);
	if (body)
		bn_buf_append(&req, body, blen);
	int err = bn_http_roundtrip(&b->ctl, req.data, req.len, r, 10000);
	bn_buf_free(&req);
	return err;
}

static int list_rv(struct bench *b)
{
	char path[256];
	struct bn_resp r;
	struct bn_buf body = {0};
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", b->o->ns);
	int err = ctl_request(b, "GET", path, NULL, &r);
	if (err < 0 || r.status != 200) {
		fprintf(stderr, "watchers: list: %s status %d\n", strerror(-err), r.status);
		return -EPROTO;
	}
	bn_http_body(b->ctl.in.data, &r, &body);
	bn_buf_consume(&b->ctl.in, r.total_len);
	json_t *doc = json_loadb(body.data, body.len, 0, NULL);
	const char *rv =
	    json_string_value(json_object_get(json_object_get(doc, "metadata"), "resourceVersion"));
	b->rv = rv ? strdup(rv) : NULL;
	json_decref(doc);
	bn_buf_free(&body);
	return b->rv ? 0 : -EPROTO;
}

/* Creates pod number i; records the response's receive time. */
static int create_pod(struct bench *b, int i)
{
	char path[256], name[64];
	struct bn_resp r;
	struct bn_buf body = {0};
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", b->o->ns);
	snprintf(name, sizeof(name), NAME_PREFIX "%d", i);
	char *tok = strstr(b->tmpl.data, "@NAME@");
	bn_buf_append(&body, b->tmpl.data, (size_t)(tok - b->tmpl.data));
	bn_buf_append(&body, name, strlen(name));
	bn_buf_append(&body, tok + 6, strlen(tok + 6));
	b->sent[i] = bn_real_ns();
	int err = ctl_request(b, "POST", path, body.data, &r);
	bn_buf_free(&body);
	if (err < 0 || r.status != 201) {
		fprintf(stderr, "watchers: create %s: %s status %d\n%.*s\n", name, strerror(-err),
			r.status, (int)(b->ctl.in.len < 600 ? b->ctl.in.len : 600),
			b->ctl.in.data ? b->ctl.in.data : "");
		return -EPROTO;
	}
	b->resp[i] = b->ctl.rx_ns;
	bn_buf_consume(&b->ctl.in, r.total_len);
	return 0;
}

/* ---- watchers ---- */

static void mark_dead(struct bench *b, struct watcher *w, const char *why)
{
	if (w->state == WS_DEAD)
		return;
	if (b->dead < 5)
		fprintf(stderr, "watchers: watcher %d closed (%s)\n", w->id, why);
	if (w->state == WS_HANDSHAKE)
		b->handshaking--;
	if (w->state == WS_STREAMING)
		b->streaming--;
	w->state = WS_DEAD;
	b->dead++;
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, w->conn.fd, NULL);
	bn_conn_close(&w->conn);
}

/* An event line, {"type":T,"object":...} as the server writes it: the type
 * is read where it stands, not searched for through the object. */
static void on_line(struct bench *b, struct watcher *w, const char *line)
{
	static const char error[] = "{\"type\":\"ERROR\"", added[] = "{\"type\":\"ADDED\"";
	if (strncmp(line, error, sizeof(error) - 1) == 0 && b->errors_seen++ < 3)
		fprintf(stderr, "watchers: ERROR event on watcher %d: %.300s\n", w->id, line);
	if (strncmp(line, added, sizeof(added) - 1) != 0)
		return;
	const char *p = strstr(line, "\"name\":\"" NAME_PREFIX);
	if (!p)
		return;
	int i = atoi(p + strlen("\"name\":\"" NAME_PREFIX));
	if (i < 0 || i >= b->o->warmup + b->o->creates)
		return;
	b->event_bytes = strlen(line) + 1;
	int64_t *slot = &b->rx[(size_t)i * (size_t)b->o->n + (size_t)w->id];
	if (!*slot) {
		*slot = w->conn.rx_ns;
		b->got++;
	}
}

static void split_lines(struct bench *b, struct watcher *w)
{
	char *start = w->lines.data, *nl;
	while ((nl = memchr(start, '\n', w->lines.len - (size_t)(start - w->lines.data)))) {
		*nl = '\0';
		on_line(b, w, start);
		start = nl + 1;
	}
	bn_buf_consume(&w->lines, (size_t)(start - w->lines.data));
}

static int on_stream(struct bench *b, struct watcher *w)
{
	struct bn_buf *in = &w->conn.in;
	if (b->o->idle_path) {
		bn_buf_consume(in, in->len);
		return 0;
	}
	if (!w->chunked) {
		bn_buf_append(&w->lines, in->data, in->len);
		bn_buf_consume(in, in->len);
	} else if (in->len) {
		long n = bn_dechunk(&w->dc, in->data, in->len, &w->lines);
		if (n < 0)
			return -EPROTO;
		bn_buf_consume(in, (size_t)n);
	}
	if (w->lines.len)
		split_lines(b, w);
	return 0;
}

static int on_head(struct bench *b, struct watcher *w)
{
	struct bn_resp r;
	bool idle = b->o->idle_path != NULL;
	int rc = bn_http_parse(w->conn.in.data ? w->conn.in.data : "", w->conn.in.len, !idle, &r);
	if (rc <= 0)
		return rc;
	if (r.status != 200) {
		fprintf(stderr, "watchers: watch answered %d:\n%.*s\n", r.status,
			(int)(w->conn.in.len < 600 ? w->conn.in.len : 600), w->conn.in.data);
		return -EPROTO;
	}
	w->chunked = r.chunked;
	bn_buf_consume(&w->conn.in, idle ? r.total_len : r.head_len);
	w->state = WS_STREAMING;
	b->streaming++;
	return on_stream(b, w);
}

static int send_watch(struct bench *b, struct watcher *w)
{
	char req[512];
	int n;
	if (b->o->idle_path)
		n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
			     b->o->idle_path, b->o->port);
	else
		n = snprintf(req, sizeof(req),
			     "GET /api/v1/namespaces/%s/pods?watch=true&resourceVersion=%s "
			     "HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: application/json\r\n\r\n",
			     b->o->ns, b->rv, b->o->port);
	b->handshaking--;
	w->state = WS_SENT;
	return bn_conn_send(&w->conn, req, (size_t)n);
}

static void on_event(struct bench *b, struct watcher *w, uint32_t events)
{
	int err = 0;
	if (events & EPOLLOUT)
		err = bn_conn_flush(&w->conn) < 0 ? -EIO : 0;
	if (!err && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		err = bn_conn_read(&w->conn);
	if (!err && w->state == WS_HANDSHAKE && w->conn.ready)
		err = send_watch(b, w);
	if (!err && w->state == WS_SENT)
		err = on_head(b, w);
	if (!err && w->state == WS_STREAMING)
		err = on_stream(b, w);
	if (!err && w->conn.eof)
		err = -ECONNRESET;
	if (err < 0) {
		mark_dead(b, w, strerror(-err));
		return;
	}
	bool want_out = w->conn.out.len > 0;
	if (want_out == w->want_out) /* a system call per event less */
		return;
	w->want_out = want_out;
	struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0u), .data.ptr = w};
	epoll_ctl(b->epfd, EPOLL_CTL_MOD, w->conn.fd, &ev);
}

static int open_watcher(struct bench *b, struct watcher *w)
{
	int fd = bn_tcp_connect("127.0.0.1", b->o->port);
	if (fd < 0)
		return fd;
	int err = bn_conn_init(&w->conn, b->ctx, fd);
	if (err < 0)
		return err;
	w->state = WS_HANDSHAKE;
	w->want_out = true;
	b->handshaking++;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = w};
	return epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void poll_once(struct bench *b, int timeout_ms)
{
	struct epoll_event evs[MAX_EVENTS];
	int n = epoll_wait(b->epfd, evs, MAX_EVENTS, timeout_ms);
	for (int i = 0; i < n; i++)
		on_event(b, evs[i].data.ptr, evs[i].events);
}

/* Opens every watcher, MAX_HANDSHAKING at a time, until all stream (or die). */
static int open_all(struct bench *b)
{
	int64_t deadline = bn_mono_ns() + OPEN_TIMEOUT_NS;
	while (b->streaming + b->dead < b->o->n && bn_mono_ns() < deadline) {
		while (b->opened < b->o->n && b->handshaking < MAX_HANDSHAKING) {
			struct watcher *w = &b->w[b->opened];
			w->id = b->opened++;
			int err = open_watcher(b, w);
			if (err < 0) {
				fprintf(stderr, "watchers: connect: %s\n", strerror(-err));
				return err;
			}
		}
		poll_once(b, 10);
	}
	return 0;
}

/* Creates pod i and waits until every live watcher has its event. */
static int create_and_wait(struct bench *b, int i)
{
	b->got = 0;
	int err = create_pod(b, i);
	if (err < 0)
		return err;
	if (b->o->hold_ms > 0) /* the events wait in the sockets, stamped */
		bn_sleep_us(b->o->hold_ms * 1000L);
	int64_t deadline = bn_mono_ns() + EVENT_TIMEOUT_NS;
	while (b->got < b->o->n - b->dead && bn_mono_ns() < deadline)
		poll_once(b, 10);
	return 0;
}

/* ---- CPU time ---- */

/* The CPU time of every thread of process pid in ns (the scheduler's own
 * count, /proc/PID/task/TID/schedstat: it includes the softirq work done
 * in the process's context, such as the loopback receive of its sends),
 * or -1. */
static int64_t proc_cpu_ns(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char p[320];
		long long ns = 0;
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", pid, e->d_name);
		FILE *f = fopen(p, "r");
		if (f && fscanf(f, "%lld", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

static int64_t self_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- report ---- */

/* Delays in ms from base[create] to each received event; returns how many. */
static size_t delays(const struct bench *b, const int64_t *base, double *d)
{
	size_t n = (size_t)b->o->n, k = 0;
	for (size_t i = (size_t)b->o->warmup; i < (size_t)(b->o->warmup + b->o->creates); i++)
		for (size_t j = 0; j < n; j++)
			if (b->rx[i * n + j])
				d[k++] = (double)(b->rx[i * n + j] - base[i]) / 1e6;
	return k;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The receive times of create c's events into t (room for n), sorted;
 * returns how many arrived. */
static size_t arrivals(const struct bench *b, size_t c, int64_t *t)
{
	size_t n = (size_t)b->o->n, k = 0;
	for (size_t j = 0; j < n; j++)
		if (b->rx[c * n + j])
			t[k++] = b->rx[c * n + j];
	qsort(t, k, sizeof(*t), cmp_i64);
	return k;
}

/* Per create: round trip, then the first, middle and last event's delay
 * from the response, in ms. */
static void report_per_create(const struct bench *b)
{
	int64_t *t = calloc((size_t)b->o->n, sizeof(*t));
	for (size_t i = 0; t && i < (size_t)(b->o->warmup + b->o->creates); i++) {
		size_t k = arrivals(b, i, t);
		if (!k)
			continue;
		fprintf(stderr,
			"create %zu%s: rtt %.3f first %.3f mid %.3f last %.3f ms (sent at %.6f)\n",
			i, i < (size_t)b->o->warmup ? " (warm-up)" : "",
			(double)(b->resp[i] - b->sent[i]) / 1e6, (double)(t[0] - b->resp[i]) / 1e6,
			(double)(t[k / 2] - b->resp[i]) / 1e6,
			(double)(t[k - 1] - b->resp[i]) / 1e6, (double)b->sent[i] / 1e9);
	}
	free(t);
}

static void report(struct bench *b, long pss0, long pd0, long pss1, long pd1)
{
	if (b->o->per_create)
		report_per_create(b);
	size_t total = (size_t)b->o->n * (size_t)b->o->creates;
	double *d = calloc(total, sizeof(*d)), *e = calloc(total, sizeof(*e));
	size_t k = delays(b, b->resp, d);
	delays(b, b->sent, e);
	double p50 = bn_quantile(d, k, 0.50), p99 = bn_quantile(d, k, 0.99);
	double s50 = bn_quantile(e, k, 0.50), s99 = bn_quantile(e, k, 0.99);
	double *rtt = calloc((size_t)b->o->creates, sizeof(*rtt));
	for (int i = 0; i < b->o->creates; i++) {
		int c = b->o->warmup + i;
		rtt[i] = (double)(b->resp[c] - b->sent[c]) / 1e6;
	}
	double r50 = bn_quantile(rtt, (size_t)b->o->creates, 0.5);
	double r99 = bn_quantile(rtt, (size_t)b->o->creates, 0.99);
	/* per create, the delay of its last event: one fan-out's length */
	double *fan = calloc((size_t)b->o->creates, sizeof(*fan));
	int64_t *t = calloc((size_t)b->o->n, sizeof(*t));
	for (int i = 0; fan && t && i < b->o->creates; i++) {
		size_t c = (size_t)(b->o->warmup + i), got = arrivals(b, c, t);
		fan[i] = got ? (double)(t[got - 1] - b->resp[c]) / 1e6 : 0;
	}
	double f50 = fan && t ? bn_quantile(fan, (size_t)b->o->creates, 0.5) : 0;
	double fmax = fan && t ? bn_quantile(fan, (size_t)b->o->creates, 1.0) : 0;
	free(t);
	free(fan);
	printf("%s: watchers=%d streaming=%d pss_before_kib=%ld pss_after_kib=%ld "
	       "per_watch_kib=%.2f private_dirty_before_kib=%ld private_dirty_after_kib=%ld "
	       "creates=%d events=%zu missing=%zu p50_ms=%.3f p99_ms=%.3f min_ms=%.3f "
	       "max_ms=%.3f sent_p50_ms=%.3f sent_p99_ms=%.3f sent_max_ms=%.3f "
	       "create_rtt_p50_ms=%.3f create_rtt_p99_ms=%.3f fanout_p50_ms=%.3f "
	       "fanout_max_ms=%.3f warmup=%d server_cpu_per_create_ms=%.3f "
	       "client_cpu_per_create_ms=%.3f event_bytes=%zu\n",
	       b->o->label, b->o->n, b->streaming, pss0, pss1, (double)(pss1 - pss0) / b->o->n, pd0,
	       pd1, b->o->creates, k, total - k, p50, p99, k ? d[0] : 0, k ? d[k - 1] : 0, s50, s99,
	       k ? e[k - 1] : 0, r50, r99, f50, fmax, b->o->warmup,
	       (double)b->srv_cpu_ns / 1e6 / b->o->creates,
	       (double)b->cli_cpu_ns / 1e6 / b->o->creates, b->event_bytes);
	free(rtt);
	free(d);
	free(e);
}

static int setup(struct bench *b)
{
	int err = 0;
	if (!b->o->idle_path)
		err = bn_buf_read_file(&b->tmpl, b->o->body_file);
	if (!b->o->idle_path && (err < 0 || !b->tmpl.data || !strstr(b->tmpl.data, "@NAME@"))) {
		fprintf(stderr, "watchers: %s: no @NAME@ template\n", b->o->body_file);
		return -EINVAL;
	}
	b->ctx = bn_ssl_ctx(b->o->cert, b->o->key);
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	b->w = calloc((size_t)b->o->n, sizeof(*b->w));
	size_t all = (size_t)(b->o->warmup + b->o->creates);
	b->rx = calloc((size_t)b->o->n * all, sizeof(*b->rx));
	b->resp = calloc(all, sizeof(*b->resp));
	b->sent = calloc(all, sizeof(*b->sent));
	if (!b->ctx || b->epfd < 0 || !b->w || !b->rx || !b->resp || !b->sent)
		return -ENOMEM;
	if (b->o->idle_path)
		return 0;
	int fd = bn_tcp_connect("127.0.0.1", b->o->port);
	if (fd < 0 || (err = bn_conn_init(&b->ctl, b->ctx, fd)) < 0 ||
	    (err = bn_conn_handshake(&b->ctl, 5000)) < 0) {
		fprintf(stderr, "watchers: control connection: %s\n",
			strerror(fd < 0 ? -fd : -err));
		return -EIO;
	}
	return list_rv(b);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct bench b = {.o = &o};
	long pss0, pd0, pss1, pd1;
	parse_opts(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	if (setup(&b) < 0)
		return 1;
	bn_sleep_us(200000);
	if (bn_smaps_rollup(o.pid, &pss0, &pd0) < 0 || open_all(&b) < 0)
		return 1;
	int64_t settle = bn_mono_ns() + 500000000LL;
	while (bn_mono_ns() < settle)
		poll_once(&b, 50);
	if (bn_smaps_rollup(o.pid, &pss1, &pd1) < 0)
		return 1;
	if (o.idle_path) {
		printf("%s: conns=%d established=%d pss_before_kib=%ld pss_after_kib=%ld "
		       "per_conn_kib=%.2f\n",
		       o.label, o.n, b.streaming, pss0, pss1, (double)(pss1 - pss0) / o.n);
		return 0;
	}
	if (o.pause_ms > 0) { /* e.g. to zero a profiler's counters */
		fprintf(stderr, "watchers: %d streaming, pausing %d ms\n", b.streaming, o.pause_ms);
		int64_t end = bn_mono_ns() + (int64_t)o.pause_ms * 1000000;
		while (bn_mono_ns() < end)
			poll_once(&b, 50);
	}
	int64_t srv0 = 0, cli0 = 0;
	for (int i = 0; i < o.warmup + o.creates; i++) {
		if (i == o.warmup) {
			srv0 = proc_cpu_ns(o.pid);
			cli0 = self_cpu_ns();
		}
		if (create_and_wait(&b, i) < 0)
			return 1;
	}
	b.srv_cpu_ns = proc_cpu_ns(o.pid) - srv0;
	b.cli_cpu_ns = self_cpu_ns() - cli0;
	report(&b, pss0, pd0, pss1, pd1);
	return 0;
}
