/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Generic CEL libraries beyond the standard definitions: kube's lists
 * (isSorted, sum, min, max, indexOf, lastIndexOf) and regex (find, findAll)
 * libraries, cel-go's ext sets and encoders, and the optional types'
 * functions (optional.of, optional.none, optional.ofNonZeroValue,
 * hasValue, value, or, orValue).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/std.h"

/* ---- lists ---- */

CEL_FN(cel_l_is_sorted)
{
	(void)n;
	if (a[0].kind != CEL_LIST)
		return cel_no_overload(c, "isSorted");
	size_t size = cel_list_size(a[0].l);
	for (size_t i = 1; i < size; i++) {
		int cmp;
		cel_value_t x = cel_list_at(c, a[0].l, i - 1), y = cel_list_at(c, a[0].l, i);
		if (cel_compare(x, y, &cmp) < 0)
			return cel_no_overload(c, "isSorted");
		if (cmp > 0)
			return cel_bool(false);
	}
	return cel_bool(true);
}

static cel_value_t add(cel_ctx_t *c, cel_value_t x, cel_value_t y)
{
	if (x.kind == CEL_INT && y.kind == CEL_INT) {
		int64_t r;
		if (__builtin_add_overflow(x.i, y.i, &r))
			return cel_errorf(c, "integer overflow");
		return cel_int(r);
	}
	if (x.kind == CEL_UINT && y.kind == CEL_UINT) {
		uint64_t r;
		if (__builtin_add_overflow(x.u, y.u, &r))
			return cel_errorf(c, "unsigned integer overflow");
		return cel_uint(r);
	}
	if (x.kind == CEL_DOUBLE && y.kind == CEL_DOUBLE)
		return cel_double(x.d + y.d);
	if (x.kind == CEL_DURATION && y.kind == CEL_DURATION) {
		int64_t r;
		if (__builtin_add_overflow(x.i, y.i, &r))
			return cel_errorf(c, "duration overflow");
		return (cel_value_t){.kind = CEL_DURATION, .i = r};
	}
	return cel_no_overload(c, "sum");
}

CEL_FN(cel_l_sum)
{
	(void)n;
	if (a[0].kind != CEL_LIST)
		return cel_no_overload(c, "sum");
	size_t size = cel_list_size(a[0].l);
	if (size == 0)
		return cel_int(0);
	cel_value_t acc = cel_list_at(c, a[0].l, 0);
	if (acc.kind != CEL_INT && acc.kind != CEL_UINT && acc.kind != CEL_DOUBLE &&
	    acc.kind != CEL_DURATION)
		return cel_no_overload(c, "sum");
	for (size_t i = 1; i < size && !cel_is_error(acc); i++)
		acc = add(c, acc, cel_list_at(c, a[0].l, i));
	return acc;
}

static cel_value_t extreme(cel_ctx_t *c, const cel_value_t *a, bool max)
{
	const char *name = max ? "max" : "min";
	if (a[0].kind != CEL_LIST)
		return cel_no_overload(c, name);
	size_t size = cel_list_size(a[0].l);
	if (size == 0)
		return cel_errorf(c, "%s called on empty list", name);
	cel_value_t best = cel_list_at(c, a[0].l, 0);
	for (size_t i = 1; i < size; i++) {
		cel_value_t v = cel_list_at(c, a[0].l, i);
		int cmp;
		if (cel_compare(v, best, &cmp) < 0)
			return cel_no_overload(c, name);
		if ((max && cmp > 0) || (!max && cmp < 0))
			best = v;
	}
	if (size == 1 && cel_compare(best, best, &(int){0}) < 0)
		return cel_no_overload(c, name);
	return best;
}

CEL_FN(cel_l_min)
{
	(void)n;
	return extreme(c, a, false);
}

CEL_FN(cel_l_max)
{
	(void)n;
	return extreme(c, a, true);
}

static cel_value_t list_index(cel_ctx_t *c, const cel_value_t *a, bool last)
{
	if (a[0].kind != CEL_LIST)
		return cel_no_overload(c, last ? "lastIndexOf" : "indexOf");
	size_t size = cel_list_size(a[0].l);
	for (size_t k = 0; k < size; k++) {
		size_t i = last ? size - 1 - k : k;
		if (cel_values_equal(c, cel_list_at(c, a[0].l, i), a[1]))
			return cel_int((int64_t)i);
	}
	return cel_int(-1);
}

