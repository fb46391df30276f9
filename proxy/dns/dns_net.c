/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenant's cluster DNS on the wire: a UDP socket and a TCP listener on
 * one address, the store as the answers' view (dns.c), and the forwarder
 * for names outside the zone. Contract and DESIGN in dns.h.
 */
#include "proxy/dns/dns.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "proxy/dns/dns_impl.h"
#include "proxy/model/resource.h"

#define MAX_FWD        256          /* forwarded queries in flight */
#define FWD_TIMEOUT_MS 2000         /* then SERVFAIL */
#define MAX_TCP        256          /* TCP clients at once */
#define TCP_IDLE_MS    10000        /* a TCP client with nothing asked is closed */
#define TCP_MAX_QUEUED (256 * 1024) /* answers a TCP client has not taken */
#define UDP_QUERY_MAX  4096         /* a longer UDP query is dropped */
#define UP_BUF         65536

struct tconn;
struct upconn;

/* One query forwarded upstream. */
struct fwd {
	bool used;
	uint16_t id, orig;            /* ours upstream, the client's */
	uint64_t t0;                  /* uv_now at sending */
	struct sockaddr_storage peer; /* UDP client */
	struct tconn *conn;           /* or TCP client (NULL: UDP; gone: cleared) */
	uint8_t *q;                   /* the query, for a SERVFAIL */
	size_t qlen;
	struct upconn *uc; /* a TCP client's query goes upstream over TCP */
};

/* A TCP connection to the upstream for one forwarded query: a TCP client
 * may get an answer UDP would truncate. */
struct upconn {
	uv_tcp_t h;
	uv_connect_t conn;
	uv_write_t wr;
	struct dns *d;
	struct fwd *f; /* NULL once the query is answered or given up */
	uint8_t *wbuf; /* the framed query */
	size_t wlen;
	uint8_t *buf; /* the answer */
	size_t len, cap;
	bool closing;
};

struct tconn {
	uv_tcp_t h;
	uv_timer_t idle;
	struct dns *d;
	uint8_t *buf;
	size_t len, cap;
	int open; /* handles not yet closed */
	bool closing;
	bool refused; /* its peer may not ask (dns_clients_allowed) */
	struct tconn *prev, *next;
};

struct dns {
	uv_loop_t *loop;
	store_t *st;
	char domain[256], host_ns[64];
	struct dns_zone zone;
	uv_udp_t udp;
	uv_tcp_t tcp;
	uv_udp_t up; /* connected to the upstream */
	bool have_up;
	struct sockaddr_storage up_addr;
	uv_timer_t tick;
	int open; /* handles of the server not yet closed */
	bool stopping;
	struct fwd fwd[MAX_FWD];
	size_t nfwd;
	struct tconn *conns;
	size_t nconns;
	uint8_t qbuf[UDP_QUERY_MAX];
	uint8_t *upbuf;
	struct dns_clients *clients; /* who may ask; NULL: anyone */
};

/* ---- the store as the answers' view ----------------------------------------------- */

static const char *store_key(const char *kind)
{
	const struct proxy_resource *r = resource_find("", "v1", kind);
	return r ? r->store_key : "";
}

static json_t *view_get(void *arg, const char *kind, const char *ns, const char *name)
{
	json_t *o = NULL;
	return store_get(arg, store_key(kind), ns, name, &o) == 0 ? o : NULL;
}

struct each_arg {
	bool (*fn)(const json_t *obj, void *farg);
	void *farg;
	bool done;
};

static bool each_filter(const json_t *obj, void *arg)
{
	struct each_arg *e = arg;
	if (!e->done)
		e->done = !e->fn(obj, e->farg);
	return false; /* nothing is collected */
}

static void view_each(void *arg, const char *kind, bool (*fn)(const json_t *obj, void *farg),
		      void *farg)
{
	struct each_arg e = {fn, farg, false};
	struct store_list_req req = {
	    .res = store_key(kind), .filter = each_filter, .filter_arg = &e};
	struct store_list_result res = {0};
	if (store_list(arg, &req, &res) == 0) {
		json_decref(res.items);
		free(res.next);
	}
}

static int answer(struct dns *d, const uint8_t *q, size_t qlen, bool tcp, uint8_t **resp,
		  size_t *rlen)
{
	struct dns_view v = {d->st, view_get, view_each, (uint32_t)store_rev(d->st)};
	return dns_answer(&v, &d->zone, q, qlen, tcp, resp, rlen);
}

