/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pods/exec on the host stand-in (kubicle-standin, standin.h): what a
 * kubelet does for `kubectl exec`, with the command run as a local process
 * of this server, since the stand-in has no containers. Tests and the local
 * demo use it to drive exec end to end through a tenant (tenant -> syncer
 * -> this server); a real host's kubelet runs the command in the container.
 *
 * The stream protocol is v5.channel.k8s.io (or v4) over WebSocket, as
 * kubectl 1.30 and later speak it: binary messages whose first byte is the
 * channel: 0 stdin (from the client), 1 stdout, 2 stderr, 3 the final
 * Status, 4 terminal resizes, 255 the v5 signal that the client closed a
 * stream ([255, 0]: stdin is done). With tty the process gets a
 * pseudo-terminal (stdin, stdout and stderr, made its controlling terminal by
 * setsid --ctty when util-linux is there, so ^C is a SIGINT): what it writes
 * comes back on channel 1, resizes reach it, and the client's close of stdin
 * is an end-of-file character. Pings are answered. The session ends with the Status on channel 3 (Success, or
 * NonZeroExitCode with the exit code as kube's kubelet writes it), a close
 * frame and the end of the connection.
 *
 * kubectl up to 1.29 speaks v4.channel.k8s.io over SPDY/3.1 instead
 * (lib/spdy.h; negotiated by X-Stream-Protocol-Version): the client opens
 * one stream per channel, named by its `streamtype` header (error, stdin,
 * stdout, stderr, resize), each answered as the kubelet answers it; output
 * flows once every stream the request asked for is open (30 s at most), the
 * end of stdin is the FIN of its stream, resizes are a stream of JSON
 * objects, and the same Status ends the session on the error stream before
 * every stream is closed.
 *
 * Bounds: what the client sends for stdin is queued up to 4 MiB (the
 * client's reading pauses above it); output is read while less than 1 MiB
 * waits for the client.
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <uv.h>

#include "lib/http.h"
#include "lib/log.h"
#include "lib/spdy.h"
#include "lib/util.h"
#include "lib/ws.h"
#include "tests/host/standin.h"

#define MAX_ARGS    256
#define MAX_MESSAGE (1024 * 1024)
#define OUT_HIGH    (1024 * 1024)
#define IN_HIGH     (4 * 1024 * 1024)
#define RECHECK_MS  20
/* Output and the final Status wait this long after the 101: client-go
 * drops what arrives before it has set up its streams (its read loop
 * starts first), and a kubelet's exec through the runtime takes longer. */
#define READY_MS 100
#define PROTO_V5 "v5.channel.k8s.io"
#define PROTO_V4 "v4.channel.k8s.io"
/* SPDY: every stream the request asks for must be open within this time */
#define STREAMS_MS (30 * 1000)
#define SETSID     "/usr/bin/setsid"

enum { CH_STDIN = 0, CH_STDOUT = 1, CH_STDERR = 2, CH_ERROR = 3, CH_RESIZE = 4, CH_CLOSE = 255 };

struct sx {
	kb_http_req_t *http; /* NULL once ended or gone */
	struct kb_ws_parser ws;
	kb_spdy_t *spdy;  /* SPDY instead of WebSocket */
	uint32_t sid[5];  /* SPDY: the stream of each channel (CH_STDIN..CH_RESIZE) */
	bool want[5];     /* SPDY: the channels the request asks for */
	struct kb_buf rz; /* SPDY: resize bytes not yet a whole JSON object */
	uv_process_t proc;
	uv_pipe_t in, out, err;
	uv_timer_t timer;
	uv_timer_t ready; /* READY_MS after the 101: output may flow */
	bool is_ready;
	bool has_in, has_out, has_err;
	bool tty;       /* out is the terminal's master side, for input too */
	bool proc_init; /* uv_spawn was called: the handle is to be closed */
	bool spawned, exited;
	int64_t exit_status;
	int term_signal;
	int reading;      /* output pipes not at EOF yet */
	int handles;      /* libuv handles not closed yet */
	size_t in_queued; /* stdin bytes written, not yet taken */
	bool in_closing;  /* stdin shut (client's close signal) */
	bool out_paused, client_paused;
	char cmdline[512]; /* the command, for the exit message */
	char *spawn_error; /* the spawn failed: its message */
};

struct in_write {
	uv_write_t w;
	struct sx *sx;
	size_t len;
	char data[];
};

static void sx_handle_closed(uv_handle_t *h)
{
	struct sx *sx = h->data;
	if (--sx->handles > 0)
		return;
	kb_ws_parser_free(&sx->ws);
	kb_spdy_free(sx->spdy);
	kb_buf_free(&sx->rz);
	free(sx->spawn_error);
	free(sx);
}

static void sx_close_handle(struct sx *sx, uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, sx_handle_closed);
}

/* Frees the session once every handle has closed. */
static void sx_release(struct sx *sx)
{
	if (sx->spawned && !sx->exited) {
		kill(-sx->proc.pid, SIGKILL); /* its process group: what it started too */
		uv_process_kill(&sx->proc, SIGKILL);
	}
	if (sx->proc_init) /* initialised even when the spawn failed */
		sx_close_handle(sx, (uv_handle_t *)&sx->proc);
	if (sx->has_in)
		sx_close_handle(sx, (uv_handle_t *)&sx->in);
	if (sx->has_out)
		sx_close_handle(sx, (uv_handle_t *)&sx->out);
	if (sx->has_err)
		sx_close_handle(sx, (uv_handle_t *)&sx->err);
	sx_close_handle(sx, (uv_handle_t *)&sx->timer);
	sx_close_handle(sx, (uv_handle_t *)&sx->ready);
}

int standin_ws_send(kb_http_req_t *http, enum kb_ws_op op, const void *data, size_t len)
{
	if (!http)
		return -ECONNRESET;
	struct kb_buf b = {0};
	int rc = kb_ws_frame(&b, op, data, len, false);
	if (rc == 0)
		rc = kb_http_raw_write(http, b.data, b.len);
	kb_buf_free(&b);
	return rc;
}

void standin_ws_end(kb_http_req_t *http, uint16_t code)
{
	struct kb_buf b = {0};
	if (kb_ws_close_frame(&b, code, NULL, false) == 0)
		kb_http_raw_write(http, b.data, b.len);
	kb_buf_free(&b);
	kb_http_req_on_abort(http, NULL, NULL);
	kb_http_raw_end(http);
}

int standin_ws_accept(kb_http_req_t *req, char accept[KB_WS_ACCEPT_LEN + 1])
{
	const char *version = kb_http_req_header(req, "sec-websocket-version");
	const char *key = kb_http_req_header(req, "sec-websocket-key");
	if (!version || strcmp(version, "13") != 0 || !key || kb_ws_accept(key, accept) < 0) {
		standin_reply_status(req, 400, "BadRequest",
				     "a WebSocket version 13 handshake is required");
		return -1;
	}
	return 0;
}

int standin_spdy_head(kb_http_req_t *req, const char *proto, bool named, char *head, size_t len)
{
	const char *want = kb_http_req_header(req, "x-stream-protocol-version");
	if ((named || (want && *want)) &&
	    !kb_http_req_offers(req, "x-stream-protocol-version", proto)) {
		standin_reply_status(
		    req, 403, "Forbidden",
		    "unable to upgrade: unable to negotiate protocol: client supports %s, "
		    "server supports %s",
		    want && *want ? want : "none", proto);
		return -1;
	}
	snprintf(head, len,
		 "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: %s\r\n",
		 proto);
	return 0;
}

static int sx_send(struct sx *sx, enum kb_ws_op op, const void *data, size_t len)
{
	return standin_ws_send(sx->http, op, data, len);
}

/* Sends data on a channel: one binary message, the channel byte first
 * (SPDY: data on the channel's stream). */
static int sx_channel(struct sx *sx, uint8_t ch, const char *data, size_t len)
{
	if (!sx->http)
		return -ECONNRESET;
	if (sx->spdy)
		return sx->sid[ch] ? kb_spdy_data(sx->spdy, sx->sid[ch], data, len, false) : 0;
	struct kb_buf b = {0};
	int rc = kb_buf_reserve(&b, len + 1);
	if (rc == 0) {
		b.data[0] = (char)ch;
		memcpy(b.data + 1, data, len);
		rc = sx_send(sx, KB_WS_BINARY, b.data, len + 1);
	}
	kb_buf_free(&b);
	return rc;
}

/* Ends the WebSocket (close frame with `code`; SPDY: our side of every
 * stream closed) and the connection. */
static void sx_end(struct sx *sx, uint16_t code)
{
	if (!sx->http)
		return;
	if (sx->spdy) {
		for (int ch = CH_STDOUT; ch <= CH_ERROR; ch++)
			if (sx->sid[ch])
				kb_spdy_data(sx->spdy, sx->sid[ch], NULL, 0, true);
		kb_http_req_on_abort(sx->http, NULL, NULL);
		kb_http_raw_end(sx->http);
	} else {
		standin_ws_end(sx->http, code);
	}
	sx->http = NULL;
	sx_release(sx);
}

/* The final Status on channel 3, once the process has exited and its output
 * has been read to the end. */
static void sx_maybe_finish(struct sx *sx)
{
	if (!sx->http || !sx->is_ready || (!sx->exited && !sx->spawn_error) || sx->reading > 0)
		return;
	struct kb_buf b = {0};
	if (sx->spawn_error) {
		json_t *st =
		    json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s}]},s:i}", "metadata", "status",
			      "Failure", "message", sx->spawn_error, "reason", "InternalError",
			      "details", "causes", "message", sx->spawn_error, "code", 500);
		char *text = json_dumps(st, JSON_COMPACT);
		kb_buf_puts(&b, text ? text : "{}");
		free(text);
		json_decref(st);
	} else {
		int64_t code = sx->term_signal ? 128 + sx->term_signal : sx->exit_status;
		if (code == 0) {
			kb_buf_puts(&b, "{\"metadata\":{},\"status\":\"Success\"}");
		} else {
			char msg[700], num[24];
			snprintf(msg, sizeof(msg),
				 "command terminated with non-zero exit code: error executing "
				 "command [%s], exit code %lld",
				 sx->cmdline, (long long)code);
			snprintf(num, sizeof(num), "%lld", (long long)code);
			json_t *st =
			    json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s,s:s}]}}", "metadata", "status",
				      "Failure", "message", msg, "reason", "NonZeroExitCode",
				      "details", "causes", "reason", "ExitCode", "message", num);
			char *text = json_dumps(st, JSON_COMPACT);
			kb_buf_puts(&b, text ? text : "{}");
			free(text);
			json_decref(st);
		}
	}
	sx_channel(sx, CH_ERROR, b.data ? b.data : "", b.len);
	kb_buf_free(&b);
	sx_end(sx, KB_WS_CLOSE_NORMAL);
}

