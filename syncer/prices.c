/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The platform's GPU price file (docs/finops.md, "Prices"): read by
 * `kubicle usage` for its reports and by each tenant's ledger for the cost
 * its GPUUsage objects show. One parser, so both price alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "syncer/syncer.h"

/* A price: a YAML number (kb_yaml_load may give it as a string). */
static bool price_value(const json_t *v, double *out)
{
	char *end;
	if (json_is_number(v))
		*out = json_number_value(v);
	else if (json_is_string(v) && *json_string_value(v))
		*out = strtod(json_string_value(v), &end), v = *end ? NULL : v;
	else
		return false;
	return v && *out >= 0 && *out < 1e9;
}

static int prices_from(const json_t *doc, const char *file, json_t *p, char *err, size_t len)
{
	const char *k;
	json_t *v;
	double d;
	json_object_foreach ((json_t *)doc, k, v) {
		if (strcmp(k, "currency") == 0 && json_is_string(v) &&
		    strlen(json_string_value(v)) < 16) {
			json_object_set(p, "currency", v);
		} else if (strcmp(k, "default") == 0 && price_value(v, &d)) {
			json_object_set_new(p, "default", json_real(d));
		} else if (strcmp(k, "models") == 0 && json_is_object(v)) {
			const char *m;
			json_t *pv;
			json_object_foreach (v, m, pv) {
				if (!price_value(pv, &d))
					return kb_errf(
					    err, len, -EINVAL,
					    "%s: models.%s: a price per GPU-hour (a number "
					    ">= 0) is wanted",
					    file, m);
				json_object_set_new(json_object_get(p, "models"), m, json_real(d));
			}
		} else {
			return kb_errf(err, len, -EINVAL,
				       "%s: unknown or bad key \"%s\" (currency, default, models)",
				       file, k);
		}
	}
	return 0;
}

int syncer_prices_load(const char *file, json_t **out, char *err, size_t len)
{
	*out = NULL;
	FILE *f = fopen(file, "r");
	if (!f)
		return kb_errf(err, len, -errno, "%s: %s", file, strerror(errno));
	char *buf = malloc(65536);
	size_t n = buf ? fread(buf, 1, 65535, f) : 0;
	fclose(f);
	if (!buf)
		return kb_errf(err, len, -ENOMEM, "%s: out of memory", file);
	buf[n] = '\0';
	char yerr[200] = "";
	json_t *doc = kb_yaml_load(buf, n, yerr, sizeof(yerr));
	free(buf);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return kb_errf(err, len, -EINVAL, "%s: not a YAML mapping %s", file, yerr);
	}
	json_t *p = json_pack("{s:s,s:f,s:{}}", "currency", "USD", "default", 0.0, "models");
	int rc = p ? prices_from(doc, file, p, err, len) : -ENOMEM;
	json_decref(doc);
	if (rc < 0) {
		json_decref(p);
		return rc;
	}
	*out = p;
	return 0;
}

double syncer_price_of(const json_t *prices, const char *model)
{
	json_t *v =
	    model && *model ? json_object_get(json_object_get(prices, "models"), model) : NULL;
	return json_number_value(v ? v : json_object_get(prices, "default"));
}
