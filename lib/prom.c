/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus text exposition writer (lib/prom.h).
 */
#include "lib/prom.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kb_prom_escape(struct kb_buf *b, const char *value)
{
	const char *p = value ? value : "", *run = p;
	int rc = 0;
	for (; *p && rc == 0; p++) {
		const char *esc = *p == '\\'   ? "\\\\"
				  : *p == '"'  ? "\\\""
				  : *p == '\n' ? "\\n"
					       : NULL;
		if (!esc)
			continue;
		rc = kb_buf_append(b, run, (size_t)(p - run));
		if (rc == 0)
			rc = kb_buf_puts(b, esc);
		run = p + 1;
	}
	return rc ? rc : kb_buf_append(b, run, (size_t)(p - run));
}

/* HELP text: only backslash and line feed are escaped. */
static int escape_help(struct kb_buf *b, const char *help)
{
	int rc = 0;
	for (const char *p = help; *p && rc == 0; p++) {
		if (*p == '\\')
			rc = kb_buf_puts(b, "\\\\");
		else if (*p == '\n')
			rc = kb_buf_puts(b, "\\n");
		else
			rc = kb_buf_append(b, p, 1);
	}
	return rc;
}

int kb_prom_family(struct kb_buf *b, const char *name, const char *type, const char *help)
{
	int rc = kb_buf_printf(b, "# HELP %s ", name);
	if (rc == 0)
		rc = escape_help(b, help);
	if (rc == 0)
		rc = kb_buf_printf(b, "\n# TYPE %s %s\n", name, type);
	return rc;
}

/* Go's shortest 'g' formatting: the fewest significant digits that read
 * back as v, in exponent form when the decimal exponent is < -4 or >= 6
 * (strconv decides with precision 6 when the precision is the shortest). */
int kb_prom_float(struct kb_buf *b, double v)
{
	if (isnan(v))
		return kb_buf_puts(b, "NaN");
	if (isinf(v))
		return kb_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
	if (v == 0)
		return kb_buf_puts(b, "0");
	if (v == floor(v) && fabs(v) < 1e6) /* counts, mostly: no search for the digits */
		return kb_buf_printf(b, "%.0f", v);
	char e[40];
	int prec = 1;
	for (; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	snprintf(e, sizeof(e), "%.*e", prec - 1, v);
	const char *x = strchr(e, 'e');
	int exp = x ? atoi(x + 1) : 0;
	if (exp < -4 || exp >= 6)
		return kb_buf_puts(b, e);
	int decimals = prec - 1 - exp;
	return kb_buf_printf(b, "%.*f", decimals > 0 ? decimals : 0, v);
}

static int labels_out(struct kb_buf *b, const char *const *labels, size_t nlabels, const char *le,
		      double le_v)
{
	if (nlabels == 0 && !le)
		return 0;
	int rc = kb_buf_puts(b, "{");
	for (size_t i = 0; i < nlabels && rc == 0; i++) {
		rc = kb_buf_printf(b, "%s%s=\"", i ? "," : "", labels[2 * i]);
		if (rc == 0)
			rc = kb_prom_escape(b, labels[2 * i + 1]);
		if (rc == 0)
			rc = kb_buf_puts(b, "\"");
	}
	if (le && rc == 0) {
		rc = kb_buf_printf(b, "%s%s=\"", nlabels ? "," : "", le);
		if (rc == 0)
			rc = kb_prom_float(b, le_v);
		if (rc == 0)
			rc = kb_buf_puts(b, "\"");
	}
	return rc ? rc : kb_buf_puts(b, "}");
}

static int sample(struct kb_buf *b, const char *name, const char *suffix, const char *const *labels,
		  size_t nlabels, const char *le, double le_v, double value)
{
	int rc = kb_buf_puts(b, name);
	if (rc == 0 && suffix)
		rc = kb_buf_puts(b, suffix);
	if (rc == 0)
		rc = labels_out(b, labels, nlabels, le, le_v);
	if (rc == 0)
		rc = kb_buf_puts(b, " ");
	if (rc == 0)
		rc = kb_prom_float(b, value);
	return rc ? rc : kb_buf_puts(b, "\n");
}

int kb_prom_sample(struct kb_buf *b, const char *name, const char *suffix,
		   const char *const *labels, size_t nlabels, double value)
{
	return sample(b, name, suffix, labels, nlabels, NULL, 0, value);
}

int kb_prom_histogram(struct kb_buf *b, const char *name, const char *const *labels, size_t nlabels,
		      const double *bounds, size_t nbounds, const uint64_t *counts, double sum)
{
	uint64_t cum = 0;
	int rc = 0;
	for (size_t i = 0; i <= nbounds && rc == 0; i++) {
		cum += counts[i];
		rc = sample(b, name, "_bucket", labels, nlabels, "le",
			    i < nbounds ? bounds[i] : INFINITY, (double)cum);
	}
	if (rc == 0)
		rc = sample(b, name, "_sum", labels, nlabels, NULL, 0, sum);
	if (rc == 0)
		rc = sample(b, name, "_count", labels, nlabels, NULL, 0, (double)cum);
	return rc;
}

int kb_prom_scalar(struct kb_buf *b, const char *name, const char *type, const char *help, double v)
{
	int rc = kb_prom_family(b, name, type, help);
	return rc ? rc : kb_prom_sample(b, name, NULL, NULL, 0, v);
}

size_t kb_prom_bucket(const double *bounds, size_t nbounds, double v)
{
	size_t i = 0;
	while (i < nbounds && v > bounds[i])
		i++;
	return i;
}
