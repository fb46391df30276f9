/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small HTTP/1.1-over-TLS load generator for the benchmarks (wrk cannot
 * present a client certificate). N keep-alive connections on one epoll loop,
 * one request in flight per connection, for a fixed duration after a warm-up;
 * prints responses per second, latency quantiles and status-code checks as
 * one line of key=value pairs.
 *
 *   loadgen -p PORT [-H 127.0.0.1] [--cert F --key F] [-c 16] [-d 8] [-w 1]
 *           [-m GET|POST] [-u PATH] [--body FILE] [--expect 200]
 *           [--name-prefix P] [--label L]
 *
 * With --body, the first "@NAME@" in the body file is replaced by a name
 * unique to the request (P-<conn>-<seq>), so POSTs create distinct objects. Only responses to requests sent after the warm-up and received
 * before the end are counted.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "bench/bn.h"

#define MAX_EVENTS 256
#define NAME_TOKEN "@NAME@"

struct opts {
	const char *host, *cert, *key, *method, *path, *body_file, *prefix, *label;
	int port, conns, expect;
	double secs, warmup;
};

struct client {
	struct bn_conn conn;
	int id;
	unsigned long seq;
	int64_t sent_ns;
	bool in_flight;
};

struct run {
	const struct opts *o;
	SSL_CTX *ctx;
	int epfd;
	struct client *clients;
	char *body_pre, *body_post; /* template split at NAME_TOKEN */
	int64_t t_start, t_end;
	unsigned long ok, bad, errors, reconnects, total;
	bool bad_printed;
	double *lat_us;
	size_t nlat, caplat;
};

static void usage(void)
{
	fprintf(stderr, "usage: loadgen -p PORT [-H HOST] [--cert F --key F] [-c CONNS] "
			"[-d SECS] [-w WARMUP] [-m METHOD] [-u PATH] [--body FILE] "
			"[--expect STATUS] [--name-prefix P] [--label L]\n");
	exit(2);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},
	    {"body", required_argument, NULL, 'b'},
	    {"expect", required_argument, NULL, 'e'},
	    {"name-prefix", required_argument, NULL, 'n'},
	    {"label", required_argument, NULL, 'l'},
	    {NULL, 0, NULL, 0},
	};
	*o = (struct opts){.host = "127.0.0.1",
			   .method = "GET",
			   .path = "/",
			   .prefix = "lg",
			   .label = "loadgen",
			   .conns = 16,
			   .expect = 200,
			   .secs = 8,
			   .warmup = 1};
	int ch;
	while ((ch = getopt_long(argc, argv, "H:p:c:d:w:m:u:", lo, NULL)) != -1) {
		switch (ch) {
		case 'H': o->host = optarg; break;
		case 'p': o->port = atoi(optarg); break;
		case 'c': o->conns = atoi(optarg); break;
		case 'd': o->secs = atof(optarg); break;
		case 'w': o->warmup = atof(optarg); break;
		case 'm': o->method = optarg; break;
		case 'u': o->path = optarg; break;
		case 'C': o->cert = optarg; break;
		case 'K': o->key = optarg; break;
		case 'b': o->body_file = optarg; break;
		case 'e': o->expect = atoi(optarg); break;
		case 'n': o->prefix = optarg; break;
		case 'l': o->label = optarg; break;
		default: usage();
		}
	}
	if (o->port <= 0 || o->conns <= 0 || o->secs <= 0)
		usage();
}

static int load_body(struct run *r)
{
	struct bn_buf b = {0};
	int err = bn_buf_read_file(&b, r->o->body_file);
	if (err < 0) {
		fprintf(stderr, "loadgen: %s: %s\n", r->o->body_file, strerror(-err));
		return err;
	}
	bn_buf_append(&b, "", 0);
	char *tok = strstr(b.data, NAME_TOKEN);
	r->body_post = strdup(tok ? tok + strlen(NAME_TOKEN) : "");
	if (tok)
		*tok = '\0';
	r->body_pre = b.data;
	return 0;
}

static void send_request(struct run *r, struct client *c)
{
	char head[512], name[96];
	struct bn_buf req = {0};
	int hl;
	if (r->body_pre) {
		snprintf(name, sizeof(name), "%s-%d-%lu", r->o->prefix, c->id, c->seq++);
		size_t blen = strlen(r->body_pre) + strlen(name) + strlen(r->body_post);
		hl = snprintf(head, sizeof(head),
			      "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: kubicle-bench\r\n"
			      "Accept: application/json\r\nContent-Type: application/json\r\n"
			      "Content-Length: %zu\r\n\r\n",
			      r->o->method, r->o->path, r->o->host, r->o->port, blen);
	} else {
		hl = snprintf(head, sizeof(head),
			      "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: kubicle-bench\r\n"
			      "Accept: application/json\r\n\r\n",
			      r->o->method, r->o->path, r->o->host, r->o->port);
	}
	if (hl < 0 || (size_t)hl >= sizeof(head)) {
		fprintf(stderr, "loadgen: request head larger than %zu bytes\n", sizeof(head));
		exit(1);
	}
	bn_buf_append(&req, head, (size_t)hl);
	if (r->body_pre) {
		bn_buf_append(&req, r->body_pre, strlen(r->body_pre));
		bn_buf_append(&req, name, strlen(name));
		bn_buf_append(&req, r->body_post, strlen(r->body_post));
	}
	c->sent_ns = bn_mono_ns();
	c->in_flight = bn_conn_send(&c->conn, req.data, req.len) == 0;
	bn_buf_free(&req);
}

