/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Many sends to many sockets with one system call: a watch event fanned out
 * to a thousand streams costs a thousand send(2)s, and on a machine whose
 * system calls are dear (page-table isolation, a paravirtualised kernel)
 * their entry and exit is a fifth of the fan-out. A batch gathers the
 * sends in an arena of its own and gives them to the kernel with one
 * io_uring_enter(2).
 *
 * DESIGN: each send is tried once, without blocking (MSG_DONTWAIT), so
 * every one has completed when the flush returns and the arena is free
 * again; what a socket did not take is handed back to the caller, which
 * queues it as it would after a short write(2). A batch never holds two
 * sends to one socket: should the second fail while the first was taken in
 * part, the stream would be out of order. The caller flushes before every
 * other operation on a socket with a send in the batch (another write,
 * shutdown) and forgets the send of a socket it closes.
 *
 * io_uring may be missing or forbidden (kernel.io_uring_disabled, seccomp,
 * an old kernel): kb_sendbatch_new then returns NULL once and the caller
 * writes as before.
 *
 * Threading: a batch belongs to one thread (the loop thread).
 */
#ifndef KB_SENDBATCH_H
#define KB_SENDBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kb_sendbatch kb_sendbatch_t;

/* A batch of up to `entries` sends of `arena` bytes in all; NULL when
 * io_uring cannot be used here (logged). */
kb_sendbatch_t *kb_sendbatch_new(unsigned entries, size_t arena);
void kb_sendbatch_free(kb_sendbatch_t *b);

/* Room for n bytes of the next send, or NULL when the batch has no room
 * left (flush, then ask again) or n is more than its arena holds. */
uint8_t *kb_sendbatch_room(kb_sendbatch_t *b, size_t n);

/* Adds a send to fd of the n bytes just written at kb_sendbatch_room, for
 * `owner`. Returns the send's slot, for kb_sendbatch_forget. */
int kb_sendbatch_add(kb_sendbatch_t *b, int fd, size_t n, void *owner);

/* Drops the send in `slot` (its socket is being closed). */
void kb_sendbatch_forget(kb_sendbatch_t *b, int slot);

bool kb_sendbatch_empty(const kb_sendbatch_t *b);

/*
 * Called for each send not forgotten: `sent` bytes were taken (0 when the
 * socket had no room), `rest` is what is left (rest_len 0: all went),
 * valid during the call only; err is 0 or a negative errno of the send
 * (the connection is broken).
 */
typedef void (*kb_sendbatch_cb)(void *owner, size_t sent, const uint8_t *rest, size_t rest_len,
				int err, void *arg);

/* Submits every send and waits for all of them (none blocks), then
 * reports each. Returns how many were submitted, or a negative errno when
 * io_uring failed (the sends without a completion are reported with
 * sent = 0 and err = 0, to be written the ordinary way). */
int kb_sendbatch_flush(kb_sendbatch_t *b, kb_sendbatch_cb cb, void *arg);

#endif
