/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-tenant supervisor (`kubicle supervise NAME`, started by kubicle
 * create/start). One process per tenant, holding DIR/supervisor.lock so
 * there is never a second one:
 *   - runs `kubicle serve` for the tenant with the settings of tenant.json,
 *     on the port its first start chose (read back from DIR/kubeconfig), so
 *     kubeconfigs handed out keep working across restarts;
 *   - when the server exits without being told to, starts it again after a
 *     back-off (0.1 s doubling to 30 s, reset after 60 s of uptime), as a
 *     kubelet restarts a crashing container; a server that fails on its
 *     very first start (bad settings) is not retried: DIR/failed says why;
 *   - SIGTERM/SIGINT: stops the server (SIGTERM, SIGKILL after 10 s), exits;
 *   - at the TTL, stops the server and deletes the tenant, host objects
 *     included, whether or not anybody runs kubicle; the TTL counts the
 *     time this process has run (supervise.h), saved in DIR/ttl-used.
 * Signals are taken synchronously with sigtimedwait: no handlers, no races.
 */
#include "cmd/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/hostsetup.h"
#include "cmd/serve.h"
#include "lib/pki.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000
#define STABLE_MS      60000
#define STOP_GRACE_MS  10000
#define LOCK_TRIES     40
#define TTL_SAVE_MS    60000

