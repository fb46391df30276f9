/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floor under a watch fan-out on this machine: one buffer of SIZE bytes
 * sent to each of N loopback TCP connections, ROUNDS times, with the very
 * primitives the server's fan-out ends in (lib/sendbatch: sends gathered in
 * a 256 KiB arena and given to the kernel with one io_uring_enter per
 * batch; with --seal, each buffer sealed first as a TLS 1.3 record under
 * the connection's own key, lib/tls13) and nothing above them: no store,
 * no watch, no HTTP, no JSON. A reader process on another core drains
 * every connection, as the watch clients do (with the same receive
 * timestamps). Benchmark 5's fan-out
 * (bench/watchers' fanout_* and server_cpu_per_create_ms) is measured
 * against it: what is left above this floor is the server's own.
 *
 *   sendfloor [-n 1000] [--size 3900] [--rounds 50] [--seal]
 *             [--send-cpu 0] [--read-cpu 1] [--threads 1]
 *
 * Prints one key=value line: the median and worst round (wall time of the
 * sends to all N), and the sender's CPU time per round and per send (its
 * schedstat: with the loopback receive work done in its context, as for
 * the server). Rounds are 20 ms apart, so the reader has drained.
 * --threads 2 splits the connections between two sending threads, each
 * with a batch of its own, the second on the core after --send-cpu (the
 * reader's, on a 2-core machine): what a fan-out spread over two cores
 * could reach here, beside the reader.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bn.h"
#include "lib/sendbatch.h"
#include "lib/tls13.h"

#define BATCH_SENDS 256 /* as lib/http.c's batch */
#define BATCH_ARENA (256u * 1024)

struct opts {
	int n, size, rounds, send_cpu, read_cpu;
	int threads;
	bool seal;
};

/* This thread's CPU time as the scheduler counts it (schedstat). */
static int64_t self_cpu_ns(void)
{
	long long ns = -1;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f && fscanf(f, "%lld", &ns) != 1)
		ns = -1;
	if (f)
		fclose(f);
	return ns;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) < 0)
		perror("sendfloor: sched_setaffinity");
}

/* n connected pairs on 127.0.0.1: srv[i] accepted, cli[i] connected. */
static int connect_pairs(int n, int *srv, int *cli)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4096) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		int one = 1;
		cli[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (cli[i] < 0 || connect(cli[i], (struct sockaddr *)&a, sizeof(a)) < 0)
			return -errno;
		/* receive timestamps, as bench/watchers asks (the loopback
		 * receive stamps each packet in the sender's context) */
		setsockopt(cli[i], SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
		srv[i] = accept(l, NULL, NULL);
		if (srv[i] < 0)
			return -errno;
		setsockopt(srv[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	close(l);
	return 0;
}

/* The reader: drains every connection until they all close. */
static void reader(const struct opts *o, const int *cli)
{
	pin(o->read_cpu);
	int ep = epoll_create1(0), open = o->n;
	for (int i = 0; i < o->n; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = cli[i]};
		epoll_ctl(ep, EPOLL_CTL_ADD, cli[i], &ev);
	}
	static char buf[65536];
	struct epoll_event evs[512];
	while (open > 0) {
		int k = epoll_wait(ep, evs, 512, -1);
		for (int i = 0; i < k; i++) {
			ssize_t r = recv(evs[i].data.fd, buf, sizeof(buf), 0);
			if (r == 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, evs[i].data.fd, NULL);
				open--;
			}
		}
	}
	_exit(0);
}

static void on_sent(void *owner, size_t sent, const uint8_t *rest, size_t rest_len, int err,
		    void *arg)
{
	(void)owner;
	(void)sent;
	(void)rest;
	long *short_sends = arg;
	if (err || rest_len)
		(*short_sends)++;
}

/* A sending thread: connections [from, to) of every round. */
struct sender {
	const struct opts *o;
	const int *srv;
	struct kb_tls13_writer *w;
	const char *payload;
	int from, to, cpu;
	kb_sendbatch_t *b;
	long short_sends;
	int64_t cpu_ns; /* over the measured rounds */
	double *wall;   /* the round's wall time, ms (thread 0's) */
	pthread_barrier_t *start, *done;
};

/* One round: each of the sender's connections gets the buffer (sealed
 * under its own key). */
static int round_once(struct sender *s)
{
	const struct opts *o = s->o;
	size_t need = o->seal ? kb_tls13_sealed_size((size_t)o->size) : (size_t)o->size;
	for (int i = s->from; i < s->to; i++) {
		uint8_t *room = kb_sendbatch_room(s->b, need);
		if (!room) {
			kb_sendbatch_flush(s->b, on_sent, &s->short_sends);
			room = kb_sendbatch_room(s->b, need);
		}
		if (!room)
			return -ENOMEM;
		size_t len = need;
		if (o->seal) {
			struct iovec v = {.iov_base = (void *)s->payload,
					  .iov_len = (size_t)o->size};
			if (kb_tls13_seal(&s->w[i], KB_TLS13_APPLICATION_DATA, &v, 1, room, &len) <
			    0)
				return -EIO;
		} else {
			memcpy(room, s->payload, len);
		}
		kb_sendbatch_add(s->b, s->srv[i], len, (void *)(intptr_t)(i + 1));
	}
	kb_sendbatch_flush(s->b, on_sent, &s->short_sends);
	return 0;
}

/* Warm-up round, then the measured ones; the rounds start together and
 * thread 0 times each from its start to the end of the slowest sender. */
static void *sender_main(void *arg)
{
	struct sender *s = arg;
	pin(s->cpu);
	s->b = kb_sendbatch_new(BATCH_SENDS, BATCH_ARENA);
	if (!s->b)
		exit(1);
	for (int r = -1; r < s->o->rounds; r++) {
		pthread_barrier_wait(s->start);
		int64_t c0 = self_cpu_ns(), t0 = bn_mono_ns();
		if (round_once(s) < 0)
			exit(1);
		if (r >= 0)
			s->cpu_ns += self_cpu_ns() - c0;
		pthread_barrier_wait(s->done);
		if (r >= 0 && s->wall)
			s->wall[r] = (double)(bn_mono_ns() - t0) / 1e6;
		if (s->wall)
			usleep(20000); /* the reader drains */
	}
	kb_sendbatch_free(s->b);
	return NULL;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"size", required_argument, NULL, 's'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"seal", no_argument, NULL, 'e'},
	    {"send-cpu", required_argument, NULL, 'S'},
	    {"read-cpu", required_argument, NULL, 'R'},
	    {"threads", required_argument, NULL, 't'},
	    {NULL, 0, NULL, 0},
	};
	*o = (struct opts){
	    .n = 1000, .size = 3900, .rounds = 50, .send_cpu = 0, .read_cpu = 1, .threads = 1};
	int ch;
	while ((ch = getopt_long(argc, argv, "n:", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': o->n = atoi(optarg); break;
		case 's': o->size = atoi(optarg); break;
		case 'r': o->rounds = atoi(optarg); break;
		case 'e': o->seal = true; break;
		case 'S': o->send_cpu = atoi(optarg); break;
		case 'R': o->read_cpu = atoi(optarg); break;
		case 't': o->threads = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: sendfloor [-n N] [--size B] [--rounds R] [--seal] "
					"[--send-cpu C] [--read-cpu C] [--threads 1|2]\n");
			exit(2);
		}
	}
	if (o->n <= 1 || o->size <= 0 || o->size > (int)KB_TLS13_MAX_PLAIN || o->rounds <= 0 ||
	    o->threads < 1 || o->threads > 2)
		exit(2);
}