/* ---- sending answers ------------------------------------------------------------- */

struct udp_send {
	uv_udp_send_t req;
	uint8_t data[];
};

static void on_udp_sent(uv_udp_send_t *req, int status)
{
	(void)status;
	free(kb_container_of(req, struct udp_send, req));
}

static void send_udp(struct dns *d, const struct sockaddr *peer, const uint8_t *m, size_t len)
{
	uv_buf_t b = uv_buf_init((char *)m, (unsigned)len);
	int rc = uv_udp_try_send(&d->udp, &b, 1, peer);
	if (rc != UV_EAGAIN)
		return; /* sent, or lost as UDP may be */
	struct udp_send *s = malloc(sizeof(*s) + len);
	if (!s)
		return;
	memcpy(s->data, m, len);
	b = uv_buf_init((char *)s->data, (unsigned)len);
	if (uv_udp_send(&s->req, &d->udp, &b, 1, peer, on_udp_sent) < 0)
		free(s);
}

static void tconn_close(struct tconn *c);

struct tcp_write {
	uv_write_t req;
	uint8_t data[];
};

static void on_tcp_written(uv_write_t *req, int status)
{
	(void)status;
	free(kb_container_of(req, struct tcp_write, req));
}

static void send_tcp(struct tconn *c, const uint8_t *m, size_t len)
{
	if (c->closing)
		return;
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->h) > TCP_MAX_QUEUED) {
		kb_warn("dns", "a TCP client does not read its answers; closing it");
		tconn_close(c);
		return;
	}
	struct tcp_write *w = malloc(sizeof(*w) + 2 + len);
	if (!w) {
		tconn_close(c);
		return;
	}
	w->data[0] = (uint8_t)(len >> 8);
	w->data[1] = (uint8_t)len;
	memcpy(w->data + 2, m, len);
	uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)(len + 2));
	if (uv_write(&w->req, (uv_stream_t *)&c->h, &b, 1, on_tcp_written) < 0) {
		free(w);
		tconn_close(c);
	}
}

static void reply(struct dns *d, struct tconn *c, const struct sockaddr *peer, const uint8_t *m,
		  size_t len)
{
	if (c)
		send_tcp(c, m, len);
	else
		send_udp(d, peer, m, len);
}

/* ---- forwarding --------------------------------------------------------------------- */

static void upconn_close(struct upconn *u);

static void fwd_free(struct dns *d, struct fwd *f)
{
	if (f->uc) {
		f->uc->f = NULL;
		upconn_close(f->uc);
	}
	free(f->q);
	memset(f, 0, sizeof(*f));
	d->nfwd--;
	if (!d->nfwd && !d->stopping)
		uv_timer_stop(&d->tick);
}

static void fail_query(struct dns *d, struct tconn *c, const struct sockaddr *peer,
		       const uint8_t *q, size_t qlen, int rcode)
{
	uint8_t *m = NULL;
	size_t mlen = 0;
	if (dns_fail(q, qlen, rcode, &m, &mlen) == 1)
		reply(d, c, peer, m, mlen);
	free(m);
}

static void on_tick(uv_timer_t *t)
{
	struct dns *d = t->data;
	uint64_t now = uv_now(d->loop);
	for (size_t i = 0; i < MAX_FWD && d->nfwd; i++) {
		struct fwd *f = &d->fwd[i];
		if (!f->used || now - f->t0 < FWD_TIMEOUT_MS)
			continue;
		f->q[0] = (uint8_t)(f->orig >> 8);
		f->q[1] = (uint8_t)f->orig;
		if (f->conn || f->peer.ss_family)
			fail_query(d, f->conn, (struct sockaddr *)&f->peer, f->q, f->qlen,
				   2 /* SERVFAIL */);
		fwd_free(d, f);
	}
}

static struct fwd *fwd_slot(struct dns *d, uint16_t *id)
{
	struct fwd *free_slot = NULL;
	for (int tries = 0; tries < 8; tries++) {
		if (getrandom(id, sizeof(*id), 0) != sizeof(*id))
			*id = (uint16_t)(uv_hrtime() ^ (uint64_t)tries);
		bool taken = false;
		for (size_t i = 0; i < MAX_FWD; i++) {
			if (d->fwd[i].used && d->fwd[i].id == *id)
				taken = true;
			else if (!d->fwd[i].used && !free_slot)
				free_slot = &d->fwd[i];
		}
		if (!taken)
			return free_slot;
	}
	return NULL;
}