CEL_FN(cel_l_index_of)
{
	(void)n;
	return list_index(c, a, false);
}

CEL_FN(cel_l_last_index_of)
{
	(void)n;
	return list_index(c, a, true);
}

/* ---- regex ---- */

CEL_FN(cel_r_find)
{
	(void)n;
	if (a[0].kind != CEL_STRING || a[1].kind != CEL_STRING)
		return cel_no_overload(c, "find");
	cel_value_t err;
	const struct cel_re *re = cel_regex(c, a[1].s, &err);
	if (!re)
		return cel_errorf(c, "Illegal regex: %.*s", (int)err.s.len, err.s.p);
	size_t so, eo;
	int rc = cel_regex_find(c, re, a[0].s, 0, &so, &eo, &err);
	if (rc < 0)
		return err;
	return rc ? cel_string_n(a[0].s.p + so, eo - so) : cel_string("");
}

CEL_FN(cel_r_find_all)
{
	if (n < 2 || n > 3 || a[0].kind != CEL_STRING || a[1].kind != CEL_STRING ||
	    (n == 3 && a[2].kind != CEL_INT))
		return cel_no_overload(c, "findAll");
	int64_t limit = n == 3 ? a[2].i : -1;
	cel_value_t err;
	const struct cel_re *re = cel_regex(c, a[1].s, &err);
	if (!re)
		return cel_errorf(c, "Illegal regex: %.*s", (int)err.s.len, err.s.p);
	struct cel_str s = a[0].s;
	cel_value_t *items = cel_alloc(c, (s.len + 2) * sizeof(*items));
	size_t k = 0, at = 0, so, eo;
	bool prev_empty_end = false;
	size_t prev_end = (size_t)-1;
	while (limit < 0 || (int64_t)k < limit) {
		if (at > s.len)
			break;
		int rc = cel_regex_find(c, re, s, at, &so, &eo, &err);
		if (rc < 0)
			return err;
		if (rc == 0)
			break;
		/* as Go: an empty match right after the previous match is skipped */
		if (eo == so && so == prev_end && !prev_empty_end) {
			at = so + 1;
			while (at < s.len && ((unsigned char)s.p[at] & 0xc0) == 0x80)
				at++;
			prev_empty_end = true;
			continue;
		}
		items[k++] = cel_string_n(s.p + so, eo - so);
		prev_end = eo;
		prev_empty_end = false;
		if (eo == so) {
			at = eo + 1;
			while (at < s.len && ((unsigned char)s.p[at] & 0xc0) == 0x80)
				at++;
		} else {
			at = eo;
		}
	}
	return cel_list_new(c, items, k);
}

/* ---- sets ---- */

static bool list_has(cel_ctx_t *c, const struct cel_list *l, cel_value_t v)
{
	for (size_t i = 0; i < cel_list_size(l); i++)
		if (cel_values_equal(c, cel_list_at(c, l, i), v))
			return true;
	return false;
}

/* Every item of b is in a. */
static bool contains_all(cel_ctx_t *c, const struct cel_list *a, const struct cel_list *b)
{
	for (size_t i = 0; i < cel_list_size(b); i++)
		if (!list_has(c, a, cel_list_at(c, b, i)))
			return false;
	return true;
}

static bool two_lists(const cel_value_t *a)
{
	return a[0].kind == CEL_LIST && a[1].kind == CEL_LIST;
}

CEL_FN(cel_set_contains)
{
	(void)n;
	if (!two_lists(a))
		return cel_no_overload(c, "sets.contains");
	return cel_bool(contains_all(c, a[0].l, a[1].l));
}

CEL_FN(cel_set_equivalent)
{
	(void)n;
	if (!two_lists(a))
		return cel_no_overload(c, "sets.equivalent");
	return cel_bool(contains_all(c, a[0].l, a[1].l) && contains_all(c, a[1].l, a[0].l));
}

CEL_FN(cel_set_intersects)
{
	(void)n;
	if (!two_lists(a))
		return cel_no_overload(c, "sets.intersects");
	for (size_t i = 0; i < cel_list_size(a[1].l); i++)
		if (list_has(c, a[0].l, cel_list_at(c, a[1].l, i)))
			return cel_bool(true);
	return cel_bool(false);
}

/* ---- encoders ---- */

