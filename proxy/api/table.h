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

/* One row of a Table: the object's cells and, as includeObject asks, the
 * object or its metadata (obj borrowed). New reference. */
json_t *table_row(struct req *r, const json_t *obj);

/* The start of a Table's text, for rows streamed after it: the Table
 * table_build gives for no items up to and including "rows":[ (the caller
 * appends rows separated by commas, then "]}"). Appended to b: 0 or a
 * negative errno. */
struct kb_buf;
int table_text_head(struct req *r, const char *rv, const char *cont, struct kb_buf *b);

/* The Table of a /scale answer (scale borrowed). New reference. */
json_t *table_build_scale(struct req *r, const json_t *scale);

#endif