static void up_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	(void)hint;
	struct dns *d = h->data;
	if (!d->upbuf)
		d->upbuf = malloc(UP_BUF);
	*buf = uv_buf_init((char *)d->upbuf, d->upbuf ? UP_BUF : 0);
}

/* The upstream's answer m (its ID ours) to the client that asked. */
static void deliver(struct dns *d, uint8_t *m, size_t len, bool tcp)
{
	uint16_t id = (uint16_t)(m[0] << 8 | m[1]);
	for (size_t i = 0; i < MAX_FWD; i++) {
		struct fwd *f = &d->fwd[i];
		if (!f->used || f->id != id || (f->uc != NULL) != tcp)
			continue;
		m[0] = (uint8_t)(f->orig >> 8);
		m[1] = (uint8_t)f->orig;
		if (f->conn || f->peer.ss_family)
			reply(d, f->conn, (struct sockaddr *)&f->peer, m, len);
		fwd_free(d, f);
		return;
	}
}

static void on_up(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
		  unsigned flags)
{
	(void)addr;
	if (nread >= 12 && !(flags & UV_UDP_PARTIAL))
		deliver(h->data, (uint8_t *)buf->base, (size_t)nread, false);
}

/* ---- forwarding over TCP --------------------------------------------------------------- */

static void upconn_closed(uv_handle_t *h)
{
	struct upconn *u = h->data;
	free(u->wbuf);
	free(u->buf);
	free(u);
}

static void upconn_close(struct upconn *u)
{
	if (u->closing)
		return;
	u->closing = true;
	if (u->f)
		u->f->uc = NULL;
	u->f = NULL;
	uv_close((uv_handle_t *)&u->h, upconn_closed);
}

static void upconn_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	(void)hint;
	struct upconn *u = h->data;
	if (u->cap - u->len < 4096) {
		size_t ncap = u->cap + 16384 > 2 + 65535 ? 2 + 65535 : u->cap + 16384;
		uint8_t *nb = ncap > u->cap ? realloc(u->buf, ncap) : NULL;
		if (nb) {
			u->buf = nb;
			u->cap = ncap;
		}
	}
	*buf = uv_buf_init((char *)u->buf + u->len, (unsigned)(u->cap - u->len));
}

static void upconn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	(void)buf;
	struct upconn *u = s->data;
	if (nread < 0 || u->closing || !u->f) {
		upconn_close(u); /* the query times out into a SERVFAIL */
		return;
	}
	u->len += (size_t)nread;
	if (u->len < 2)
		return;
	size_t flen = (size_t)(u->buf[0] << 8 | u->buf[1]);
	if (u->len < 2 + flen) {
		if (u->len == u->cap)
			upconn_close(u);
		return;
	}
	struct dns *d = u->d;
	if (flen >= 12)
		deliver(d, u->buf + 2, flen, true); /* closes u through fwd_free */
	upconn_close(u);
}

static void upconn_connected(uv_connect_t *req, int status)
{
	struct upconn *u = req->data;
	uv_buf_t b = uv_buf_init((char *)u->wbuf, (unsigned)u->wlen);
	if (status < 0 || u->closing || !u->f ||
	    uv_read_start((uv_stream_t *)&u->h, upconn_alloc, upconn_read) < 0 ||
	    uv_write(&u->wr, (uv_stream_t *)&u->h, &b, 1, NULL) < 0)
		upconn_close(u); /* idempotent; the query times out into a SERVFAIL */
}

/* Sends f's query (its ID ours) upstream over TCP. 0 or a negative errno. */
static int forward_tcp(struct dns *d, struct fwd *f)
{
	struct upconn *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->cap = 4096;
	u->buf = malloc(u->cap);
	u->wlen = f->qlen + 2;
	u->wbuf = malloc(u->wlen);
	if (!u->buf || !u->wbuf) {
		free(u->buf);
		free(u->wbuf);
		free(u);
		return -ENOMEM;
	}
	u->wbuf[0] = (uint8_t)(f->qlen >> 8);
	u->wbuf[1] = (uint8_t)f->qlen;
	memcpy(u->wbuf + 2, f->q, f->qlen);
	u->d = d;
	u->f = f;
	f->uc = u;
	uv_tcp_init(d->loop, &u->h);
	u->h.data = u->conn.data = u;
	int rc = uv_tcp_connect(&u->conn, &u->h, (struct sockaddr *)&d->up_addr, upconn_connected);
	if (rc < 0)
		upconn_close(u);
	return rc;
}

