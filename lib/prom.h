/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus text exposition format (version 0.0.4), as a writer into a
 * kb_buf: HELP and TYPE lines, samples with escaped label values, and
 * histograms (_bucket lines with cumulative counts ending at le="+Inf",
 * then _sum and _count). Numbers are written as Go's
 * strconv.FormatFloat(v, 'g', -1, 64) writes them (what client_golang
 * sends): "0.005", "1", "1000", "1e+06", "+Inf", so that label values such
 * as le="1" match what dashboards and recording rules expect.
 *
 * Labels are given as an array of 2*n strings: name, value, name, value...
 * Names are written as given (callers use constant, valid names); values
 * are escaped (backslash, double quote, line feed).
 *
 * Errors: 0 or -ENOMEM (the buffer may hold a partial line then).
 * Threading: no state; any thread.
 */
#ifndef KB_PROM_H
#define KB_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "lib/util.h"

#define KB_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* "# HELP name help\n# TYPE name type\n"; help is escaped (\\ and \n). */
int kb_prom_family(struct kb_buf *b, const char *name, const char *type, const char *help);
/* One sample: name[suffix]{labels} value\n. suffix may be NULL. */
int kb_prom_sample(struct kb_buf *b, const char *name, const char *suffix,
		   const char *const *labels, size_t nlabels, double value);
/*
 * A histogram's samples for one label set. counts[i] holds the
 * observations that fell in bucket i (not cumulative): counts[0..nbounds-1]
 * those <= bounds[i] (and above the previous bound), counts[nbounds] those
 * above the last bound. Writes the cumulative _bucket lines, +Inf, _sum,
 * _count (the sum of counts).
 */
int kb_prom_histogram(struct kb_buf *b, const char *name, const char *const *labels, size_t nlabels,
		      const double *bounds, size_t nbounds, const uint64_t *counts, double sum);
/* The bucket index of v for kb_prom_histogram's counts (0..nbounds). */
size_t kb_prom_bucket(const double *bounds, size_t nbounds, double v);
/* A family of one sample without labels: HELP, TYPE and the value. */
int kb_prom_scalar(struct kb_buf *b, const char *name, const char *type, const char *help,
		   double v);
/* A number as client_golang writes it. */
int kb_prom_float(struct kb_buf *b, double v);
/* A label value with its escapes (no quotes). */
int kb_prom_escape(struct kb_buf *b, const char *value);

#endif
