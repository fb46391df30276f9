/* SPDX-License-Identifier: Apache-2.0 */
/* Calendar arithmetic and time zones for CEL's timestamps (proxy/cel/time.c) */
#ifndef KUBICLE_CEL_CEL_TIME_H
#define KUBICLE_CEL_CEL_TIME_H

#include <stddef.h>
#include <stdint.h>

/* cel-go's timestamp range: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z. */
#define CEL_MIN_TS_SECONDS (-62135596800LL)
#define CEL_MAX_TS_SECONDS 253402300799LL

struct cel_tm {
	int64_t year;
	unsigned month, day; /* 1-based */
	int hour, min, sec;
	int64_t nsec;
	int wday; /* 0 Sunday */
	int yday; /* 0-based */
};

int64_t cel_days_from_civil(int64_t y, unsigned m, unsigned d);
void cel_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
/* Splits a timestamp (ns since the epoch) shifted by offset seconds. */
void cel_split_time(int64_t nanos, int64_t offset, struct cel_tm *tm);
/* The UTC offset (seconds) of zone name at a time: "UTC", "+01:00",
 * "-05:30" or an IANA name. 0, or -ENOENT/-EINVAL for an unknown zone. */
int cel_zone_offset(const char *name, int64_t nanos, int64_t *off);

/* Go's time.Parse(time.RFC3339, s) error text for a string
 * cel_parse_timestamp refused as invalid. */
void cel_timestamp_error(const char *s, size_t n, char *msg, size_t cap);

#endif
