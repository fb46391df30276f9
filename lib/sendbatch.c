/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/sendbatch.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "lib/util.h"

struct send {
	void *owner; /* NULL: forgotten */
	int fd;
	uint32_t off, len;
};

struct kb_sendbatch {
	struct io_uring ring;
	unsigned cap; /* sends */
	size_t acap;  /* arena bytes */
	unsigned n;   /* sends in the batch */
	size_t used;  /* arena bytes in the batch */
	uint8_t *arena;
	struct send *sends;
	bool broken; /* io_uring failed: the ring is gone, no more sends */
};

kb_sendbatch_t *kb_sendbatch_new(unsigned entries, size_t arena)
{
	KB_CHECK(entries > 0 && arena > 0 && arena <= UINT32_MAX, NULL);
	kb_sendbatch_t *b = calloc(1, sizeof(*b));
	struct send *sends = calloc(entries, sizeof(*sends));
	if (!b || !sends) {
		free(b);
		free(sends);
		return NULL;
	}
	/* SUBMIT_ALL: a send that fails does not leave the ones behind it in
	 * the ring (they would go out later, from a reused arena). */
	struct io_uring_params p = {.flags = IORING_SETUP_SUBMIT_ALL};
	int rc = io_uring_queue_init_params(entries, &b->ring, &p);
	if (rc < 0) {
		kb_info("sendbatch", "io_uring unavailable (%s): one write per send",
			strerror(-rc));
		free(sends);
		free(b);
		return NULL;
	}
	b->cap = entries;
	b->acap = arena;
	b->sends = sends;
	return b;
}

void kb_sendbatch_free(kb_sendbatch_t *b)
{
	if (!b)
		return;
	if (!b->broken)
		io_uring_queue_exit(&b->ring);
	free(b->arena);
	free(b->sends);
	free(b);
}

uint8_t *kb_sendbatch_room(kb_sendbatch_t *b, size_t n)
{
	if (b->broken || b->n == b->cap || n > b->acap - b->used)
		return NULL;
	if (!b->arena && !(b->arena = malloc(b->acap)))
		return NULL;
	return b->arena + b->used;
}

int kb_sendbatch_add(kb_sendbatch_t *b, int fd, size_t n, void *owner)
{
	KB_CHECK(owner && b->n < b->cap && n <= b->acap - b->used, -EINVAL);
	b->sends[b->n] =
	    (struct send){.owner = owner, .fd = fd, .off = (uint32_t)b->used, .len = (uint32_t)n};
	b->used += n;
	return (int)b->n++;
}

void kb_sendbatch_forget(kb_sendbatch_t *b, int slot)
{
	if (slot >= 0 && (unsigned)slot < b->n)
		b->sends[slot].owner = NULL;
}

bool kb_sendbatch_empty(const kb_sendbatch_t *b)
{
	return b->n == 0;
}

static void report(kb_sendbatch_t *b, const struct send *s, int res, kb_sendbatch_cb cb, void *arg)
{
	size_t sent = res > 0 ? (size_t)res : 0;
	int err = res < 0 && res != -EAGAIN ? res : 0;
	cb(s->owner, sent, b->arena + s->off + sent, s->len - sent, err, arg);
}

int kb_sendbatch_flush(kb_sendbatch_t *b, kb_sendbatch_cb cb, void *arg)
{
	unsigned want = 0;
	for (unsigned i = 0; i < b->n; i++) {
		const struct send *s = &b->sends[i];
		if (!s->owner)
			continue;
		struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
		KB_REQUIRE(sqe); /* the ring has as many entries as the batch */
		io_uring_prep_send(sqe, s->fd, b->arena + s->off, s->len,
				   MSG_DONTWAIT | MSG_NOSIGNAL);
		io_uring_sqe_set_data64(sqe, i);
		want++;
	}
	int rc = 0;
	if (want) {
		do /* a signal in the wait: the sends are in, wait again */
			rc = io_uring_submit_and_wait(&b->ring, want);
		while (rc == -EINTR);
	}
	if (rc < 0) {
		/* What completed is reported; the rest is handed back whole.
		 * Sends left in the ring must never go out from a reused arena,
		 * so the ring is closed and the batch takes no more sends. */
		kb_warn("sendbatch", "io_uring_submit: %s; one write per send from now on",
			strerror(-rc));
		struct io_uring_cqe *cqe;
		while (io_uring_peek_cqe(&b->ring, &cqe) == 0) {
			struct send *s = &b->sends[io_uring_cqe_get_data64(cqe)];
			io_uring_cqe_seen(&b->ring, cqe);
			if (s->owner)
				report(b, s, cqe->res, cb, arg);
			s->owner = NULL;
		}
		io_uring_queue_exit(&b->ring);
		b->broken = true;
		for (unsigned i = 0; i < b->n; i++)
			if (b->sends[i].owner)
				report(b, &b->sends[i], 0, cb, arg);
	} else {
		unsigned done = 0, head;
		struct io_uring_cqe *cqe;
		io_uring_for_each_cqe(&b->ring, head, cqe)
		{
			const struct send *s = &b->sends[io_uring_cqe_get_data64(cqe)];
			if (s->owner)
				report(b, s, cqe->res, cb, arg);
			done++;
		}
		io_uring_cq_advance(&b->ring, done);
		KB_REQUIRE(done == want);
	}
	b->n = 0;
	b->used = 0;
	return rc < 0 ? rc : (int)want;
}
