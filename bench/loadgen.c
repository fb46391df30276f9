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
 *           [--name-prefix P] [--label L] [--token T] [-t THREADS] [-r RATE]
 *
 * --token sends "Authorization: Bearer T" (instead of, or beside, a client
 * certificate). -t spreads the connections over THREADS threads, each with
 * its own epoll loop, so that a run can show that the client is not the
 * limit: the report gives the client's own CPU use (client_cpu, in cores,
 * from getrusage over the measured window) beside the rate.
 *
 * With --body, the first "@NAME@" in the body file is replaced by a name
 * unique to the request (P-<conn>-<seq>), so POSTs create distinct objects. Only responses to requests sent after the warm-up and received
 * before the end are counted.
 *
 * -r RATE makes the load open: request k (k = 0, 1, ... RATE*SECS-1) is due
 * at t0 + k/RATE whatever the responses do, goes out on the first idle
 * connection (waiting for one when all are busy), and its latency counts
 * from when it was due, not from when it went out, so a stalled server is
 * not hidden by a client that stopped sending (coordinated omission). Its
 * name is P-k, and the report gives t0 (t0_ns, CLOCK_MONOTONIC), so that a
 * watcher elsewhere can time the object from its due time too. Every
 * scheduled response is counted (the run waits up to 60 s past the end for
 * them); send_lag_p99_ms says how late the client itself sent (its own
 * limit, beside client_cpu).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/bn.h"

#define MAX_EVENTS 256
#define NAME_TOKEN "@NAME@"

struct opts {
	const char *host, *cert, *key, *method, *path, *body_file, *prefix, *label, *token;
	int port, conns, expect, threads;
	double secs, warmup, rate;
};

struct client {
	struct bn_conn conn;
	int id;
	unsigned long seq;
	int64_t sent_ns; /* with -r: when the request was due */
	bool in_flight;
};

struct run {
	const struct opts *o;
	int first_id, nclients;
	SSL_CTX *ctx;
	int epfd;
	struct client *clients;
	char *body_pre, *body_post; /* template split at NAME_TOKEN */
	int64_t t_start, t_end;
	unsigned long ok, bad, errors, reconnects, total;
	bool bad_printed;
	double *lat_us;
	size_t nlat, caplat;
	/* with -r: this thread sends k = next_k, next_k + stride, ... < nsched */
	unsigned long next_k, stride, nsched;
	double *lag_us;
	size_t nlag;
};

static void usage(void)
{
	fprintf(stderr, "usage: loadgen -p PORT [-H HOST] [--cert F --key F] [-c CONNS] "
			"[-d SECS] [-w WARMUP] [-m METHOD] [-u PATH] [--body FILE] "
			"[--expect STATUS] [--name-prefix P] [--label L] [--token T] "
			"[-t THREADS] [-r RATE]\n");
	exit(2);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"cert", required_argument, NULL, 'C'},        {"key", required_argument, NULL, 'K'},
	    {"body", required_argument, NULL, 'b'},        {"expect", required_argument, NULL, 'e'},
	    {"name-prefix", required_argument, NULL, 'n'}, {"label", required_argument, NULL, 'l'},
	    {"token", required_argument, NULL, 'T'},       {NULL, 0, NULL, 0},
	};
	*o = (struct opts){.host = "127.0.0.1",
			   .method = "GET",
			   .path = "/",
			   .prefix = "lg",
			   .label = "loadgen",
			   .conns = 16,
			   .threads = 1,
			   .expect = 200,
			   .secs = 8,
			   .warmup = 1};
	int ch;
	while ((ch = getopt_long(argc, argv, "H:p:c:d:w:m:u:t:r:", lo, NULL)) != -1) {
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
		case 'T': o->token = optarg; break;
		case 't': o->threads = atoi(optarg); break;
		case 'r': o->rate = atof(optarg); break;
		default: usage();
		}
	}
	if (o->port <= 0 || o->conns <= 0 || o->secs <= 0 || o->threads <= 0 ||
	    o->threads > o->conns || o->rate < 0)
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

/* With -r: when request k is due. */
static int64_t due_ns(const struct run *r, unsigned long k)
{
	return r->t_start + (int64_t)((double)k * 1e9 / r->o->rate);
}