/* ---- output: the process's stdout and stderr ---- */

static void out_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	static char chunk[32 * 1024]; /* loop thread only; consumed in out_read */
	*buf = uv_buf_init(chunk, sizeof(chunk));
}

static void recheck(uv_timer_t *t);

static void out_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct sx *sx = s->data;
	if (n == 0)
		return;
	if (n < 0) {
		uv_read_stop(s);
		sx->reading--;
		sx_maybe_finish(sx);
		return;
	}
	uint8_t ch = s == (uv_stream_t *)&sx->err ? CH_STDERR : CH_STDOUT;
	if (sx_channel(sx, ch, buf->base, (size_t)n) < 0)
		return;
	if (sx->http && kb_http_stream_pending(sx->http) > OUT_HIGH && !sx->out_paused) {
		sx->out_paused = true;
		if (sx->has_out)
			uv_read_stop((uv_stream_t *)&sx->out);
		if (sx->has_err)
			uv_read_stop((uv_stream_t *)&sx->err);
		uv_timer_start(&sx->timer, recheck, RECHECK_MS, RECHECK_MS);
	}
}

static void start_output(struct sx *sx)
{
	if (sx->has_out)
		uv_read_start((uv_stream_t *)&sx->out, out_alloc, out_read);
	if (sx->has_err)
		uv_read_start((uv_stream_t *)&sx->err, out_alloc, out_read);
}