CEL_FN(cel_b64_encode)
{
	(void)n;
	if (a[0].kind != CEL_BYTES)
		return cel_no_overload(c, "base64.encode");
	char *out = cel_alloc(c, a[0].s.len / 3 * 4 + 8);
	return cel_string_n(out, cel_base64_encode(a[0].s.p, a[0].s.len, out));
}

CEL_FN(cel_b64_decode)
{
	(void)n;
	if (a[0].kind != CEL_STRING)
		return cel_no_overload(c, "base64.decode");
	char *out = cel_alloc(c, a[0].s.len + 1);
	long len = cel_base64_decode(a[0].s.p, a[0].s.len, out);
	if (len < 0)
		return cel_errorf(c, "illegal base64 data at input byte %ld", -1 - len);
	return cel_bytes(out, (size_t)len);
}

/* ---- optional types ---- */

CEL_FN(cel_opt_of)
{
	(void)n;
	return cel_optional(c, &a[0]);
}

CEL_FN(cel_opt_none)
{
	(void)a;
	(void)n;
	return cel_optional(c, NULL);
}

static bool is_zero(cel_value_t v)
{
	switch (v.kind) {
	case CEL_NULL: return true;
	case CEL_BOOL: return !v.b;
	case CEL_INT:
	case CEL_DURATION:
	case CEL_TIMESTAMP: return v.i == 0;
	case CEL_UINT: return v.u == 0;
	case CEL_DOUBLE: return v.d == 0;
	case CEL_STRING:
	case CEL_BYTES: return v.s.len == 0;
	case CEL_LIST: return cel_list_size(v.l) == 0;
	case CEL_MAP: return cel_map_size(v.m) == 0;
	case CEL_OPTIONAL: return !v.opt;
	default: return false;
	}
}

CEL_FN(cel_opt_of_non_zero)
{
	(void)n;
	return cel_optional(c, is_zero(a[0]) ? NULL : &a[0]);
}

CEL_FN(cel_opt_has_value)
{
	(void)n;
	if (a[0].kind != CEL_OPTIONAL)
		return cel_no_overload(c, "hasValue");
	return cel_bool(a[0].opt != NULL);
}

CEL_FN(cel_opt_value)
{
	(void)n;
	if (a[0].kind != CEL_OPTIONAL)
		return cel_no_overload(c, "value");
	if (!a[0].opt)
		return cel_errorf(c, "optional.none() dereference");
	return *a[0].opt;
}

CEL_FN(cel_opt_or)
{
	(void)n;
	if (a[0].kind != CEL_OPTIONAL || a[1].kind != CEL_OPTIONAL)
		return cel_no_overload(c, "or");
	return a[0].opt ? a[0] : a[1];
}

CEL_FN(cel_opt_or_value)
{
	(void)n;
	if (a[0].kind != CEL_OPTIONAL)
		return cel_no_overload(c, "orValue");
	return a[0].opt ? *a[0].opt : a[1];
}

/* ---- optional types, version 2: first, last, unwrap ---- */

static cel_value_t list_end(cel_ctx_t *c, const cel_value_t *a, bool last)
{
	if (a[0].kind != CEL_LIST)
		return cel_no_overload(c, last ? "last" : "first");
	size_t size = cel_list_size(a[0].l);
	if (size == 0)
		return cel_optional(c, NULL);
	cel_value_t v = cel_list_at(c, a[0].l, last ? size - 1 : 0);
	return cel_optional(c, &v);
}

CEL_FN(cel_opt_first)
{
	(void)n;
	return list_end(c, a, false);
}

CEL_FN(cel_opt_last)
{
	(void)n;
	return list_end(c, a, true);
}

CEL_FN(cel_opt_unwrap)
{
	(void)n;
	if (a[0].kind != CEL_LIST)
		return cel_no_overload(c, "optional.unwrap");
	size_t size = cel_list_size(a[0].l), k = 0;
	cel_value_t *items = cel_alloc(c, (size + 1) * sizeof(*items));
	for (size_t i = 0; i < size; i++) {
		cel_value_t v = cel_list_at(c, a[0].l, i);
		if (v.kind != CEL_OPTIONAL)
			return cel_no_overload(c, "optional.unwrap");
		if (v.opt)
			items[k++] = *v.opt;
	}
	return cel_list_new(c, items, k);
}