static void watch_output(struct run *r, struct client *c)
{
	struct epoll_event ev = {.events = EPOLLIN | (c->conn.out.len ? EPOLLOUT : 0u),
				 .data.ptr = c};
	epoll_ctl(r->epfd, EPOLL_CTL_MOD, c->conn.fd, &ev);
}

static int open_client(struct run *r, struct client *c)
{
	int fd = bn_tcp_connect(r->o->host, r->o->port);
	if (fd < 0)
		return fd;
	int err = bn_conn_init(&c->conn, r->ctx, fd);
	if (err < 0)
		return err;
	c->in_flight = false;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
	return epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void reconnect(struct run *r, struct client *c)
{
	r->reconnects++;
	bn_conn_close(&c->conn);
	int err = open_client(r, c);
	if (err < 0) {
		fprintf(stderr, "loadgen: reconnect: %s\n", strerror(-err));
		exit(1);
	}
}

static void record(struct run *r, struct client *c, const struct bn_resp *resp)
{
	int64_t now = bn_mono_ns();
	r->total++;
	bool counted = c->sent_ns >= r->t_start && now <= r->t_end;
	if (resp->status != r->o->expect) {
		r->bad += counted;
		if (!r->bad_printed) {
			size_t n = resp->total_len < 800 ? resp->total_len : 800;
			fprintf(stderr, "loadgen: unexpected response (wanted %d):\n%.*s\n",
				r->o->expect, (int)n, c->conn.in.data);
			r->bad_printed = true;
		}
		return;
	}
	if (!counted)
		return;
	r->ok++;
	if (r->nlat == r->caplat) {
		r->caplat = r->caplat ? r->caplat * 2 : 65536;
		r->lat_us = realloc(r->lat_us, r->caplat * sizeof(*r->lat_us));
		if (!r->lat_us)
			exit(1);
	}
	r->lat_us[r->nlat++] = (double)(now - c->sent_ns) / 1000.0;
}

/* Consumes complete responses; returns -1 when the connection must be replaced. */
static int handle_input(struct run *r, struct client *c)
{
	for (;;) {
		struct bn_resp resp;
		int rc = bn_http_parse(c->conn.in.data ? c->conn.in.data : "", c->conn.in.len,
				       false, &resp);
		if (rc < 0)
			return -1;
		if (rc == 0)
			return c->conn.eof ? -1 : 0;
		record(r, c, &resp);
		bn_buf_consume(&c->conn.in, resp.total_len);
		c->in_flight = false;
	}
}

static void on_event(struct run *r, struct client *c, uint32_t events)
{
	bool was_ready = c->conn.ready;
	int err = 0;
	if (events & EPOLLOUT)
		err = bn_conn_flush(&c->conn) < 0 ? -EIO : 0;
	if (!err && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		err = bn_conn_read(&c->conn);
	if (!err && c->conn.ready && handle_input(r, c) < 0)
		err = -EPROTO;
	if (err < 0) {
		if (was_ready)
			r->errors++;
		else
			fprintf(stderr, "loadgen: connection %d: %s\n", c->id, strerror(-err));
		reconnect(r, c);
		return;
	}
	if (c->conn.ready && !c->in_flight && bn_mono_ns() < r->t_end)
		send_request(r, c);
	watch_output(r, c);
}

static void loop(struct run *r)
{
	struct epoll_event evs[MAX_EVENTS];
	while (bn_mono_ns() < r->t_end) {
		int n = epoll_wait(r->epfd, evs, MAX_EVENTS, 100);
		if (n < 0 && errno != EINTR) {
			perror("epoll_wait");
			exit(1);
		}
		for (int i = 0; i < n; i++)
			on_event(r, evs[i].data.ptr, evs[i].events);
	}
}

static void report(struct run *r)
{
	double secs = (double)(r->t_end - r->t_start) / 1e9;
	double p50 = bn_quantile(r->lat_us, r->nlat, 0.50);
	double p99 = bn_quantile(r->lat_us, r->nlat, 0.99);
	printf("%s: conns=%d secs=%.2f responses=%lu rps=%.0f p50_ms=%.3f p99_ms=%.3f "
	       "bad_status=%lu conn_errors=%lu reconnects=%lu\n",
	       r->o->label, r->o->conns, secs, r->ok, (double)r->ok / secs, p50 / 1000.0,
	       p99 / 1000.0, r->bad, r->errors, r->reconnects);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct run r = {.o = &o};
	parse_opts(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	if (o.body_file && load_body(&r) < 0)
		return 1;
	r.ctx = bn_ssl_ctx(o.cert, o.key);
	r.epfd = epoll_create1(EPOLL_CLOEXEC);
	r.clients = calloc((size_t)o.conns, sizeof(*r.clients));
	if (!r.ctx || r.epfd < 0 || !r.clients)
		return 1;
	int64_t now = bn_mono_ns();
	r.t_start = now + (int64_t)(o.warmup * 1e9);
	r.t_end = r.t_start + (int64_t)(o.secs * 1e9);
	for (int i = 0; i < o.conns; i++) {
		r.clients[i].id = i;
		int err = open_client(&r, &r.clients[i]);
		if (err < 0) {
			fprintf(stderr, "loadgen: connect %s:%d: %s\n", o.host, o.port,
				strerror(-err));
			return 1;
		}
	}
	loop(&r);
	report(&r);
	return 0;
}
