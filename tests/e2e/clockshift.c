/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A test-only LD_PRELOAD library: the wall clock of the process that loads
 * it runs ahead by the number of seconds written in the file named by
 * $KUBICLE_TEST_CLOCK_FILE (read again at most once a second; absent or
 * unreadable: 0). Monotonic clocks are left alone, so libuv's timers (the
 * syncer's 30 s resync) keep their real pace while time(), gettimeofday()
 * and CLOCK_REALTIME jump: an e2e test shows a time-driven refresh (the
 * projected tokens the syncer renews at 80 % of their lifetime) in seconds
 * instead of minutes, with no test hook in the product
 * (tests/e2e/t_hostrefs.sh hostrefs_token_refresh).
 *
 * Never part of the product: built only for the tests (tests/meson.build),
 * without sanitizers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef int (*clock_fn)(clockid_t, struct timespec *);

static clock_fn real_clock(void)
{
	static clock_fn fn;
	clock_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (clock_fn)dlsym(RTLD_NEXT, "clock_gettime");
		__atomic_store_n(&fn, f, __ATOMIC_RELEASE);
	}
	return f;
}

/* The offset in seconds, the file read again when a second has passed. */
static long offset(void)
{
	static long cached, read_at = -1;
	struct timespec now;
	if (real_clock()(CLOCK_MONOTONIC, &now) != 0)
		return __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (__atomic_load_n(&read_at, __ATOMIC_RELAXED) == (long)now.tv_sec)
		return __atomic_load_n(&cached, __ATOMIC_RELAXED);
	const char *path = getenv("KUBICLE_TEST_CLOCK_FILE");
	long v = 0;
	FILE *f = path ? fopen(path, "r") : NULL;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 0;
		fclose(f);
	}
	__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	__atomic_store_n(&read_at, (long)now.tv_sec, __ATOMIC_RELAXED);
	return v;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int rc = real_clock()(id, ts);
	if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		ts->tv_sec += offset();
	return rc;
}

time_t time(time_t *out)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (out)
		*out = ts.tv_sec;
	return ts.tv_sec;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	(void)tz;
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}
