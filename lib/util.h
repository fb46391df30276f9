/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small foundations: time stamps, base64, uuids, string building, hex
 * digits, DNS labels, error messages into a caller's buffer.
 * Threading: any thread.
 */
#ifndef KB_UTIL_H
#define KB_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#define KB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Intrusive doubly linked lists: elements with `prev` and `next` fields,
 * the first one in `head` (an lvalue). PUSH links e at the front (e's links
 * are overwritten); UNLINK takes e out (its own links are left as they were). */
#define KB_LIST_PUSH(head, e)               \
	do {                                \
		(e)->prev = NULL;           \
		(e)->next = (head);         \
		if (head)                   \
			(head)->prev = (e); \
		(head) = (e);               \
	} while (0)
#define KB_LIST_UNLINK(head, e)                      \
	do {                                         \
		if ((e)->prev)                       \
			(e)->prev->next = (e)->next; \
		else                                 \
			(head) = (e)->next;          \
		if ((e)->next)                       \
			(e)->next->prev = (e)->prev; \
	} while (0)
#define kb_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* The wall clock in microseconds since the epoch. */
int64_t kb_now_us(void);
/* "2026-11-29T16:45:16Z" into buf (at least 32 bytes). */
void kb_time_rfc3339(time_t t, char *buf, size_t len);
/* With microseconds: "2026-11-29T16:45:16.123456Z" (MicroTime). */
void kb_time_rfc3339_micro(char *buf, size_t len);
/* Parses RFC3339 ("Z" or offset, optional fraction). 0 or -EINVAL. */
int kb_time_parse(const char *s, time_t *out);
/* kubectl-style age: "5s", "3m", "2m30s", "5h", "3d", "2y". */
void kb_age(time_t from, time_t now, char *buf, size_t len);
/* Milliseconds from a monotonic clock. */
uint64_t kb_now_ms(void);
/* Starts t (initialised) once, at the next multiple of period ms (> 0) on
 * its loop's clock (uv_now). A periodic timer calls this again first thing
 * in its callback: all such timers of one loop with one period then fire in
 * the same loop iteration, whenever each was started and however late the
 * loop was (libuv's own repeat re-arms from the late time, and timers drift
 * apart): an idle server wakes once per period, not once per timer. Loop
 * thread. uv_timer_start's result. */
int kb_timer_start_aligned(uv_timer_t *t, uv_timer_cb cb, uint64_t period);

/* Standard base64 with padding. Returns malloc'ed strings/buffers. */
char *kb_base64_encode(const void *data, size_t len);
int kb_base64_decode(const char *s, size_t slen, unsigned char **out, size_t *out_len);
/* URL-safe base64 without padding (continue tokens). */
char *kb_base64url_encode(const void *data, size_t len);
int kb_base64url_decode(const char *s, unsigned char **out, size_t *out_len);

/* A random RFC 4122 v4 uuid, lower-case, into buf (at least 37 bytes). */
void kb_uuid(char *buf);
/* n random lower-case alphanumeric characters ("bcdfghjklmnpqrstvwxz2456789",
 * like generateName suffixes) into buf (n + 1 bytes). */
void kb_random_suffix(char *buf, size_t n);

/* A growable string buffer. */
struct kb_buf {
	char *data;
	size_t len, cap;
};
/* Room for n more bytes and a terminating NUL (capacity doubles from 256).
 * 0 or -ENOMEM (b unchanged). */
int kb_buf_reserve(struct kb_buf *b, size_t n);
int kb_buf_append(struct kb_buf *b, const char *s, size_t n);
int kb_buf_puts(struct kb_buf *b, const char *s);
int kb_buf_printf(struct kb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kb_buf_free(struct kb_buf *b);

bool kb_str_has_prefix(const char *s, const char *prefix);

/* 64-bit FNV-1a of n bytes, continuing from h (KB_FNV1A_INIT to begin):
 * table slots and cache keys (start-up stamps), not a security hash. */
#define KB_FNV1A_INIT 14695981039346656037ULL
static inline uint64_t kb_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

/* The value of the hex digit c ('0'-'9', 'a'-'f', 'A'-'F'): 0 to 15, or -1
 * for anything else (a negative char included). */
int kb_hexval(int c);

/* Formats a message into err (borrowed; truncated to len - 1 bytes and
 * NUL-terminated; nothing written when err is NULL or len is 0) and returns
 * rc, for `return kb_errf(err, len, -EINVAL, "bad %s", what);`. */
int kb_errf(char *err, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Kubernetes resource quantities: "100m", "1Gi", "2", "1e3", "500Mi", "0.5",
 * "+1k". *out is the value in base units (e.g. 0.1 for "100m"). 0 or -EINVAL. */
int kb_quantity_parse(const char *s, double *out);
/* Compares two quantity strings ("1Gi" equals "1024Mi"); *out is -1, 0 or 1.
 * 0 or -EINVAL. */
int kb_quantity_cmp(const char *a, const char *b, int *out);
/* kb_quantity_cmp of two values kb_quantity_parse has read: -1, 0 or 1. */
int kb_quantity_cmp_values(double a, double b);
bool kb_str_has_suffix(const char *s, const char *suffix);
/* A DNS-1123 label of at most max characters: lower case letters, digits
 * and '-', neither first nor last. */
bool kb_dns_label(const char *s, size_t max);
/* The same rule over the n bytes at s (not NUL-terminated, no length limit:
 * callers check their own): [a-z0-9]([-a-z0-9]*[a-z0-9])?. False for n == 0. */
bool kb_dns_label_n(const char *s, size_t n);
/* Whether s is an IPv4 or IPv6 address (text form). */
bool kb_is_ip(const char *s);

struct sockaddr_storage;
/* "HOST:PORT" or "[IPv6]:PORT", HOST an IPv4 or IPv6 address, into *ss.
 * With default_port >= 0 a bare address ("10.0.0.10", "fd00::a") is
 * accepted too and gets that port. 0 or -EINVAL. */
int kb_parse_hostport(const char *addr, int default_port, struct sockaddr_storage *ss);

#endif
