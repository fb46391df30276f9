/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syncer benchmark's watcher (bench/sync.py): watches pods in one
 * namespace from the resourceVersion of a list and, for the first N pods
 * whose ADDED it sees, prints when the bytes that completed the event
 * reached this host's socket (the kernel's receive timestamp,
 * SO_TIMESTAMPNS, moved to CLOCK_MONOTONIC so that it compares with the
 * creators' clocks), keyed by name or by an annotation's value.
 *
 *   watchstamp -p PORT --cert F --key F --ns NS -n N [--annotation KEY]
 *              [--prefix P] [--idle-s S]
 *
 * Prints "ready" once the watch streams (the caller starts its creates
 * then), and at the end one line "KEY MONO_NS" per pod seen, then
 * "cpu_ms=C events=E" (this process's CPU time while it watched). With
 * --prefix only keys that start with P count (a warm-up's pods do not). It ends
 * when N pods were seen, the stream ended, or no event came for --idle-s
 * seconds (default 60).
 *
 * Why not a thread of the Python driver: a Python reader stamps a line
 * when its interpreter gets round to it, so a busy 2-core machine adds
 * the driver's own scheduling delay (and its parsing CPU, which the
 * servers under test share) to every figure; the kernel's stamp does not
 * wait for the reader (bench/watchers.c does the same for benchmark 5).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bench/bn.h"

struct opts {
	const char *cert, *key, *ns, *annotation, *prefix;
	int port, n, idle_s;
};

static void usage(void)
{
	fprintf(stderr, "usage: watchstamp -p PORT --cert F --key F --ns NS -n N "
			"[--annotation KEY] [--prefix P] [--idle-s S]\n");
	exit(2);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"port", required_argument, NULL, 'p'},       {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},        {"ns", required_argument, NULL, 's'},
	    {"annotation", required_argument, NULL, 'a'}, {"idle-s", required_argument, NULL, 'i'},
	    {"prefix", required_argument, NULL, 'P'},     {NULL, 0, NULL, 0}};
	int c;
	*o = (struct opts){.n = 1000, .idle_s = 60};
	while ((c = getopt_long(argc, argv, "p:n:", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o->port = atoi(optarg); break;
		case 'n': o->n = atoi(optarg); break;
		case 'C': o->cert = optarg; break;
		case 'K': o->key = optarg; break;
		case 's': o->ns = optarg; break;
		case 'a': o->annotation = optarg; break;
		case 'i': o->idle_s = atoi(optarg); break;
		case 'P': o->prefix = optarg; break;
		default: usage();
		}
	}
	if (!o->port || !o->ns || o->n <= 0)
		usage();
}

struct seen {
	char *key;
	int64_t mono_ns;
};

/* An open-addressed set of the keys seen (2n slots of indexes into the
 * seen array, -1 empty): a run has 10,000 pods. */
struct keyset {
	int *slot;
	size_t mask;
};

static size_t key_hash(const char *s)
{
	size_t h = 1469598103934665603ULL;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

/* The slot of key: where it is, or the empty one where it goes. */
static int *keyset_find(struct keyset *ks, const struct seen *seen, const char *key)
{
	size_t i = key_hash(key) & ks->mask;
	while (ks->slot[i] >= 0 && strcmp(seen[ks->slot[i]].key, key) != 0)
		i = (i + 1) & ks->mask;
	return &ks->slot[i];
}

static int64_t self_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The list's resourceVersion: where the watch starts. */
static int list_rv(struct bn_conn *c, const char *ns, char *rv, size_t len)
{
	char req[512];
	struct bn_resp r;
	struct bn_buf body = {0};
	int n =
	    snprintf(req, sizeof(req),
		     "GET /api/v1/namespaces/%s/pods?limit=1 HTTP/1.1\r\nHost: bench\r\n\r\n", ns);
	int err = bn_http_roundtrip(c, req, (size_t)n, &r, 10000);
	if (err < 0 || r.status != 200)
		return err < 0 ? err : -EIO;
	bn_http_body(c->in.data, &r, &body);
	bn_buf_consume(&c->in, r.total_len);
	json_t *l = json_loadb(body.data ? body.data : "", body.len, 0, NULL);
	const char *v =
	    json_string_value(json_object_get(json_object_get(l, "metadata"), "resourceVersion"));
	err = v ? 0 : -EPROTO;
	if (v)
		snprintf(rv, len, "%s", v);
	json_decref(l);
	bn_buf_free(&body);
	return err;
}

/* The key of one ADDED event line (NULL for another type or no key). */
static const char *event_key(json_t *ev, const char *annotation)
{
	json_t *md = json_object_get(json_object_get(ev, "object"), "metadata");
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!type || strcmp(type, "ADDED") != 0)
		return NULL;
	if (annotation)
		return json_string_value(
		    json_object_get(json_object_get(md, "annotations"), annotation));
	return json_string_value(json_object_get(md, "name"));
}