/* n writers, each keyed from a secret of its own. */
static struct kb_tls13_writer *writers(const struct opts *o)
{
	struct kb_tls13_writer *w = calloc((size_t)o->n, sizeof(*w));
	uint8_t secret[32];
	for (int i = 0; w && o->seal && i < o->n; i++) {
		for (int j = 0; j < 32; j++)
			secret[j] = (uint8_t)(i * 31 + j);
		if (kb_tls13_writer_init(&w[i], KB_TLS13_AES_128_GCM_SHA256, secret, 32, 0))
			return NULL;
	}
	return w;
}

int main(int argc, char **argv)
{
	struct opts o;
	parse_opts(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	int *srv = calloc((size_t)o.n, sizeof(int)), *cli = calloc((size_t)o.n, sizeof(int));
	struct kb_tls13_writer *w = writers(&o);
	char *payload = malloc((size_t)o.size);
	double *wall = calloc((size_t)o.rounds, sizeof(double));
	if (!srv || !cli || !w || !payload || !wall || connect_pairs(o.n, srv, cli) < 0) {
		perror("sendfloor: set-up");
		return 1;
	}
	memset(payload, 'x', (size_t)o.size);
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < o.n; i++)
			close(srv[i]);
		reader(&o, cli);
	}
	for (int i = 0; i < o.n; i++)
		close(cli[i]);
	pthread_barrier_t start, done;
	pthread_barrier_init(&start, NULL, (unsigned)o.threads);
	pthread_barrier_init(&done, NULL, (unsigned)o.threads);
	struct sender s[2];
	pthread_t th[2];
	for (int t = 0; t < o.threads; t++) {
		s[t] = (struct sender){.o = &o,
				       .srv = srv,
				       .w = w,
				       .payload = payload,
				       .from = o.n * t / o.threads,
				       .to = o.n * (t + 1) / o.threads,
				       .cpu = o.send_cpu + t,
				       .wall = t == 0 ? wall : NULL,
				       .start = &start,
				       .done = &done};
		pthread_create(&th[t], NULL, sender_main, &s[t]);
	}
	long short_sends = 0;
	int64_t cpu = 0;
	for (int t = 0; t < o.threads; t++) {
		pthread_join(th[t], NULL);
		short_sends += s[t].short_sends;
		cpu += s[t].cpu_ns;
	}
	for (int i = 0; i < o.n; i++)
		close(srv[i]);
	waitpid(child, NULL, 0);
	double p50 = bn_quantile(wall, (size_t)o.rounds, 0.5);
	double max = bn_quantile(wall, (size_t)o.rounds, 1.0);
	printf("sendfloor: n=%d size=%d seal=%d threads=%d rounds=%d round_p50_ms=%.3f "
	       "round_max_ms=%.3f cpu_per_round_ms=%.3f cpu_per_send_us=%.2f short_sends=%ld\n",
	       o.n, o.size, o.seal, o.threads, o.rounds, p50, max, (double)cpu / 1e6 / o.rounds,
	       (double)cpu / 1e3 / o.rounds / o.n, short_sends);
	return 0;
}
