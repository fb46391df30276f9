/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Label and field selectors with kube-apiserver's syntax, validation, error
 * texts and matching rules:
 *
 *   label:  a=b  a==b  a!=b  a in (x,y)  a notin (x)  a  !a  a>1  a<1
 *           (comma separated, whitespace tolerant, empty values allowed)
 *   field:  f=v  f==v  f!=v  (comma separated, '\,' '\=' '\\' escapes)
 *
 * Parsed selectors are immutable values owned by the caller; matching reads
 * borrowed JSON and never keeps a reference.
 *
 * Threading: any thread (no global mutable state).
 */
#ifndef KB_PROXY_SELECTOR_H
#define KB_PROXY_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "proxy/model/resource.h"

/* ---- label selectors ------------------------------------------------------ */

struct sel_label; /* opaque */

/*
 * Parses a ?labelSelector= string. On success *out is a new selector owned by
 * the caller (free with sel_label_free); an empty or all-blank string gives a
 * selector that matches everything. On a syntax or validation error returns
 * -EINVAL and writes kube's message into err (e.g. "unable to parse
 * requirement: found '', expected: identifier", "found ')', expected: ',' or
 * 'end of string'"); -ENOMEM on allocation failure. `err` may be NULL.
 */
int sel_label_parse(const char *s, struct sel_label **out, char *err, size_t errlen);

/*
 * Builds a selector from a metav1.LabelSelector object (borrowed):
 * matchLabels plus matchExpressions with In/NotIn/Exists/DoesNotExist.
 * An empty object ({}) matches everything; a NULL pointer or JSON null gives
 * a selector that matches NOTHING (kube's LabelSelectorAsSelector). Errors:
 * -EINVAL with a kube-like message in err ("\"Foo\" is not a valid label
 * selector operator", invalid keys/values), -ENOMEM.
 */
int sel_label_from_object(const json_t *ls, struct sel_label **out, char *err, size_t errlen);

/*
 * True when `labels` (borrowed; a JSON object of string values, or NULL for
 * "no labels") satisfies every requirement. A NULL selector pointer means "no
 * selector was given" and matches everything.
 */
bool sel_label_match(const struct sel_label *s, const json_t *labels);

/* True when the selector has no requirements and is not the "nothing"
 * selector (i.e. it matches everything). NULL: true. */
bool sel_label_empty(const struct sel_label *s);

/*
 * Canonical text as kube prints it (requirements sorted by key, values
 * sorted): "app=web,tier in (a,b),!x". Returns a malloc'ed string owned by
 * the caller ("" for match-everything and for match-nothing), NULL on ENOMEM.
 */
char *sel_label_string(const struct sel_label *s);

/* Frees a selector; NULL is fine. */
void sel_label_free(struct sel_label *s);

/* ---- field selectors ------------------------------------------------------ */

struct sel_field; /* opaque */

/*
 * Parses a ?fieldSelector= string for resource `r` (borrowed, may be NULL:
 * then only metadata.name and metadata.namespace are accepted). Supported
 * fields: metadata.name, metadata.namespace and r->field_selectors. Errors:
 * -EINVAL with kube's text in err: "field label not supported: <name>",
 * "invalid selector: '<sel>'; can't understand '<term>'", "invalid field
 * selector: invalid escape sequence: <seq>", "invalid field selector:
 * unescaped character in value: <ch>"; -ENOMEM. *out is owned by the caller.
 * An empty string gives a selector that matches everything.
 */
int sel_field_parse(const char *s, const struct proxy_resource *r, struct sel_field **out,
		    char *err, size_t errlen);

/*
 * True when `obj` (borrowed) satisfies every term. Values are read by dotted
 * path (missing → "" or the kind's default, e.g. "false" for a node's
 * spec.unschedulable; numbers and booleans rendered as strings). A few kube
 * labels are aliases (core Event "source" → source.component, Job
 * "status.successful" → status.succeeded); they are resolved at parse time.
 * NULL selector: matches everything.
 */
bool sel_field_match(const struct sel_field *f, const json_t *obj);

/*
 * The value a term "<field>=<v>" or "<field>==<v>" requires, or NULL when the
 * selector has no such equality term (lets the store narrow a scan, e.g. on
 * metadata.name). The returned string is borrowed from the selector.
 */
const char *sel_field_exact(const struct sel_field *f, const char *field);

/* Frees a selector; NULL is fine. */
void sel_field_free(struct sel_field *f);

#endif