int main(int argc, char **argv)
{
	struct opts o;
	struct bn_conn c;
	char rv[64], req[768];
	parse_opts(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	SSL_CTX *ctx = bn_ssl_ctx(o.cert, o.key);
	int fd = bn_tcp_connect("127.0.0.1", o.port);
	int err = !ctx ? -ENOMEM : fd < 0 ? fd : bn_conn_init(&c, ctx, fd);
	if (!err)
		err = bn_conn_handshake(&c, 10000);
	if (!err)
		err = list_rv(&c, o.ns, rv, sizeof(rv));
	if (err < 0) {
		fprintf(stderr, "watchstamp: %s\n", strerror(-err));
		return 1;
	}
	int n = snprintf(req, sizeof(req),
			 "GET /api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s HTTP/1.1\r\n"
			 "Host: bench\r\n\r\n",
			 o.ns, rv);
	struct bn_resp head = {0};
	bool streaming = false;
	struct bn_dechunk dc = {0};
	struct bn_buf lines = {0};
	struct seen *seen = calloc((size_t)o.n, sizeof(*seen));
	int nseen = 0;
	long events = 0;
	struct keyset ks = {0};
	size_t slots = 16;
	while (slots < 2 * (size_t)o.n)
		slots *= 2;
	ks.slot = malloc(slots * sizeof(*ks.slot));
	ks.mask = slots - 1;
	if (ks.slot)
		memset(ks.slot, 0xff, slots * sizeof(*ks.slot));
	/* the kernel stamps CLOCK_REALTIME; the creators time by CLOCK_MONOTONIC */
	int64_t real_to_mono = bn_mono_ns() - bn_real_ns();
	int64_t cpu0 = 0, last = bn_mono_ns();
	if (!seen || !ks.slot || bn_conn_send(&c, req, (size_t)n) < 0)
		return 1;
	while (nseen < o.n && !c.eof) {
		struct pollfd p = {.fd = c.fd, .events = POLLIN | (c.out.len ? POLLOUT : 0)};
		int rc = poll(&p, 1, 1000);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc <= 0) {
			if (bn_mono_ns() - last > (int64_t)o.idle_s * 1000000000)
				break;
			continue;
		}
		if (bn_conn_flush(&c) < 0 || bn_conn_read(&c) < 0)
			break;
		if (!streaming) {
			rc = bn_http_parse(c.in.data ? c.in.data : "", c.in.len, true, &head);
			if (rc < 0 || (rc == 1 && (head.status != 200 || !head.chunked))) {
				fprintf(stderr, "watchstamp: the watch was refused (%d)\n",
					head.status);
				return 1;
			}
			if (rc == 0)
				continue;
			bn_buf_consume(&c.in, head.head_len);
			streaming = true;
			cpu0 = self_cpu_ns();
			printf("ready\n");
			fflush(stdout);
		}
		long used = bn_dechunk(&dc, c.in.data ? c.in.data : "", c.in.len, &lines);
		if (used < 0)
			break;
		bn_buf_consume(&c.in, (size_t)used);
		char *nl;
		while (lines.len && (nl = memchr(lines.data, '\n', lines.len))) {
			size_t len = (size_t)(nl - lines.data) + 1;
			json_t *ev = json_loadb(lines.data, len, 0, NULL);
			const char *key = event_key(ev, o.annotation);
			if (key && o.prefix && strncmp(key, o.prefix, strlen(o.prefix)) != 0)
				key = NULL;
			events++;
			last = bn_mono_ns();
			int *slot = key ? keyset_find(&ks, seen, key) : NULL;
			if (slot && *slot < 0) {
				seen[nseen].key = strdup(key);
				seen[nseen].mono_ns = c.rx_ns + real_to_mono;
				*slot = nseen++;
			}
			json_decref(ev);
			bn_buf_consume(&lines, len);
		}
		if (bn_dechunk_done(&dc))
			break;
	}
	int64_t cpu = streaming ? self_cpu_ns() - cpu0 : 0;
	for (int i = 0; i < nseen; i++) {
		printf("%s %lld\n", seen[i].key, (long long)seen[i].mono_ns);
		free(seen[i].key);
	}
	printf("cpu_ms=%.3f events=%ld\n", (double)cpu / 1e6, events);
	free(seen);
	free(ks.slot);
	bn_buf_free(&lines);
	bn_conn_close(&c);
	SSL_CTX_free(ctx);
	return 0;
}