static int self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int open_log(const struct tenant *t)
{
	char path[PATH_MAX];
	home_path(t, "server.log", path, sizeof(path));
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

int supervise_spawn(const struct tenant *t)
{
	char exe[PATH_MAX];
	int rc = self_exe(exe, sizeof(exe));
	if (rc < 0)
		return rc;
	int logfd = open_log(t);
	if (logfd < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(logfd);
		return rc;
	}
	if (pid == 0) {
		/* first child: a new session, then the supervisor as its child so
		 * that it is nobody's child but init's (or a subreaper's) */
		setsid();
		if (fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		execl(exe, "kubicle", "supervise", t->name, (char *)NULL);
		_exit(127);
	}
	close(logfd);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* ---- the supervisor ----------------------------------------------------------------- */

struct sup {
	struct tenant t;
	pid_t child;
	int64_t started_ms; /* when the current child started */
	int64_t restart_ms; /* when to start the next one; 0: none due */
	unsigned backoff_ms;
	bool ever_ready;     /* a server of ours wrote its kubeconfig */
	time_t renew_at;     /* when to renew the syncer's host token; 0: no host */
	long ttl_used;       /* seconds of the TTL used up to ttl_mark_ms */
	int64_t ttl_mark_ms; /* now_ms() when ttl_used was last brought up to date */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(stderr, "%s supervisor: ", ts);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/* ---- time to live (supervise.h) ------------------------------------------------------ */

static long ttl_of(const struct tenant *t)
{
	return t->expires > t->created ? (long)(t->expires - t->created) : 1;
}

static long ttl_used_saved(const struct tenant *t)
{
	char path[PATH_MAX], *text = NULL, *end;
	long used = 0;
	home_path(t, "ttl-used", path, sizeof(path));
	if (kb_read_file(path, &text, NULL) == 0) {
		long v = strtol(text, &end, 10);
		if (end != text && v >= 0)
			used = v;
	}
	free(text);
	return used;
}

long supervise_ttl_left(const struct tenant *t)
{
	if (!t->expires)
		return LONG_MAX;
	return ttl_of(t) - ttl_used_saved(t);
}

/* Adds the whole seconds run since the mark to ttl_used and saves it. */
static void ttl_save(struct sup *s)
{
	char path[PATH_MAX], text[32];
	int64_t now = now_ms(), secs = (now - s->ttl_mark_ms) / 1000;
	if (!s->t.expires)
		return;
	s->ttl_used += (long)secs;
	s->ttl_mark_ms += secs * 1000;
	home_path(&s->t, "ttl-used", path, sizeof(path));
	snprintf(text, sizeof(text), "%ld\n", s->ttl_used);
	if (kb_write_file(path, text, strlen(text), 0600) < 0)
		say("cannot save %s: the time to live counted since the last save is lost", path);
}

/* Milliseconds of the TTL left, counted on the monotonic clock. */
static int64_t ttl_left_ms(const struct sup *s)
{
	return ((int64_t)ttl_of(&s->t) - s->ttl_used) * 1000 - (now_ms() - s->ttl_mark_ms);
}

static void ttl_start(struct sup *s)
{
	if (!s->t.expires)
		return;
	s->ttl_used = ttl_used_saved(&s->t);
	s->ttl_mark_ms = now_ms();
	say("time to live: %lds of %lds used (counted while supervised; the calendar says %s)",
	    s->ttl_used, ttl_of(&s->t), s->t.expires <= time(NULL) ? "expired" : "not expired");
}

/* The listen address: the first start's choice of port is kept. */
static void listen_addr(const struct tenant *t, char *buf, size_t len)
{
	const char *colon = strrchr(t->listen, ':');
	int port = home_port(t);
	if (colon && strcmp(colon, ":0") == 0 && port > 0)
		snprintf(buf, len, "%.*s:%d", (int)(colon - t->listen), t->listen, port);
	else
		snprintf(buf, len, "%s", t->listen[0] ? t->listen : "127.0.0.1:0");
}

static void exec_server(struct sup *s)
{
	const struct tenant *t = &s->t;
	char listen[160], hostkc[PATH_MAX], egress[sizeof(t->egress_allow)];
	const char *argv[32 + 2 * TENANT_EGRESS_MAX];
	int n = 0;
	listen_addr(t, listen, sizeof(listen));
	home_path(t, "host.kubeconfig", hostkc, sizeof(hostkc));
	argv[n++] = "kubicle";
	argv[n++] = "serve";
	argv[n++] = "--data-dir";
	argv[n++] = t->dir;
	argv[n++] = "--listen";
	argv[n++] = listen;
	if (t->advertise[0]) {
		argv[n++] = "--advertise-address";
		argv[n++] = t->advertise;
	}
	if (t->policy[0]) {
		argv[n++] = "--policy";
		argv[n++] = t->policy;
	}
	if (t->floor[0]) {
		argv[n++] = "--floor";
		argv[n++] = t->floor;
	}
	if (t->host_kubeconfig[0]) {
		argv[n++] = "--host-kubeconfig";
		argv[n++] = hostkc;
		argv[n++] = "--host-namespace";
		argv[n++] = t->host_namespace;
		argv[n++] = "--tenant";
		argv[n++] = t->name;
		argv[n++] = "--scheduler";
		argv[n++] = t->scheduler;
		if (t->queue[0]) {
			argv[n++] = "--queue";
			argv[n++] = t->queue;
		}
	}
	snprintf(egress, sizeof(egress), "%s", t->egress_allow);
	int ne = 0;
	for (char *save = NULL, *c = strtok_r(egress, ",", &save); c && ne < TENANT_EGRESS_MAX;
	     c = strtok_r(NULL, ",", &save), ne++) {
		argv[n++] = "--egress-allow";
		argv[n++] = c;
	}
	argv[n] = NULL;
	/* a fork of a process that has loaded nothing yet: serve in it */
	exit(cmd_serve(n - 1, (char **)argv + 1));
}

static int start_child(struct sup *s, const sigset_t *old)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* the server goes with its supervisor (even a kill -9 of it): no
		 * orphan keeps the port, and the tenant shows as Dead */
		pid_t parent = getppid();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(0);
		sigprocmask(SIG_SETMASK, old, NULL);
		exec_server(s);
	}
	s->child = pid;
	s->started_ms = now_ms();
	s->restart_ms = 0;
	char path[PATH_MAX], text[32];
	home_path(&s->t, "server.pid", path, sizeof(path));
	snprintf(text, sizeof(text), "%d\n", (int)pid);
	kb_write_file(path, text, strlen(text), 0600);
	return 0;
}

static void write_failed(const struct sup *s, const char *why)
{
	char path[PATH_MAX];
	home_path(&s->t, "failed", path, sizeof(path));
	kb_write_file(path, why, strlen(why), 0600);
}

/* Stops the child: SIGTERM, then SIGKILL after the grace period. */
static void stop_child(struct sup *s)
{
	if (s->child <= 0)
		return;
	kill(s->child, SIGTERM);
	int64_t until = now_ms() + STOP_GRACE_MS;
	for (;;) {
		int st;
		pid_t p = waitpid(s->child, &st, WNOHANG);
		if (p == s->child || (p < 0 && errno == ECHILD))
			break;
		if (now_ms() > until) {
			say("server %d did not stop in %d s: killing it", (int)s->child,
			    STOP_GRACE_MS / 1000);
			kill(s->child, SIGKILL);
			waitpid(s->child, &st, 0);
			break;
		}
		usleep(10000);
	}
	s->child = 0;
}

/* Reaps the child; false when the supervisor should give up. */
static bool on_child_exit(struct sup *s, int st)
{
	int64_t up = now_ms() - s->started_ms;
	char why[256];
	if (WIFEXITED(st))
		snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(st));
	else
		snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(st));
	s->child = 0;
	if (home_port(&s->t) > 0)
		s->ever_ready = true;
	if (!s->ever_ready && WIFEXITED(st) && WEXITSTATUS(st) != 0) {
		char msg[400];
		snprintf(msg, sizeof(msg), "the server %s on its first start; see server.log\n",
			 why);
		write_failed(s, msg);
		say("server %s before it ever served: giving up", why);
		return false;
	}
	if (up > STABLE_MS)
		s->backoff_ms = BACKOFF_MIN_MS;
	say("server %s after %lld ms; restarting in %u ms", why, (long long)up, s->backoff_ms);
	s->restart_ms = now_ms() + s->backoff_ms;
	s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
	return true;
}