static void recheck(uv_timer_t *t)
{
	struct sx *sx = t->data;
	if (!sx->http)
		return;
	if (sx->out_paused && kb_http_stream_pending(sx->http) < OUT_HIGH / 2) {
		sx->out_paused = false;
		start_output(sx);
	}
	if (sx->client_paused && sx->in_queued < IN_HIGH / 2) {
		sx->client_paused = false;
		kb_http_raw_pause(sx->http, false);
	}
	if (!sx->out_paused && !sx->client_paused)
		uv_timer_stop(t);
}

/* ---- input: the client's messages ---- */

static void in_written(uv_write_t *w, int status)
{
	struct in_write *iw = kb_container_of(w, struct in_write, w);
	iw->sx->in_queued -= iw->len;
	(void)status; /* a process that stopped reading: its exit ends the session */
	free(iw);
}

static void in_shut(uv_shutdown_t *req, int status)
{
	(void)status;
	free(req);
}

static void stdin_data(struct sx *sx, const uint8_t *data, size_t len)
{
	uv_pipe_t *to = sx->tty ? &sx->out : &sx->in;
	if (!(sx->tty ? sx->has_out : sx->has_in) || sx->in_closing || len == 0 ||
	    uv_is_closing((uv_handle_t *)to))
		return;
	struct in_write *iw = malloc(sizeof(*iw) + len);
	if (!iw)
		return;
	iw->sx = sx;
	iw->len = len;
	memcpy(iw->data, data, len);
	uv_buf_t b = uv_buf_init(iw->data, (unsigned)len);
	if (uv_write(&iw->w, (uv_stream_t *)to, &b, 1, in_written) < 0) {
		free(iw);
		return;
	}
	sx->in_queued += len;
	if (sx->in_queued > IN_HIGH && sx->http && !sx->client_paused) {
		sx->client_paused = true;
		kb_http_raw_pause(sx->http, true);
		uv_timer_start(&sx->timer, recheck, RECHECK_MS, RECHECK_MS);
	}
}