/* Sends one request on idle connection c; `k` names it with -r (else c's own count). */
static void send_request(struct run *r, struct client *c, unsigned long k)
{
	char head[2048], auth[1600] = "", name[96];
	struct bn_buf req = {0};
	int hl;
	if (r->o->token)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", r->o->token);
	if (r->body_pre) {
		if (r->o->rate > 0)
			snprintf(name, sizeof(name), "%s-%lu", r->o->prefix, k);
		else
			snprintf(name, sizeof(name), "%s-%d-%lu", r->o->prefix, c->id, c->seq++);
		size_t blen = strlen(r->body_pre) + strlen(name) + strlen(r->body_post);
		hl = snprintf(head, sizeof(head),
			      "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: kubicle-bench\r\n"
			      "%sAccept: application/json\r\nContent-Type: application/json\r\n"
			      "Content-Length: %zu\r\n\r\n",
			      r->o->method, r->o->path, r->o->host, r->o->port, auth, blen);
	} else {
		hl = snprintf(head, sizeof(head),
			      "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: kubicle-bench\r\n"
			      "%sAccept: application/json\r\n\r\n",
			      r->o->method, r->o->path, r->o->host, r->o->port, auth);
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
	int64_t now = bn_mono_ns();
	c->sent_ns = now;
	if (r->o->rate > 0) {
		c->sent_ns = due_ns(r, k);
		r->lag_us[r->nlag++] = (double)(now - c->sent_ns) / 1000.0;
	}
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
	bool counted = c->sent_ns >= r->t_start && (now <= r->t_end || r->o->rate > 0);
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
	if (r->o->rate == 0 && c->conn.ready && !c->in_flight && bn_mono_ns() < r->t_end)
		send_request(r, c, 0);
	watch_output(r, c);
}

/* With -r: sends every due request on an idle connection, in order.
 * Returns true when a due request waits for one (nothing to time then). */
static bool pump(struct run *r)
{
	int64_t now = bn_mono_ns();
	int i;
	for (i = 0; i < r->nclients && r->next_k < r->nsched && due_ns(r, r->next_k) <= now; i++) {
		struct client *c = &r->clients[i];
		if (!c->conn.ready || c->in_flight)
			continue;
		send_request(r, c, r->next_k);
		r->next_k += r->stride;
		watch_output(r, c);
		i = -1; /* the next due request starts from the first connection again */
	}
	return i == r->nclients;
}

static bool open_loop_done(const struct run *r)
{
	if (r->next_k < r->nsched)
		return false;
	for (int i = 0; i < r->nclients; i++)
		if (r->clients[i].in_flight)
			return false;
	return true;
}

/* With -r: until every scheduled response is in (at most 60 s past the end). */
static void loop_open(struct run *r)
{
	struct epoll_event evs[MAX_EVENTS];
	int64_t give_up = r->t_end + 60 * (int64_t)1000000000;
	while (!open_loop_done(r) && bn_mono_ns() < give_up) {
		bool blocked = pump(r);
		int64_t wait = r->next_k < r->nsched && !blocked
				   ? due_ns(r, r->next_k) - bn_mono_ns()
				   : 100 * (int64_t)1000000;
		if (wait < 0)
			wait = 0;
		struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
		int n = epoll_pwait2(r->epfd, evs, MAX_EVENTS, &ts, NULL);
		if (n < 0 && errno != EINTR) {
			perror("epoll_pwait2");
			exit(1);
		}
		for (int i = 0; i < n; i++)
			on_event(r, evs[i].data.ptr, evs[i].events);
	}
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

static void *run_thread(void *arg)
{
	struct run *r = arg;
	for (int i = 0; i < r->nclients; i++) {
		r->clients[i].id = r->first_id + i;
		int err = open_client(r, &r->clients[i]);
		if (err < 0) {
			fprintf(stderr, "loadgen: connect %s:%d: %s\n", r->o->host, r->o->port,
				strerror(-err));
			exit(1);
		}
	}
	if (r->o->rate > 0)
		loop_open(r);
	else
		loop(r);
	return NULL;
}

static double cpu_secs(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Merges the threads' counts and latencies into the first run. */
static void merge(struct run *runs, int n)
{
	struct run *t = &runs[0];
	for (int i = 1; i < n; i++) {
		struct run *u = &runs[i];
		t->ok += u->ok;
		t->bad += u->bad;
		t->errors += u->errors;
		t->reconnects += u->reconnects;
		if (t->nlat + u->nlat > t->caplat) {
			t->caplat = t->nlat + u->nlat;
			t->lat_us = realloc(t->lat_us, t->caplat * sizeof(*t->lat_us));
			if (!t->lat_us)
				exit(1);
		}
		if (u->nlat)
			memcpy(t->lat_us + t->nlat, u->lat_us, u->nlat * sizeof(*u->lat_us));
		t->nlat += u->nlat;
		if (u->nlag) {
			t->lag_us = realloc(t->lag_us, (t->nlag + u->nlag) * sizeof(*t->lag_us));
			if (!t->lag_us)
				exit(1);
			memcpy(t->lag_us + t->nlag, u->lag_us, u->nlag * sizeof(*u->lag_us));
		}
		t->nlag += u->nlag;
	}
}

static void report(struct run *r, double client_cpu)
{
	double secs = (double)(r->t_end - r->t_start) / 1e9;
	double p50 = bn_quantile(r->lat_us, r->nlat, 0.50);
	double p99 = bn_quantile(r->lat_us, r->nlat, 0.99);
	printf("%s: conns=%d threads=%d secs=%.2f responses=%lu rps=%.0f p50_ms=%.3f "
	       "p99_ms=%.3f bad_status=%lu conn_errors=%lu reconnects=%lu client_cpu=%.2f\n",
	       r->o->label, r->o->conns, r->o->threads, secs, r->ok, (double)r->ok / secs,
	       p50 / 1000.0, p99 / 1000.0, r->bad, r->errors, r->reconnects, client_cpu);
	if (r->o->rate > 0)
		printf("%s: offered=%.0f scheduled=%lu t0_ns=%lld send_lag_p99_ms=%.3f "
		       "send_lag_max_ms=%.3f\n",
		       r->o->label, r->o->rate, r->nsched, (long long)r->t_start,
		       bn_quantile(r->lag_us, r->nlag, 0.99) / 1000.0,
		       bn_quantile(r->lag_us, r->nlag, 1.0) / 1000.0);
}

int main(int argc, char **argv)
{
	struct opts o;
	parse_opts(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	struct run *runs = calloc((size_t)o.threads, sizeof(*runs));
	pthread_t *tids = calloc((size_t)o.threads, sizeof(*tids));
	SSL_CTX *ctx = bn_ssl_ctx(o.cert, o.key);
	if (!runs || !tids || !ctx)
		return 1;
	int64_t now = bn_mono_ns();
	int64_t t_start = now + (int64_t)(o.warmup * 1e9);
	int64_t t_end = t_start + (int64_t)(o.secs * 1e9);
	for (int t = 0, first = 0; t < o.threads; t++) {
		struct run *r = &runs[t];
		r->o = &o;
		r->ctx = ctx;
		r->first_id = first;
		r->nclients = o.conns / o.threads + (t < o.conns % o.threads);
		first += r->nclients;
		r->t_start = t_start;
		r->t_end = t_end;
		r->stride = (unsigned long)o.threads;
		r->next_k = (unsigned long)t;
		r->nsched = (unsigned long)(o.rate * o.secs);
		r->lag_us = calloc(r->nsched / r->stride + 1, sizeof(*r->lag_us));
		r->epfd = epoll_create1(EPOLL_CLOEXEC);
		r->clients = calloc((size_t)r->nclients, sizeof(*r->clients));
		if (r->epfd < 0 || !r->clients || !r->lag_us || (o.body_file && load_body(r) < 0))
			return 1;
	}
	for (int t = 0; t < o.threads; t++)
		if (pthread_create(&tids[t], NULL, run_thread, &runs[t]) != 0)
			return 1;
	/* the client's CPU over the measured window only */
	double cpu0 = 0, cpu1 = 0;
	while (bn_mono_ns() < t_start)
		usleep(1000);
	cpu0 = cpu_secs();
	while (bn_mono_ns() < t_end)
		usleep(1000);
	cpu1 = cpu_secs();
	for (int t = 0; t < o.threads; t++)
		pthread_join(tids[t], NULL);
	merge(runs, o.threads);
	report(&runs[0], (cpu1 - cpu0) / ((double)(t_end - t_start) / 1e9));
	return 0;
}
