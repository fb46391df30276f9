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
 *
 * A freed block's class is read from glibc's chunk header, the size word
 * just before the block (its low three bits are flags), as
 * malloc_usable_size reads it, without that call and its look at the next
 * chunk (a cold line: a create frees some 600 blocks). Only where that is
 * what malloc is: glibc's own malloc (not one preloaded in its place or a
 * debugging one), checked once when the cache is installed against
 * malloc_usable_size for every size it keeps; elsewhere malloc_usable_size
 * classes every block as before.
 */
#include "lib/json.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

/* initial-exec: an offset from the thread pointer, not a look-up call
 * (these are read on every allocation and free) */
#define TLS_IE __attribute__((tls_model("initial-exec")))

static __thread struct cache tc TLS_IE;
/* 0 until the thread calls kb_json_alloc_enable (the server's loop, once
 * it has started): what is made while a server starts stays (roles,
 * schemas, the PKI), and blocks held apart from the heap around it would
 * keep its pages from being trimmed later; other threads keep nothing. */
static __thread size_t tc_max TLS_IE;
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

/* Whether a block's chunk size is read from its header (see above). */
static bool chunk_header;

#ifdef __GLIBC__
/* glibc's malloc under its own name: `malloc` is the same function unless
 * another allocator was put in its place. */
extern void *__libc_malloc(size_t n);
#endif

/* glibc's chunk header flags: the chunk was mmap'ed / the low bits. */
#define CHUNK_MMAPPED ((size_t)2)
#define CHUNK_FLAGS   ((size_t)7)

static inline size_t chunk_word(const void *p)
{
	size_t w;

	/* through an integer: the word is malloc's, before the block */
	memcpy(&w, (const void *)((uintptr_t)p - sizeof(size_t)), sizeof(w));
	return w;
}

/* Whether chunk headers say what malloc_usable_size says for sizes the
 * cache keeps (and the next): glibc's malloc, as it lays chunks. */
static bool chunk_header_check(void)
{
#ifdef __GLIBC__
	if ((uintptr_t)malloc != (uintptr_t)__libc_malloc)
		return false;
	/* the ends of the first class, of a middle one and of the last, and
	 * the first size past it */
	static const size_t sizes[] = {1, 24, 25, 248, 249, SMALL_MAX, SMALL_MAX + 1};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		void *p = malloc(n);
		bool same;

		if (!p)
			return false;
		size_t w = chunk_word(p);
		same = !(w & CHUNK_MMAPPED) && (w & ~CHUNK_FLAGS) == malloc_usable_size(p) + 8;
		free(p);
		if (!same)
			return false;
	}
	return true;
#else
	return false;
#endif
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

/* Keeps a block whose chunk has c bytes, or frees it. A block of u usable
 * bytes has a chunk of u + 8 (u + 8 >= 16 * class, so it is large enough
 * for every request of its class, also where malloc_usable_size reports
 * the exact size asked for); an mmap'ed chunk's size is far above
 * SMALL_MAX + 8: never kept. */
static inline void keep_or_free(void *p, size_t c)
{
	size_t k = c >> 4;

	if (c <= SMALL_MAX + 8 && tc.bytes + (k << 4) <= tc_max) {
		*(void **)p = tc.head[k];
		tc.head[k] = p;
		tc.bytes += k << 4;
		return;
	}
	free(p);
}

/* Where chunk headers are not read (apart: the common path calls nothing
 * but free). */
__attribute__((noinline)) static void free_by_usable_size(void *p)
{
	keep_or_free(p, malloc_usable_size(p) + 8);
}

static void cached_free(void *p)
{
	if (!p)
		return;
	if (!chunk_header) {
		free_by_usable_size(p);
		return;
	}
	keep_or_free(p, chunk_word(p) & ~CHUNK_FLAGS);
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
	if (!CACHE_ON)
		return;
	chunk_header = chunk_header_check();
	json_set_alloc_funcs(cached_malloc, cached_free);
}

void kb_json_alloc_enable(void)
{
	/* registered for the flush at the thread's exit here, where its cache
	 * may first keep a block (never before: tc_max is 0) */
	if (!tc.keyed) {
		pthread_once(&exit_once, make_key);
		pthread_setspecific(exit_key, &tc);
		tc.keyed = true;
	}
	tc_max = CACHE_MAX;
}

void kb_json_alloc_flush(void)
{
	flush(&tc);
}

bool kb_json_alloc_reads_headers(void)
{
	return chunk_header;
}