static void forward(struct dns *d, struct tconn *c, const struct sockaddr *peer, const uint8_t *q,
		    size_t qlen)
{
	uint16_t id = 0;
	struct fwd *f = d->have_up && d->nfwd < MAX_FWD ? fwd_slot(d, &id) : NULL;
	uint8_t *copy = f ? malloc(qlen) : NULL;
	if (!copy) {
		fail_query(d, c, peer, q, qlen, d->have_up ? 2 /* SERVFAIL */ : 5 /* REFUSED */);
		return;
	}
	memcpy(copy, q, qlen);
	*f = (struct fwd){.used = true,
			  .id = id,
			  .orig = (uint16_t)(q[0] << 8 | q[1]),
			  .t0 = uv_now(d->loop),
			  .conn = c,
			  .q = copy,
			  .qlen = qlen};
	if (!c)
		memcpy(&f->peer, peer,
		       peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						   : sizeof(struct sockaddr_in));
	d->nfwd++;
	if (d->nfwd == 1)
		uv_timer_start(&d->tick, on_tick, FWD_TIMEOUT_MS / 4, FWD_TIMEOUT_MS / 4);
	copy[0] = (uint8_t)(id >> 8);
	copy[1] = (uint8_t)id;
	if (c) {
		if (forward_tcp(d, f) < 0)
			kb_debug("dns", "upstream connect failed; the query will time out");
		return;
	}
	uv_buf_t b = uv_buf_init((char *)copy, (unsigned)qlen);
	if (uv_udp_try_send(&d->up, &b, 1, NULL) < 0)
		kb_debug("dns", "upstream send failed; the query will time out");
}

/* ---- one query, from either transport ----------------------------------------------- */

static void handle_query(struct dns *d, struct tconn *c, const struct sockaddr *peer,
			 const uint8_t *q, size_t qlen)
{
	uint8_t *m = NULL;
	size_t mlen = 0;
	if (c ? c->refused : !dns_clients_allowed(d->clients, peer)) {
		fail_query(d, c, peer, q, qlen, 5 /* REFUSED */);
		return;
	}
	int rc = answer(d, q, qlen, c != NULL, &m, &mlen);
	if (rc == 1)
		reply(d, c, peer, m, mlen);
	else if (rc == 0)
		forward(d, c, peer, q, qlen);
	free(m);
}

static void udp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	(void)hint;
	struct dns *d = h->data;
	*buf = uv_buf_init((char *)d->qbuf, sizeof(d->qbuf));
}

static void on_udp(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
		   unsigned flags)
{
	if (nread <= 0 || !addr || (flags & UV_UDP_PARTIAL))
		return;
	handle_query(h->data, NULL, addr, (const uint8_t *)buf->base, (size_t)nread);
}

/* ---- TCP clients ------------------------------------------------------------------- */

static void tconn_closed(uv_handle_t *h)
{
	struct tconn *c = h->data;
	if (--c->open)
		return;
	struct dns *d = c->d;
	if (!d) { /* the server stopped and let it go */
		free(c->buf);
		free(c);
		return;
	}
	for (size_t i = 0; i < MAX_FWD; i++)
		if (d->fwd[i].used && d->fwd[i].conn == c)
			d->fwd[i].conn = NULL; /* its answer has nowhere to go */
	KB_LIST_UNLINK(d->conns, c);
	d->nconns--;
	free(c->buf);
	free(c);
}

static void tconn_close(struct tconn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->h, tconn_closed);
	uv_close((uv_handle_t *)&c->idle, tconn_closed);
}

static void on_idle(uv_timer_t *t)
{
	tconn_close(t->data);
}

