/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start-up benchmark: starts a server RUNS times and measures, for each run,
 * the time from fork() until a GET over TLS answers 200; prints the median,
 * p90, min and max in milliseconds as one line of key=value pairs.
 *
 *   startup [--runs 30] (--port P | --kubeconfig PATTERN) [--path /readyz]
 *           [--cert F --key F] [--log FILE] [--label L] [--trace] -- CMD ARG...
 *
 * "{}" in CMD's arguments and in PATTERN is replaced by the run number, so
 * each run can get an empty data directory. With --kubeconfig the port is
 * read from the file's `server:` line (quoted or not) once the file is complete;
 * the file is removed before each run, so a start on an existing data dir
 * (the same PATTERN run again) does not probe the previous run's port.
 * Between probes the tool sleeps 100 us. Each server is stopped with SIGTERM
 * (SIGKILL after 3 s) before the next run. --trace sets KUBICLE_TRACE_START
 * in each child to the time of its fork (CLOCK_REALTIME, ns), so that a
 * kubicle server logs each step of its start from there (cmd/serve.c), and
 * prints each run's time and when the port was read to stderr
 * (bench/startup_trace.sh reads both).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bn.h"

#define PROBE_SLEEP_US   100
#define START_TIMEOUT_NS (10LL * 1000000000)

struct opts {
	int runs, port;
	const char *kubeconfig, *path, *cert, *key, *log, *label;
	bool trace;
	char **cmd;
};

static void usage(void)
{
	fprintf(stderr, "usage: startup [--runs N] (--port P | --kubeconfig PATTERN) "
			"[--path P] [--cert F --key F] [--log FILE] [--label L] [--trace] "
			"-- CMD ARG...\n");
	exit(2);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"runs", required_argument, NULL, 'r'},
	    {"port", required_argument, NULL, 'p'},
	    {"kubeconfig", required_argument, NULL, 'k'},
	    {"path", required_argument, NULL, 'u'},
	    {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'K'},
	    {"log", required_argument, NULL, 'L'},
	    {"label", required_argument, NULL, 'l'},
	    {"trace", no_argument, NULL, 't'},
	    {NULL, 0, NULL, 0},
	};
	*o = (struct opts){.runs = 30, .path = "/", .label = "startup"};
	int ch;
	while ((ch = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (ch) {
		case 'r': o->runs = atoi(optarg); break;
		case 'p': o->port = atoi(optarg); break;
		case 'k': o->kubeconfig = optarg; break;
		case 'u': o->path = optarg; break;
		case 'C': o->cert = optarg; break;
		case 'K': o->key = optarg; break;
		case 'L': o->log = optarg; break;
		case 'l': o->label = optarg; break;
		case 't': o->trace = true; break;
		default: usage();
		}
	}
	if (optind >= argc || o->runs <= 0 || (!o->port && !o->kubeconfig))
		usage();
	o->cmd = argv + optind;
}

/* A copy of `s` with each "{}" replaced by `run`. Caller frees. */
static char *subst(const char *s, int run)
{
	struct bn_buf b = {0};
	char num[16];
	int n = snprintf(num, sizeof(num), "%d", run);
	for (const char *p = s; *p; p++) {
		if (p[0] == '{' && p[1] == '}') {
			bn_buf_append(&b, num, (size_t)n);
			p++;
		} else {
			bn_buf_append(&b, p, 1);
		}
	}
	bn_buf_append(&b, "", 0);
	return b.data;
}