static void stdin_close(struct sx *sx)
{
	if (sx->tty) { /* a terminal's end of input */
		stdin_data(sx, (const uint8_t *)"\x04", 1);
		return;
	}
	if (!sx->has_in || sx->in_closing)
		return;
	sx->in_closing = true;
	uv_shutdown_t *req = malloc(sizeof(*req));
	if (req && uv_shutdown(req, (uv_stream_t *)&sx->in, in_shut) < 0)
		free(req);
}

/* {"Width":80,"Height":24} on the resize channel: the terminal's size. */
static void resize(struct sx *sx, const uint8_t *data, size_t len)
{
	uv_os_fd_t fd;
	if (!sx->tty || uv_fileno((uv_handle_t *)&sx->out, &fd) != 0)
		return;
	json_t *j = json_loadb((const char *)data, len, 0, NULL);
	json_int_t w = json_integer_value(json_object_get(j, "Width"));
	json_int_t h = json_integer_value(json_object_get(j, "Height"));
	json_decref(j);
	if (w > 0 && h > 0 && w <= 10000 && h <= 10000) {
		struct winsize ws = {.ws_col = (unsigned short)w, .ws_row = (unsigned short)h};
		ioctl(fd, TIOCSWINSZ, &ws);
	}
}

static int on_message(void *arg, enum kb_ws_op op, const uint8_t *data, size_t len)
{
	struct sx *sx = arg;
	switch (op) {
	case KB_WS_PING: sx_send(sx, KB_WS_PONG, data, len); break;
	case KB_WS_CLOSE:
		/* the client is done: so is the command */
		sx_end(sx, KB_WS_CLOSE_NORMAL);
		return -ECONNRESET;
	case KB_WS_TEXT: /* as the kubelet reads them: the Python client writes stdin so */
	case KB_WS_BINARY:
		if (len == 0)
			break;
		if (data[0] == CH_STDIN)
			stdin_data(sx, data + 1, len - 1);
		else if (data[0] == CH_CLOSE && len >= 2 && data[1] == CH_STDIN)
			stdin_close(sx);
		else if (data[0] == CH_RESIZE)
			resize(sx, data + 1, len - 1);
		break;
	default: break;
	}
	return 0;
}

/* ---- SPDY: one stream per channel ---- */

static void start_output(struct sx *sx);

/* Output may flow once every stream the request asked for is open. */
static void spdy_maybe_ready(struct sx *sx)
{
	for (int ch = CH_STDIN; ch <= CH_RESIZE; ch++)
		if (sx->want[ch] && !sx->sid[ch])
			return;
	uv_timer_stop(&sx->ready);
	sx->is_ready = true;
	if (sx->spawned)
		start_output(sx);
	sx_maybe_finish(sx);
}

