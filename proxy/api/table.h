/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Table output (proxy/api/table.c), with the model's printers.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_TABLE_H
#define KB_PROXY_API_TABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct req;

/* table.c */
json_t *table_build(struct req *r, json_t *items /* borrowed array */, const char *rv,
		    const char *cont, bool headers);

/* The Table of a /scale answer (scale borrowed). New reference. */
json_t *table_build_scale(struct req *r, const json_t *scale);

#endif
