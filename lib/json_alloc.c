/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A per-thread cache of small freed blocks for jansson's allocations: see
 * kb_json_alloc_install in json.h.
 *
 * A request of the API builds and frees a few thousand small jansson
 * blocks (objects, hash buckets, key/value pairs, strings). glibc's
 * per-thread cache holds 7 blocks of a size; the rest go through its
 * arena (locked: the server has threads) and, whenever a larger block is
 * asked for while small freed ones wait in its fast bins, a consolidation
 * of the whole heap. Here a thread that enabled the cache (a server's
 * loop, once it has started) keeps freed blocks up to 504 bytes in lists
 * by glibc's own chunk size (16-byte steps), up to CACHE_MAX bytes, and
 * hands them out again for requests of the same chunk size; other threads
 * pass every block to malloc and free. Every block is an ordinary
 * malloc'ed block: any thread may free one with free() or through this
 * cache. Nothing is cached under AddressSanitizer (it would hide
 * use-after-free).
 */
#include "lib/json.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* Blocks up to this many usable bytes (a 512-byte glibc chunk) are kept. */
#define SMALL_MAX 504
/* glibc's chunk size / 16, for chunk sizes 32 ... 512 */
#define CLASSES 33
/* The most a thread keeps (bytes of chunks): a burst of creates on 16
 * connections frees some 16 x 1,500 blocks between reuses. */
#define CACHE_MAX (1024 * 1024)

struct cache {
	void *head[CLASSES];
	size_t bytes;
	bool keyed; /* registered for the flush at thread exit (a loop that
		     is not the main thread's) */
};

static __thread struct cache tc;
/* 0 until the thread calls kb_json_alloc_enable (the server's loop, once
 * it has started): what is made while a server starts stays (roles,
 * schemas, the PKI), and blocks held apart from the heap around it would
 * keep its pages from being trimmed later; other threads keep nothing. */
static __thread size_t tc_max;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void flush(struct cache *c)
{
	for (size_t i = 0; i < CLASSES; i++) {
		void *p = c->head[i];
		while (p) {
			void *next = *(void **)p;
			free(p);
			p = next;
		}
		c->head[i] = NULL;
	}
	c->bytes = 0;
}

static void on_thread_exit(void *arg)
{
	flush(arg);
}

static void make_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* glibc's chunk for a request of n bytes is max(32, (n + 8 + 15) & ~15):
 * its class is that size / 16. */
static void *cached_malloc(size_t n)
{
	if (n <= SMALL_MAX) {
		size_t k = (n + 23) >> 4;
		if (k < 2)
			k = 2;
		void *p = tc.head[k];
		if (p) {
			tc.head[k] = *(void **)p;
			tc.bytes -= k << 4;
			return p;
		}
	}
	return malloc(n);
}

/* A block of u usable bytes has a chunk of u + 8 (u + 8 >= 16 * class, so
 * it is large enough for every request of its class, also where
 * malloc_usable_size reports the exact size asked for). */
static void cached_free(void *p)
{
	if (!p)
		return;
	size_t u = malloc_usable_size(p);
	size_t k = (u + 8) >> 4;

	if (u <= SMALL_MAX && tc.bytes + (k << 4) <= tc_max) {
		if (!tc.keyed) {
			pthread_once(&exit_once, make_key);
			pthread_setspecific(exit_key, &tc);
			tc.keyed = true;
		}
		*(void **)p = tc.head[k];
		tc.head[k] = p;
		tc.bytes += k << 4;
		return;
	}
	free(p);
}

#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ON 0
#endif
#endif
#ifndef CACHE_ON
#define CACHE_ON 1
#endif

void kb_json_alloc_install(void)
{
	if (CACHE_ON)
		json_set_alloc_funcs(cached_malloc, cached_free);
}

void kb_json_alloc_enable(void)
{
	tc_max = CACHE_MAX;
}

void kb_json_alloc_flush(void)
{
	flush(&tc);
}
