/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenants' home folder (layout in home.h): tenant.json in and out,
 * listing, process liveness and tree removal.
 */
#include "cmd/home.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/kubeconfig.h"
#include "lib/pki.h"
#include "syncer/syncer.h"

int home_dir(char *buf, size_t len)
{
	const char *h = getenv("KUBICLE_HOME");
	char tmp[PATH_MAX];
	int n;
	if (h && *h) {
		n = snprintf(tmp, sizeof(tmp), "%s", h);
	} else {
		const char *home = getenv("HOME");
		if (!home || !*home)
			return -ENOENT;
		n = snprintf(tmp, sizeof(tmp), "%s/.kubicle", home);
	}
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (tmp[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		n = snprintf(buf, len, "%s/%s", cwd, tmp);
	} else {
		n = snprintf(buf, len, "%s", tmp);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *home_check_name(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > TENANT_NAME_MAX)
		return "a tenant name has 1 to 40 characters";
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return "a tenant name has lower case letters, digits and '-' only";
	}
	if (name[0] == '-' || name[n - 1] == '-')
		return "a tenant name starts and ends with a letter or digit";
	return syncer_check_tenant(name); /* what the host names need */
}

int home_tenant_dir(const char *name, char *buf, size_t len)
{
	char home[PATH_MAX];
	if (home_check_name(name))
		return -EINVAL;
	int rc = home_dir(home, sizeof(home));
	if (rc < 0)
		return rc;
	int n = snprintf(buf, len, "%s/tenants/%s", home, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void home_path(const struct tenant *t, const char *file, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", t->dir, file);
}

static void copy_str(char *dst, size_t len, const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	snprintf(dst, len, "%s", s ? s : "");
}

/* tenant.json's "egressAllow": an array of prefixes, kept joined by commas. */
static void egress_load(struct tenant *t, const json_t *arr)
{
	size_t i, n = 0;
	json_t *v;
	t->egress_allow[0] = '\0';
	json_array_foreach (arr, i, v) {
		const char *c = json_string_value(v);
		size_t used = strlen(t->egress_allow);
		if (!c || !*c || strchr(c, ',') || n == TENANT_EGRESS_MAX)
			continue;
		snprintf(t->egress_allow + used, sizeof(t->egress_allow) - used, "%s%s",
			 used ? "," : "", c);
		n++;
	}
}

static json_t *egress_json(const struct tenant *t)
{
	json_t *arr = json_array();
	const char *p = t->egress_allow;
	while (arr && *p) {
		size_t n = strcspn(p, ",");
		json_array_append_new(arr, json_stringn(p, n));
		p += n + (p[n] == ',');
	}
	return arr;
}

int home_load(const char *name, struct tenant *t)
{
	char path[PATH_MAX];
	memset(t, 0, sizeof(*t));
	int rc = home_tenant_dir(name, t->dir, sizeof(t->dir));
	if (rc < 0)
		return rc;
	home_path(t, "tenant.json", path, sizeof(path));
	json_error_t err;
	json_t *o = json_load_file(path, 0, &err);
	if (!o)
		return access(path, F_OK) == 0 ? -EINVAL : -ENOENT;
	snprintf(t->name, sizeof(t->name), "%s", name);
	copy_str(t->host_kubeconfig, sizeof(t->host_kubeconfig), o, "hostKubeconfig");
	copy_str(t->host_namespace, sizeof(t->host_namespace), o, "hostNamespace");
	copy_str(t->queue, sizeof(t->queue), o, "queue");
	copy_str(t->scheduler, sizeof(t->scheduler), o, "scheduler");
	copy_str(t->policy, sizeof(t->policy), o, "policy");
	copy_str(t->floor, sizeof(t->floor), o, "floor");
	copy_str(t->listen, sizeof(t->listen), o, "listen");
	copy_str(t->advertise, sizeof(t->advertise), o, "advertiseAddress");
	egress_load(t, json_object_get(o, "egressAllow"));
	t->gpus = (long)json_integer_value(json_object_get(o, "gpus"));
	t->created = (time_t)json_integer_value(json_object_get(o, "created"));
	t->expires = (time_t)json_integer_value(json_object_get(o, "expires"));
	t->stopped = json_is_true(json_object_get(o, "stopped"));
	t->made_namespace = json_is_true(json_object_get(o, "madeNamespace"));
	t->made_queue = json_is_true(json_object_get(o, "madeQueue"));
	char *lim = json_is_object(json_object_get(o, "hostLimits"))
			? json_dumps(json_object_get(o, "hostLimits"), JSON_COMPACT)
			: NULL;
	if (lim && strlen(lim) < sizeof(t->host_limits))
		snprintf(t->host_limits, sizeof(t->host_limits), "%s", lim);
	free(lim);
	json_decref(o);
	return 0;
}

int home_save(const struct tenant *t)
{
	json_t *o = json_pack(
	    "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:b,s:b,s:b}", "name", t->name,
	    "hostKubeconfig", t->host_kubeconfig, "hostNamespace", t->host_namespace, "queue",
	    t->queue, "scheduler", t->scheduler, "policy", t->policy, "listen", t->listen,
	    "advertiseAddress", t->advertise, "gpus", (json_int_t)t->gpus, "created",
	    (json_int_t)t->created, "expires", (json_int_t)t->expires, "stopped", t->stopped,
	    "madeNamespace", t->made_namespace, "madeQueue", t->made_queue);
	if (o && t->egress_allow[0])
		json_object_set_new(o, "egressAllow", egress_json(t));
	if (o && t->floor[0])
		json_object_set_new(o, "floor", json_string(t->floor));
	if (o && t->host_limits[0])
		json_object_set_new(o, "hostLimits", json_loads(t->host_limits, 0, NULL));
	char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (!text)
		return -ENOMEM;
	char path[PATH_MAX];
	home_path(t, "tenant.json", path, sizeof(path));
	int rc = kb_write_file(path, text, strlen(text), 0600);
	free(text);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int home_list(char ***out, size_t *n)
{
	char home[PATH_MAX], dir[PATH_MAX + 16];
	*out = NULL;
	*n = 0;
	int rc = home_dir(home, sizeof(home));
	if (rc < 0)
		return rc;
	snprintf(dir, sizeof(dir), "%s/tenants", home);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	char **names = NULL;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (home_check_name(e->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				rc = -ENOMEM;
				break;
			}
			names = nn;
		}
		if (!(names[*n] = strdup(e->d_name))) {
			rc = -ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (rc < 0) {
		home_free_names(names, *n);
		*n = 0;
		return rc;
	}
	if (*n)
		qsort(names, *n, sizeof(*names), cmp_names);
	*out = names;
	return 0;
}

void home_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int read_pid(const struct tenant *t, const char *file)
{
	char path[PATH_MAX], *text = NULL;
	home_path(t, file, path, sizeof(path));
	if (kb_read_file(path, &text, NULL) < 0)
		return 0;
	long pid = strtol(text, NULL, 10);
	free(text);
	return pid > 1 && pid < INT_MAX ? (int)pid : 0;
}

/* Alive and not a zombie (an exited process whose parent, maybe an init
 * that does not reap, has not collected it). */
bool home_pid_alive(int pid)
{
	char path[64], buf[256];
	if (kill(pid, 0) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')');
	return !(paren && paren[1] == ' ' && paren[2] == 'Z');
}

int home_pid(const struct tenant *t, const char *file)
{
	int pid = read_pid(t, file);
	return pid > 0 && home_pid_alive(pid) ? pid : 0;
}

bool home_supervisor_alive(const struct tenant *t, int *pid)
{
	char path[PATH_MAX];
	home_path(t, "supervisor.lock", path, sizeof(path));
	if (pid)
		*pid = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	if (held && pid)
		*pid = read_pid(t, "supervisor.pid");
	return held;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

int home_rmtree(const char *dir)
{
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

/* The port of the server address in kubeconfig text written by our own
 * server (lib/kubeconfig: one cluster, `server: "https://HOST:PORT"` on a
 * line of its own); 0 when the text is not shaped so. A YAML parse of the
 * file (kb_kubeconfig_load) was 35 % of `kubicle list`'s instructions per
 * tenant; kubicle list and the supervisor only need the port. */
static long scan_port(const char *text)
{
	const char *v = NULL;
	for (const char *l = text; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *key = l + strspn(l, " ");
		if (strncmp(key, "server:", 7) != 0)
			continue;
		if (v)
			return 0; /* two clusters: not ours, ask the parser */
		v = key + 7;
	}
	if (!v)
		return 0;
	size_t n = strcspn(v, "\n");
	while (n && (v[n - 1] == '"' || v[n - 1] == ' ' || v[n - 1] == '\r'))
		n--;
	size_t digits = 0;
	while (digits < n && v[n - 1 - digits] >= '0' && v[n - 1 - digits] <= '9')
		digits++;
	if (!digits || digits > 5 || digits == n || v[n - 1 - digits] != ':')
		return 0;
	return strtol(v + n - digits, NULL, 10);
}

int home_port(const struct tenant *t)
{
	char path[PATH_MAX], *text = NULL;
	struct kb_kubeconfig_creds cr;
	home_path(t, "kubeconfig", path, sizeof(path));
	if (kb_read_file(path, &text, NULL) < 0)
		return 0;
	long port = scan_port(text);
	free(text);
	if (port <= 0 && kb_kubeconfig_load(path, NULL, &cr) == 0) {
		const char *colon = cr.server ? strrchr(cr.server, ':') : NULL;
		port = colon ? strtol(colon + 1, NULL, 10) : 0;
		kb_kubeconfig_creds_free(&cr);
	}
	return port > 0 && port < 65536 ? (int)port : 0;
}