static int spdy_syn(void *arg, uint32_t id, const struct kb_spdy_header *h, size_t n, bool fin)
{
	(void)fin;
	struct sx *sx = arg;
	static const char *const types[] = {"stdin", "stdout", "stderr", "error", "resize"};
	const char *type = kb_spdy_header_get(h, n, "streamtype");
	int ch = -1;
	for (int i = 0; type && i < (int)KB_ARRAY_SIZE(types); i++)
		if (strcmp(type, types[i]) == 0)
			ch = i;
	if (ch < 0 || sx->sid[ch] || sx->is_ready) {
		kb_info("standin", "exec: stream %u refused (streamtype %s)", id,
			type ? type : "-");
		return kb_spdy_rst(sx->spdy, id, KB_SPDY_REFUSED_STREAM);
	}
	sx->sid[ch] = id;
	int rc = kb_spdy_reply(sx->spdy, id, NULL, 0, false);
	if (rc == 0)
		spdy_maybe_ready(sx);
	return rc;
}

/* Whole JSON objects from the resize stream, each a terminal size. */
static void spdy_resize(struct sx *sx, const uint8_t *d, size_t len)
{
	if (kb_buf_append(&sx->rz, (const char *)d, len) < 0 || sx->rz.len > 64 * 1024) {
		sx->rz.len = 0;
		return;
	}
	for (;;) {
		size_t skip = 0;
		while (skip < sx->rz.len && strchr(" \t\r\n", sx->rz.data[skip]) &&
		       sx->rz.data[skip])
			skip++;
		memmove(sx->rz.data, sx->rz.data + skip, sx->rz.len - skip);
		sx->rz.len -= skip;
		if (sx->rz.len == 0)
			return;
		json_error_t e;
		json_t *j = json_loadb(sx->rz.data, sx->rz.len, JSON_DISABLE_EOF_CHECK, &e);
		if (!j) {
			if (json_error_code(&e) != json_error_premature_end_of_input)
				sx->rz.len = 0; /* not JSON: dropped */
			return;
		}
		json_decref(j);
		size_t used = (size_t)e.position;
		resize(sx, (const uint8_t *)sx->rz.data, used);
		memmove(sx->rz.data, sx->rz.data + used, sx->rz.len - used);
		sx->rz.len -= used;
	}
}

static int spdy_data(void *arg, uint32_t id, const uint8_t *d, size_t len, bool fin)
{
	struct sx *sx = arg;
	if (id == sx->sid[CH_STDIN]) {
		stdin_data(sx, d, len);
		if (fin)
			stdin_close(sx);
	} else if (id == sx->sid[CH_RESIZE] && len) {
		spdy_resize(sx, d, len);
	}
	return 0;
}

static int spdy_rst(void *arg, uint32_t id, uint32_t status)
{
	(void)status;
	struct sx *sx = arg;
	if (id == sx->sid[CH_STDIN])
		stdin_close(sx);
	return 0;
}

static int spdy_goaway(void *arg)
{
	(void)arg;
	return -ECONNRESET;
}

static int spdy_write(void *arg, const uint8_t *d, size_t len)
{
	struct sx *sx = arg;
	return sx->http ? kb_http_raw_write(sx->http, (const char *)d, len) : -ECONNRESET;
}

static const struct kb_spdy_cbs spdy_cbs = {spdy_syn, spdy_data, spdy_rst, spdy_goaway, spdy_write};

static void from_client(kb_http_req_t *req, const char *data, size_t len, void *arg)
{
	(void)req;
	struct sx *sx = arg;
	if (sx->spdy) {
		if (kb_spdy_feed(sx->spdy, (const uint8_t *)data, len) != 0)
			sx_end(sx, 0);
		return;
	}
	int rc = kb_ws_feed(&sx->ws, (const uint8_t *)data, len, on_message, sx);
	if (rc != 0) /* a broken protocol, or out of memory (ended already after a close) */
		sx_end(sx, rc > 0 ? (uint16_t)rc : KB_WS_CLOSE_INTERNAL);
}

static void on_ready(uv_timer_t *t)
{
	struct sx *sx = t->data;
	if (sx->spdy) { /* the streams did not all come */
		kb_info("standin", "exec: timed out waiting for the client to create streams");
		sx_end(sx, 0);
		return;
	}
	sx->is_ready = true;
	if (sx->spawned)
		start_output(sx);
	sx_maybe_finish(sx); /* a spawn that failed: its Status now */
}

static void client_gone(kb_http_req_t *req, void *arg)
{
	(void)req;
	struct sx *sx = arg;
	sx->http = NULL;
	sx_release(sx);
}

