/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the SPDY/3.1 session of lib/spdy, as the host
 * stand-in's port-forward feeds it. The input is fed whole, then in cuts
 * drawn from a generator seeded by its first byte; both must give the same
 * events (hashed: streams, headers, data joined per stream) and the same
 * result. Every callback answers as the stand-in would (a SYN_REPLY and
 * some DATA on each new stream, a reset for one in three), so the
 * compressor runs too; headers must be lower-case and NUL-free.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#include "lib/spdy.h"

struct trace {
	kb_spdy_t *s;
	uint64_t hash;
	size_t events;
};

static void mix(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		*h ^= b[i];
		*h *= 0x100000001b3ULL;
	}
}

static int on_syn(void *arg, uint32_t id, const struct kb_spdy_header *h, size_t n, bool fin)
{
	struct trace *t = arg;
	t->events++;
	mix(&t->hash, &id, sizeof(id));
	mix(&t->hash, &fin, sizeof(fin));
	for (size_t i = 0; i < n; i++) {
		for (const char *c = h[i].name; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				abort();
		mix(&t->hash, h[i].name, strlen(h[i].name) + 1);
		mix(&t->hash, h[i].value, strlen(h[i].value) + 1);
	}
	if (kb_spdy_header_get(h, n, "streamtype") == NULL && n > 0 &&
	    kb_spdy_header_get(h, n, h[0].name) != h[0].value)
		abort();
	if (id % 3 == 0)
		return kb_spdy_rst(t->s, id, KB_SPDY_REFUSED_STREAM);
	struct kb_spdy_header reply[] = {{"port", "80"}};
	int rc = kb_spdy_reply(t->s, id, reply, id % 2 ? 1 : 0, false);
	if (rc == 0)
		rc = kb_spdy_data(t->s, id, "ok", 2, id % 5 == 0);
	return rc;
}

static int on_data(void *arg, uint32_t id, const uint8_t *d, size_t len, bool fin)
{
	struct trace *t = arg;
	mix(&t->hash, d, len); /* pieces joined: the same bytes whatever the cuts */
	if (fin) {
		t->events++;
		mix(&t->hash, &id, sizeof(id));
	}
	return 0;
}

static int on_rst(void *arg, uint32_t id, uint32_t status)
{
	struct trace *t = arg;
	t->events++;
	mix(&t->hash, &id, sizeof(id));
	mix(&t->hash, &status, sizeof(status));
	return 0;
}

static int on_goaway(void *arg)
{
	struct trace *t = arg;
	t->events++;
	return -ECONNRESET;
}

static int on_write(void *arg, const uint8_t *d, size_t len)
{
	(void)arg;
	if (len < 8)
		abort(); /* every frame has its 8-byte header */
	(void)d;
	return 0;
}

static const struct kb_spdy_cbs cbs = {on_syn, on_data, on_rst, on_goaway, on_write};

static int run(const uint8_t *data, size_t size, bool cut, struct trace *t)
{
	memset(t, 0, sizeof(*t));
	t->s = kb_spdy_new(&cbs, t);
	if (!t->s)
		return -ENOMEM;
	int rc = 0;
	uint32_t seed = size ? data[0] * 2654435761u + 1 : 1;
	for (size_t off = 0; off < size && rc == 0;) {
		size_t n = size - off;
		if (cut) {
			seed = seed * 1103515245u + 12345u;
			n = (seed >> 16) % 17;
			if (n > size - off)
				n = size - off;
		}
		rc = kb_spdy_feed(t->s, data + off, n);
		off += n;
	}
	kb_spdy_free(t->s);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace whole, cut;
	int a = run(data, size, false, &whole);
	int b = run(data, size, true, &cut);
	if (a == -ENOMEM || b == -ENOMEM)
		return 0;
	if (a != b || whole.hash != cut.hash || whole.events != cut.events)
		abort();
	return 0;
}