/* The syncer's host token is renewed at 80 % of its life (the syncer
 * re-reads the file); a failure is retried a minute later. */
static void plan_renewal(struct sup *s)
{
	char path[PATH_MAX];
	struct stat sb;
	s->renew_at = 0;
	if (!s->t.host_kubeconfig[0])
		return;
	home_path(&s->t, "host-token", path, sizeof(path));
	s->renew_at = stat(path, &sb) == 0 ? sb.st_mtime + HOST_TOKEN_SECONDS * 4 / 5 : 1;
}

static void renew_token(struct sup *s)
{
	hostapi_t *h = NULL;
	char err[3072] = "";
	int rc = hostapi_open(s->t.host_kubeconfig, 0, &h);
	if (rc == 0)
		rc = host_issue_token(h, &s->t, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s: %s", s->t.host_kubeconfig, strerror(-rc));
	hostapi_close(h);
	if (rc < 0) {
		say("renewing the host token: %s; retrying in a minute", err);
		s->renew_at = time(NULL) + 60;
		return;
	}
	say("host token renewed");
	plan_renewal(s);
}

static int take_lock(const struct tenant *t)
{
	char path[PATH_MAX];
	home_path(t, "supervisor.lock", path, sizeof(path));
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* a reader (kubicle list) may hold a shared lock for an instant */
	for (int i = 0; i < LOCK_TRIES; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		usleep(5000);
	}
	close(fd);
	return -EBUSY;
}

/* The TTL is up: the store is kept (tenant_keep_expired), then the tenant
 * deleted. false when the store could not be kept: the server runs again
 * and the deletion is tried a minute later. */
static bool expire(struct sup *s, const sigset_t *old)
{
	char kept[PATH_MAX];
	say("time to live is up: deleting tenant %s", s->t.name);
	stop_child(s);
	if (tenant_keep_expired(&s->t, kept, sizeof(kept)) < 0) {
		say("its store could not be kept: not deleted; trying again in a minute");
		s->ttl_used -= 60; /* another minute to run */
		if (start_child(s, old) < 0)
			s->restart_ms = now_ms() + s->backoff_ms;
		return false;
	}
	say("its store is kept in %s (kubicle restore NAME FILE)", kept);
	int rc = tenant_destroy(&s->t, false, true, 120);
	if (rc < 0)
		say("deleting tenant %s: %s", s->t.name, strerror(-rc));
	return true;
}

static int run(struct sup *s, const sigset_t *set, const sigset_t *old)
{
	if (start_child(s, old) < 0)
		return 1;
	for (;;) {
		int64_t now = now_ms();
		int64_t wait = 3600 * 1000;
		if (s->restart_ms)
			wait = s->restart_ms > now ? s->restart_ms - now : 0;
		if (s->renew_at) {
			int64_t left = ((int64_t)s->renew_at - time(NULL)) * 1000;
			if (left <= 0) {
				renew_token(s);
				continue;
			}
			if (left < wait)
				wait = left;
		}
		if (s->t.expires) {
			int64_t left = ttl_left_ms(s);
			if (left <= 0) {
				ttl_save(s);
				if (expire(s, old))
					return 0;
				continue;
			}
			if (now_ms() - s->ttl_mark_ms >= TTL_SAVE_MS)
				ttl_save(s);
			int64_t save = TTL_SAVE_MS - (now_ms() - s->ttl_mark_ms);
			if (left < wait)
				wait = left;
			if (save < wait)
				wait = save > 0 ? save : 0;
		}
		struct timespec ts = {.tv_sec = wait / 1000, .tv_nsec = (wait % 1000) * 1000000};
		siginfo_t info;
		int sig = sigtimedwait(set, &info, &ts);
		if (sig == SIGTERM || sig == SIGINT) {
			say("stopping (signal %d)", sig);
			stop_child(s);
			ttl_save(s);
			return 0;
		}
		if (sig == SIGCHLD) {
			int st;
			pid_t p;
			while ((p = waitpid(-1, &st, WNOHANG)) > 0)
				if (p == s->child && !on_child_exit(s, st))
					return 1;
			continue;
		}
		if (s->restart_ms && now_ms() >= s->restart_ms && start_child(s, old) < 0) {
			say("cannot start the server: %s", strerror(errno));
			s->restart_ms = now_ms() + s->backoff_ms;
		}
	}
}

int cmd_supervise(int argc, char **argv)
{
	struct sup s = {.backoff_ms = BACKOFF_MIN_MS};
	if (argc != 2) {
		fprintf(stderr,
			"usage: kubicle supervise NAME (started by kubicle create/start)\n");
		return 2;
	}
	if (home_load(argv[1], &s.t) < 0) {
		say("no tenant %s", argv[1]);
		return 1;
	}
	int lock = take_lock(&s.t);
	if (lock < 0)
		return 0; /* another supervisor runs it */
	char path[PATH_MAX], text[32];
	home_path(&s.t, "failed", path, sizeof(path));
	unlink(path);
	home_path(&s.t, "supervisor.pid", path, sizeof(path));
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	kb_write_file(path, text, strlen(text), 0600);
	s.ever_ready = home_port(&s.t) > 0;
	plan_renewal(&s);
	ttl_start(&s);
	if (s.renew_at && s.renew_at <= time(NULL))
		renew_token(&s); /* before the server needs it */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	say("supervising tenant %s (pid %d)", s.t.name, (int)getpid());
	int rc = run(&s, &set, &old);
	home_path(&s.t, "server.pid", path, sizeof(path));
	unlink(path);
	close(lock);
	return rc;
}