static pid_t spawn(const struct opts *o, int run)
{
	size_t argc = 0;
	while (o->cmd[argc])
		argc++;
	char **argv = calloc(argc + 1, sizeof(*argv));
	for (size_t i = 0; i < argc; i++)
		argv[i] = subst(o->cmd[i], run);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	pid_t pid = fork();
	if (pid == 0) {
		if (o->trace) {
			char v[32];
			snprintf(v, sizeof(v), "%lld",
				 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
			setenv("KUBICLE_TRACE_START", v, 1);
		}
		int fd = open(o->log ? o->log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
	return pid;
}

/* The port named by the kubeconfig's `server:` line, or 0 while not there. */
static int kubeconfig_port(const char *path)
{
	struct bn_buf b = {0};
	int port = 0;
	if (bn_buf_read_file(&b, path) < 0 || !b.data)
		goto out;
	const char *s = strstr(b.data, "server:");
	s = s ? strstr(s, "https://") : NULL;
	const char *eol = s ? strchr(s, '\n') : NULL;
	if (!eol)
		goto out;
	const char *colon = eol;
	while (colon > s && *colon != ':')
		colon--;
	port = atoi(colon + 1);
out:
	bn_buf_free(&b);
	return port;
}

/* One GET; returns the status, or -errno when the server is not answering. */
static int probe(SSL_CTX *ctx, int port, const char *path)
{
	char req[512];
	struct bn_conn c;
	struct bn_resp r;
	int fd = bn_tcp_connect("127.0.0.1", port);
	if (fd < 0)
		return fd;
	int rc = bn_conn_init(&c, ctx, fd);
	if (rc == 0)
		rc = bn_conn_handshake(&c, 2000);
	int n = snprintf(req, sizeof(req),
			 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", path,
			 port);
	if (rc == 0)
		rc = bn_http_roundtrip(&c, req, (size_t)n, &r, 2000);
	bn_conn_close(&c);
	return rc < 0 ? rc : r.status;
}

static void stop(pid_t pid)
{
	int status;
	kill(pid, SIGTERM);
	for (int i = 0; i < 3000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return;
		bn_sleep_us(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* Milliseconds from fork to the first 200, or a negative errno. */
static double one_run(const struct opts *o, SSL_CTX *ctx, int run)
{
	char *kc = o->kubeconfig ? subst(o->kubeconfig, run) : NULL;
	if (kc)
		unlink(kc);
	int64_t t0 = bn_mono_ns();
	pid_t pid = spawn(o, run);
	double ms = -ETIMEDOUT;
	int port = o->port, status;
	while (bn_mono_ns() - t0 < START_TIMEOUT_NS) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "startup: run %d: server exited (status %d)\n", run,
				status);
			free(kc);
			return -ECHILD;
		}
		if (!port && (port = kubeconfig_port(kc)) && o->trace)
			fprintf(stderr, "run %d: port at %.3f ms\n", run,
				(double)(bn_mono_ns() - t0) / 1e6);
		if (port && probe(ctx, port, o->path) == 200) {
			ms = (double)(bn_mono_ns() - t0) / 1e6;
			break;
		}
		bn_sleep_us(PROBE_SLEEP_US);
	}
	stop(pid);
	free(kc);
	return ms;
}

int main(int argc, char **argv)
{
	struct opts o;
	parse_opts(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	SSL_CTX *ctx = bn_ssl_ctx(o.cert, o.key);
	double *ms = calloc((size_t)o.runs, sizeof(*ms));
	if (!ctx || !ms)
		return 1;
	for (int i = 0; i < o.runs; i++) {
		ms[i] = one_run(&o, ctx, i);
		if (o.trace)
			fprintf(stderr, "run %d: %.3f ms\n", i, ms[i]);
		if (ms[i] < 0) {
			fprintf(stderr, "startup: run %d failed: %s\n", i, strerror((int)-ms[i]));
			return 1;
		}
	}
	double p50 = bn_quantile(ms, (size_t)o.runs, 0.5);
	double p90 = bn_quantile(ms, (size_t)o.runs, 0.9);
	printf("%s: runs=%d median_ms=%.2f p90_ms=%.2f min_ms=%.2f max_ms=%.2f\n", o.label, o.runs,
	       p50, p90, ms[0], ms[o.runs - 1]);
	SSL_CTX_free(ctx);
	free(ms);
	return 0;
}