static void tcp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	(void)hint;
	struct tconn *c = h->data;
	size_t need = c->len + 2;
	if (c->len >= 2)
		need = c->len + 2 + (size_t)(c->buf[0] << 8 | c->buf[1]);
	if (need < c->len + 512)
		need = c->len + 512;
	if (need > c->cap) {
		uint8_t *nb = realloc(c->buf, need);
		if (!nb) {
			*buf = uv_buf_init(NULL, 0);
			return;
		}
		c->buf = nb;
		c->cap = need;
	}
	*buf = uv_buf_init((char *)c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	(void)buf;
	struct tconn *c = s->data;
	if (nread < 0) {
		tconn_close(c);
		return;
	}
	c->len += (size_t)nread;
	size_t off = 0;
	while (!c->closing && c->len - off >= 2) {
		size_t flen = (size_t)(c->buf[off] << 8 | c->buf[off + 1]);
		if (c->len - off < 2 + flen)
			break;
		if (flen < 12) { /* not a DNS message: a broken client */
			tconn_close(c);
			return;
		}
		handle_query(c->d, c, NULL, c->buf + off + 2, flen);
		off += 2 + flen;
	}
	if (c->closing)
		return;
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	uv_timer_start(&c->idle, on_idle, TCP_IDLE_MS, 0);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct dns *d = server->data;
	if (status < 0)
		return;
	struct tconn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->d = d;
	uv_tcp_init(d->loop, &c->h);
	uv_timer_init(d->loop, &c->idle);
	c->h.data = c->idle.data = c;
	c->open = 2;
	KB_LIST_PUSH(d->conns, c);
	d->nconns++;
	if (uv_accept(server, (uv_stream_t *)&c->h) < 0 || d->nconns > MAX_TCP ||
	    uv_read_start((uv_stream_t *)&c->h, tcp_alloc, on_tcp_read) < 0) {
		tconn_close(c);
		return;
	}
	struct sockaddr_storage peer;
	int plen = sizeof(peer);
	c->refused = uv_tcp_getpeername(&c->h, (struct sockaddr *)&peer, &plen) < 0 ||
		     !dns_clients_allowed(d->clients, (struct sockaddr *)&peer);
	uv_timer_start(&c->idle, on_idle, TCP_IDLE_MS, 0);
}

/* ---- start and stop ------------------------------------------------------------------ */

/* The first nameserver of /etc/resolv.conf. */
static int resolv_conf_upstream(struct sockaddr_storage *ss)
{
	FILE *f = fopen("/etc/resolv.conf", "r");
	if (!f)
		return -ENOENT;
	char line[256], addr[128];
	int rc = -ENOENT;
	while (rc < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, " nameserver %127s", addr) == 1)
			rc = kb_parse_hostport(addr, 53, ss);
	fclose(f);
	return rc;
}

static int open_upstream(struct dns *d, const char *spec)
{
	struct sockaddr_storage ss;
	if (spec && strcmp(spec, "none") == 0)
		return 0;
	int rc = spec ? kb_parse_hostport(spec, 53, &ss) : resolv_conf_upstream(&ss);
	if (rc < 0) {
		if (spec)
			return -EINVAL;
		kb_warn("dns", "no nameserver in /etc/resolv.conf: names outside %s are refused",
			d->domain);
		return 0;
	}
	d->up_addr = ss;
	uv_udp_init(d->loop, &d->up);
	d->up.data = d;
	d->open++;
	d->have_up = true;
	if ((rc = uv_udp_connect(&d->up, (struct sockaddr *)&ss)) < 0 ||
	    (rc = uv_udp_recv_start(&d->up, up_alloc, on_up)) < 0)
		return rc;
	return 0;
}

/*
 * Port 0: a port free for both UDP and TCP, as two bound sockets (listening,
 * for TCP). The port UDP is given may be taken for TCP (by another server, or
 * as the local port of a connection), so a taken one is given back and
 * another tried.
 */