/* ---- the process ---- */

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct sx *sx = p->data;
	sx->exited = true;
	sx->exit_status = status;
	sx->term_signal = sig;
	sx_maybe_finish(sx);
}

struct exec_query {
	char *buf; /* the query copy the strings point into */
	char *argv[MAX_ARGS + 1];
	int argc;
	bool in, out, err, tty;
};

static int parse_exec_query(const char *query, struct exec_query *q)
{
	memset(q, 0, sizeof(*q));
	q->buf = strdup(query ? query : "");
	if (!q->buf)
		return -ENOMEM;
	char *cur = q->buf, *k, *v;
	while (kb_http_query_next(&cur, &k, &v)) {
		if (strcmp(k, "command") == 0) {
			if (q->argc == MAX_ARGS)
				return -E2BIG;
			q->argv[q->argc++] = v;
		} else if (strcmp(k, "stdin") == 0) {
			q->in = kb_http_query_bool(v);
		} else if (strcmp(k, "stdout") == 0) {
			q->out = kb_http_query_bool(v);
		} else if (strcmp(k, "stderr") == 0) {
			q->err = kb_http_query_bool(v);
		} else if (strcmp(k, "tty") == 0) {
			q->tty = kb_http_query_bool(v);
		}
	}
	q->argv[q->argc] = NULL;
	return 0;
}

/* "metadata.labels['key']": the map's path and the key; false for a path
 * without a subscript. */
static bool split_subscript(const char *fp, char *map, size_t mlen, char *key, size_t klen)
{
	size_t n = strlen(fp);
	const char *open = strstr(fp, "['");
	if (n < 2 || strcmp(fp + n - 2, "']") != 0 || !open || open == fp || open + 2 > fp + n - 2)
		return false;
	snprintf(map, mlen, "%.*s", (int)(open - fp), fp);
	snprintf(key, klen, "%.*s", (int)(fp + n - 2 - (open + 2)), open + 2);
	return true;
}

/* What a fieldRef of `pod` reads, as the kubelet resolves it (IP lists
 * joined by commas); NULL for a path it does not resolve. */
static char *field_value(const json_t *pod, const char *path)
{
	static const char *const plain[] = {
	    "metadata.name",           "metadata.namespace", "metadata.uid", "spec.nodeName",
	    "spec.serviceAccountName", "status.hostIP",      "status.podIP"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(plain); i++)
		if (strcmp(path, plain[i]) == 0)
			return strdup(standin_str(pod, path) ? standin_str(pod, path) : "");
	char map[64], key[512];
	if (split_subscript(path, map, sizeof(map), key, sizeof(key))) {
		if (strcmp(map, "metadata.labels") != 0 && strcmp(map, "metadata.annotations") != 0)
			return NULL;
		const char *v = json_string_value(json_object_get(kb_json_path(pod, map), key));
		return strdup(v ? v : "");
	}
	if (strcmp(path, "status.hostIPs") == 0 || strcmp(path, "status.podIPs") == 0) {
		struct kb_buf b = {0};
		size_t i;
		json_t *ip;
		kb_buf_puts(&b, "");
		json_array_foreach (kb_json_path(pod, path), i, ip)
			kb_buf_printf(&b, "%s%s", i ? "," : "",
				      standin_str(ip, "ip") ? standin_str(ip, "ip") : "");
		return b.data;
	}
	return NULL;
}

/* The environment, as a kubelet would make it for what the stand-in can
 * know: a usual PATH, HOSTNAME (the pod's hostname, else its name cut to
 * 63 characters), the container's literal env values and those its
 * fieldRefs read (ConfigMap, Secret and resource references are left
 * out). */
static char **make_env(const json_t *pod, const char *container)
{
	const json_t *cs = kb_json_path(pod, "spec.containers"), *env = NULL;
	size_t i;
	json_t *c;
	json_array_foreach (cs, i, c)
		if (standin_str(c, "name") && strcmp(standin_str(c, "name"), container) == 0)
			env = json_object_get(c, "env");
	size_t n = json_array_size(env);
	char **out = calloc(n + 3, sizeof(*out));
	if (!out)
		return NULL;
	size_t k = 0;
	out[k++] = strdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	struct kb_buf b = {0};
	const char *host = standin_str(pod, "spec.hostname");
	kb_buf_printf(&b, "HOSTNAME=%.63s", host ? host : standin_str(pod, "metadata.name"));
	out[k++] = b.data;
	json_t *e;
	json_array_foreach (env, i, e) {
		const char *name = standin_str(e, "name"), *value = standin_str(e, "value");
		const char *fp = standin_str(e, "valueFrom.fieldRef.fieldPath");
		char *got = !value && fp ? field_value(pod, fp) : NULL;
		if (got)
			value = got;
		if (name && value && !strchr(name, '=')) {
			struct kb_buf v = {0};
			kb_buf_printf(&v, "%s=%s", name, value);
			out[k++] = v.data;
		}
		free(got);
	}
	return out;
}