static int bind_free_pair(const struct sockaddr_storage *ss, int *ufd, int *tfd)
{
	socklen_t len =
	    ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int err = EADDRINUSE;
	for (int i = 0; i < 64 && err == EADDRINUSE; i++) {
		struct sockaddr_storage a = *ss;
		socklen_t alen = sizeof(a);
		int on = 1;
		int u = socket(ss->ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int t = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (u >= 0 && t >= 0 && bind(u, (struct sockaddr *)ss, len) == 0 &&
		    getsockname(u, (struct sockaddr *)&a, &alen) == 0 &&
		    setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == 0 &&
		    bind(t, (struct sockaddr *)&a, len) == 0 && listen(t, 128) == 0) {
			*ufd = u;
			*tfd = t;
			return 0;
		}
		err = errno;
		if (u >= 0)
			close(u);
		if (t >= 0)
			close(t);
	}
	return -err;
}

static int open_listeners(struct dns *d, const char *listen, int *port_out)
{
	struct sockaddr_storage ss;
	int rc = kb_parse_hostport(listen, -1, &ss);
	if (rc < 0)
		return rc;
	bool any = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						  : ((struct sockaddr_in *)&ss)->sin_port) == 0;
	int ufd = -1, tfd = -1;
	if (any && (rc = bind_free_pair(&ss, &ufd, &tfd)) < 0)
		return rc;
	uv_udp_init(d->loop, &d->udp);
	d->udp.data = d;
	d->open++;
	uv_tcp_init(d->loop, &d->tcp);
	d->tcp.data = d;
	d->open++;
	if (any) {
		if ((rc = uv_udp_open(&d->udp, ufd)) < 0) {
			close(ufd);
			close(tfd);
			return rc;
		}
		if ((rc = uv_tcp_open(&d->tcp, tfd)) < 0) {
			close(tfd);
			return rc;
		}
	} else if ((rc = uv_udp_bind(&d->udp, (struct sockaddr *)&ss, 0)) < 0 ||
		   (rc = uv_tcp_bind(&d->tcp, (struct sockaddr *)&ss, 0)) < 0) {
		return rc;
	}
	struct sockaddr_storage bound;
	int blen = sizeof(bound);
	if ((rc = uv_udp_getsockname(&d->udp, (struct sockaddr *)&bound, &blen)) < 0 ||
	    (rc = uv_listen((uv_stream_t *)&d->tcp, 128, on_connection)) < 0 ||
	    (rc = uv_udp_recv_start(&d->udp, udp_alloc, on_udp)) < 0)
		return rc;
	int port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						     : ((struct sockaddr_in *)&bound)->sin_port);
	if (port_out)
		*port_out = port;
	kb_info("dns", "serving %s on udp and tcp port %d", d->domain, port);
	return 0;
}

int dns_start(uv_loop_t *loop, store_t *st, const struct dns_opts *o, dns_t **out, int *port_out)
{
	struct dns *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->loop = loop;
	d->st = st;
	snprintf(d->domain, sizeof(d->domain), "%s", o->domain ? o->domain : "cluster.local");
	for (char *p = d->domain; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	size_t n = strlen(d->domain);
	if (n && d->domain[n - 1] == '.')
		d->domain[n - 1] = 0;
	d->zone.domain = d->domain;
	if (o->host_ns)
		snprintf(d->host_ns, sizeof(d->host_ns), "%s", o->host_ns);
	d->zone.host_ns = d->host_ns[0] ? d->host_ns : NULL;
	uv_timer_init(loop, &d->tick);
	d->tick.data = d;
	d->open = 1;
	int rc = o->any_client ? 0 : dns_clients_start(st, &d->clients);
	if (rc == 0)
		rc = open_listeners(d, o->listen, port_out);
	if (rc == 0)
		rc = open_upstream(d, o->upstream);
	if (rc < 0) {
		dns_stop(d);
		return rc;
	}
	*out = d;
	return 0;
}

static void server_closed(uv_handle_t *h)
{
	struct dns *d = h->data;
	if (--d->open)
		return;
	free(d->upbuf);
	free(d);
}

void dns_stop(dns_t *d)
{
	if (!d || d->stopping)
		return;
	d->stopping = true;
	dns_clients_stop(d->clients);
	d->clients = NULL;
	for (size_t i = 0; i < MAX_FWD; i++) {
		if (!d->fwd[i].used)
			continue;
		if (d->fwd[i].uc)
			upconn_close(d->fwd[i].uc);
		free(d->fwd[i].q);
	}
	while (d->conns) {
		struct tconn *c = d->conns;
		tconn_close(c);
		/* unlinked now, freed by its close callbacks */
		d->conns = c->next;
		c->prev = c->next = NULL;
		c->d = NULL;
	}
	uv_close((uv_handle_t *)&d->tick, server_closed);
	if (d->udp.type == UV_UDP)
		uv_close((uv_handle_t *)&d->udp, server_closed);
	if (d->tcp.type == UV_TCP)
		uv_close((uv_handle_t *)&d->tcp, server_closed);
	if (d->have_up)
		uv_close((uv_handle_t *)&d->up, server_closed);
}