static void free_env(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* A pseudo-terminal for stdin, stdout and stderr: the master side becomes
 * sx->out (read and written), *slave goes to the child. */
static int open_terminal(struct sx *sx, uv_stdio_container_t stdio[3], int *slave)
{
	int master;
	if (openpty(&master, slave, NULL, NULL, NULL) < 0)
		return uv_translate_sys_error(errno);
	fcntl(master, F_SETFD, FD_CLOEXEC);
	fcntl(*slave, F_SETFD, FD_CLOEXEC);
	int rc = uv_pipe_open(&sx->out, master);
	if (rc < 0) {
		close(master);
		close(*slave);
		return rc;
	}
	for (int i = 0; i < 3; i++) {
		stdio[i].flags = UV_INHERIT_FD;
		stdio[i].data.fd = *slave;
	}
	return 0;
}

static void pipe_stdio(uv_stdio_container_t *c, bool on, uv_pipe_t *p, int dir)
{
	if (on) {
		c->flags = UV_CREATE_PIPE | dir;
		c->data.stream = (uv_stream_t *)p;
	}
}

static int sx_spawn(struct sx *sx, uv_loop_t *loop, const struct exec_query *q, char **env)
{
	uv_stdio_container_t stdio[3] = {
	    {.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_IGNORE}};
	char *argv[MAX_ARGS + 3];
	int n = 0, slave = -1, rc;
	if (sx->tty) {
		if ((rc = open_terminal(sx, stdio, &slave)) < 0)
			return rc;
		if (access(SETSID, X_OK) == 0) { /* the terminal becomes its controlling one */
			argv[n++] = SETSID;
			argv[n++] = "--ctty";
		}
	} else {
		pipe_stdio(&stdio[0], sx->has_in, &sx->in, UV_READABLE_PIPE);
		pipe_stdio(&stdio[1], sx->has_out, &sx->out, UV_WRITABLE_PIPE);
		pipe_stdio(&stdio[2], sx->has_err, &sx->err, UV_WRITABLE_PIPE);
	}
	for (int i = 0; i < q->argc; i++)
		argv[n++] = q->argv[i];
	argv[n] = NULL;
	/* A process group of its own, killed whole (setsid --ctty makes one too) */
	uv_process_options_t o = {.exit_cb = on_exit_cb,
				  .file = argv[0],
				  .args = argv,
				  .env = env,
				  .stdio_count = 3,
				  .stdio = stdio,
				  .flags = sx->tty ? 0 : UV_PROCESS_DETACHED};
	sx->proc.data = sx;
	sx->proc_init = true;
	rc = uv_spawn(loop, &sx->proc, &o);
	if (slave >= 0)
		close(slave); /* the child has it; EOF on the master when it is gone */
	return rc;
}

static void init_pipe(struct sx *sx, uv_loop_t *loop, uv_pipe_t *p, bool on)
{
	if (!on)
		return;
	uv_pipe_init(loop, p, 0);
	p->data = sx;
	sx->handles++;
}

void standin_exec(struct standin *st, kb_http_req_t *http, const char *id, const json_t *pod,
		  const char *container)
{
	const char *up = kb_http_req_header(http, "upgrade");
	bool spdy = up && strcasecmp(up, "SPDY/3.1") == 0;
	char head[256];
	if (spdy) {
		/* v4 is the one SPDY protocol spoken here: it must be named */
		if (standin_spdy_head(http, PROTO_V4, true, head, sizeof(head)) < 0)
			return;
	} else if (!up || strcasecmp(up, "websocket") != 0) {
		standin_reply_status(
		    http, 400, "BadRequest",
		    "the host stand-in speaks exec over WebSocket (%s) or SPDY/3.1 "
		    "(%s), not %s",
		    PROTO_V5, PROTO_V4, up ? up : "this protocol");
		return;
	} else {
		/* v5 preferred, as the kubelet picks it */
		const char *proto =
		    kb_http_req_offers(http, "sec-websocket-protocol", PROTO_V5)   ? PROTO_V5
		    : kb_http_req_offers(http, "sec-websocket-protocol", PROTO_V4) ? PROTO_V4
										   : NULL;
		char accept[KB_WS_ACCEPT_LEN + 1];
		if (standin_ws_accept(http, accept) < 0)
			return;
		if (!proto) {
			standin_reply_status(
			    http, 400, "BadRequest",
			    "none of the offered subprotocols is supported: use %s or %s", PROTO_V5,
			    PROTO_V4);
			return;
		}
		snprintf(head, sizeof(head),
			 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
			 "Sec-WebSocket-Protocol: %s\r\n",
			 accept, proto);
	}
	struct exec_query q;
	int rc = parse_exec_query(http->query, &q);
	if (rc < 0 || q.argc == 0 || (!q.in && !q.out && !q.err)) {
		standin_reply_status(http, 400, "BadRequest", "%s",
				     rc == -E2BIG ? "too many command arguments"
				     : rc < 0     ? "out of memory"
				     : q.argc == 0
					 ? "you must specify at least one command for the container"
					 : "you must specify at least 1 of stdin, stdout, stderr");
		free(q.buf);
		return;
	}
	struct sx *sx = calloc(1, sizeof(*sx));
	char **env = make_env(pod, container);
	if (!sx || !env) {
		free(sx);
		free_env(env);
		free(q.buf);
		standin_reply_status(http, 500, "InternalError", "out of memory");
		return;
	}
	if (spdy && !(sx->spdy = kb_spdy_new(&spdy_cbs, sx))) {
		free(sx);
		free_env(env);
		free(q.buf);
		standin_reply_status(http, 500, "InternalError", "out of memory");
		return;
	}
	/* the streams a kubelet waits for */
	sx->want[CH_ERROR] = true;
	sx->want[CH_STDIN] = q.in;
	sx->want[CH_STDOUT] = q.out;
	sx->want[CH_STDERR] = q.err && !q.tty;
	sx->want[CH_RESIZE] = q.tty;
	uv_loop_t *loop = st->loop;
	kb_ws_parser_init(&sx->ws, true, MAX_MESSAGE);
	sx->tty = q.tty;
	sx->has_in = q.in && !q.tty;
	sx->has_out = q.out || q.tty;
	sx->has_err = q.err && !q.tty;
	init_pipe(sx, loop, &sx->in, sx->has_in);
	init_pipe(sx, loop, &sx->out, sx->has_out);
	init_pipe(sx, loop, &sx->err, sx->has_err);
	uv_timer_init(loop, &sx->timer);
	sx->timer.data = sx;
	uv_timer_init(loop, &sx->ready);
	sx->ready.data = sx;
	sx->handles += 2;
	for (int i = 0, off = 0; i < q.argc && off < (int)sizeof(sx->cmdline) - 1; i++)
		off += snprintf(sx->cmdline + off, sizeof(sx->cmdline) - (size_t)off, "%s%s",
				i ? " " : "", q.argv[i]);
	rc = sx_spawn(sx, loop, &q, env);
	free_env(env);
	sx->handles += sx->proc_init; /* the process handle, closed whatever the spawn gave */
	if (rc == 0) {
		sx->spawned = true;
		sx->reading = sx->has_out + sx->has_err;
	} else {
		struct kb_buf m = {0};
		kb_buf_printf(&m, "exec: \"%s\": %s", q.argv[0],
			      rc == UV_ENOENT ? "executable file not found in $PATH"
					      : uv_strerror(rc));
		sx->spawn_error = m.data;
		kb_info("standin", "exec %s: %s", id, sx->spawn_error);
	}
	free(q.buf);
	sx->http = http; /* the session answers it from now on */
	kb_http_req_on_abort(http, client_gone, sx);
	if (kb_http_upgrade(http, head, from_client, sx) < 0) {
		/* the client is gone: its abort callback releases the session */
		return;
	}
	/* SPDY: output waits for the streams, for STREAMS_MS at most */
	uv_timer_start(&sx->ready, on_ready, spdy ? STREAMS_MS : READY_MS, 0);
}
