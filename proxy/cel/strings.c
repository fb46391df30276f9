/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cel-go's ext strings library at the version kube 1.33 enables (2):
 * charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split,
 * substring, trim, join and strings.quote (format is in format.c). Indexes count code
 * points, not bytes, as cel-go's do; errors use cel-go's words.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/std.h"

/* Byte offset of code point index cp (cp <= code points in s). */
static size_t cp_offset(struct cel_str s, size_t cp)
{
	size_t i = 0;
	for (; i < s.len; i++)
		if (((unsigned char)s.p[i] & 0xc0) != 0x80 && cp-- == 0)
			return i;
	return s.len;
}

static size_t cp_index(struct cel_str s, size_t byte)
{
	struct cel_str pre = {s.p, byte};
	return cel_utf8_len(pre);
}

static cel_value_t out_of_range(cel_ctx_t *c, int64_t i)
{
	return cel_errorf(c, "index out of range: %lld", (long long)i);
}

static bool is_str(const cel_value_t *a, size_t n, size_t k)
{
	return k < n && a[k].kind == CEL_STRING;
}

static bool is_int(const cel_value_t *a, size_t n, size_t k)
{
	return k < n && a[k].kind == CEL_INT;
}

CEL_FN(cel_s_char_at)
{
	if (!is_str(a, n, 0) || !is_int(a, n, 1))
		return cel_no_overload(c, "charAt");
	size_t len = cel_utf8_len(a[0].s);
	if (a[1].i < 0 || (uint64_t)a[1].i > len)
		return out_of_range(c, a[1].i);
	size_t b = cp_offset(a[0].s, (size_t)a[1].i), e = b;
	if (b < a[0].s.len)
		for (e = b + 1; e < a[0].s.len && ((unsigned char)a[0].s.p[e] & 0xc0) == 0x80; e++)
			;
	return cel_string_n(a[0].s.p + b, e - b);
}

CEL_FN(cel_s_index_of)
{
	if (!is_str(a, n, 0) || !is_str(a, n, 1) || n > 3 || (n == 3 && !is_int(a, n, 2)))
		return cel_no_overload(c, "indexOf");
	size_t len = cel_utf8_len(a[0].s);
	int64_t start = n == 3 ? a[2].i : 0;
	if (a[1].s.len == 0)
		return cel_int(start);
	if (start < 0 || (uint64_t)start >= len)
		return out_of_range(c, start);
	size_t off = cp_offset(a[0].s, (size_t)start);
	struct cel_str rest = {a[0].s.p + off, a[0].s.len - off};
	const char *hit = cel_memmem(rest, a[1].s);
	if (!hit)
		return cel_int(-1);
	return cel_int((int64_t)cp_index(a[0].s, (size_t)(hit - a[0].s.p)));
}

/* As cel-go: an offset names the last code point a match may start at. */
CEL_FN(cel_s_last_index_of)
{
	if (!is_str(a, n, 0) || !is_str(a, n, 1) || n > 3 || (n == 3 && !is_int(a, n, 2)))
		return cel_no_overload(c, "lastIndexOf");
	size_t len = cel_utf8_len(a[0].s);
	int64_t last = n == 3 ? a[2].i : (int64_t)len;
	if (a[1].s.len == 0)
		return cel_int(last);
	if (n == 3 && (last < 0 || (uint64_t)last >= len))
		return out_of_range(c, last);
	size_t limit = cp_offset(a[0].s, (size_t)last);
	struct cel_str h = a[0].s, s = a[1].s;
	for (size_t i = limit + 1; i-- > 0;) {
		if (i + s.len > h.len || (i < h.len && ((unsigned char)h.p[i] & 0xc0) == 0x80))
			continue;
		if (!memcmp(h.p + i, s.p, s.len))
			return cel_int((int64_t)cp_index(h, i));
	}
	return cel_int(-1);
}

static cel_value_t ascii_case(cel_ctx_t *c, const cel_value_t *a, size_t n, bool upper)
{
	if (!is_str(a, n, 0))
		return cel_no_overload(c, upper ? "upperAscii" : "lowerAscii");
	char *p = cel_strndup(c, a[0].s.p, a[0].s.len);
	for (size_t i = 0; i < a[0].s.len; i++) {
		if (upper && p[i] >= 'a' && p[i] <= 'z')
			p[i] = (char)(p[i] - 32);
		if (!upper && p[i] >= 'A' && p[i] <= 'Z')
			p[i] = (char)(p[i] + 32);
	}
	return cel_string_n(p, a[0].s.len);
}

CEL_FN(cel_s_lower)
{
	return ascii_case(c, a, n, false);
}

CEL_FN(cel_s_upper)
{
	return ascii_case(c, a, n, true);
}

/* A growable arena buffer. */
struct buf {
	cel_ctx_t *c;
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = cel_alloc(b->c, cap);
		if (b->len)
			memcpy(p, b->p, b->len);
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
}

static size_t rune_len(const char *s, size_t left)
{
	size_t k = 1;
	while (k < left && ((unsigned char)s[k] & 0xc0) == 0x80)
		k++;
	return k;
}

CEL_FN(cel_s_replace)
{
	if (n < 3 || n > 4 || !is_str(a, n, 0) || !is_str(a, n, 1) || !is_str(a, n, 2) ||
	    (n == 4 && !is_int(a, n, 3)))
		return cel_no_overload(c, "replace");
	int64_t limit = n == 4 ? a[3].i : -1;
	struct cel_str s = a[0].s, old = a[1].s, rep = a[2].s;
	struct buf b = {c};
	put(&b, "", 0);
	size_t i = 0;
	while (limit != 0 && i <= s.len) {
		struct cel_str rest = {s.p + i, s.len - i};
		const char *hit = cel_memmem(rest, old);
		if (!hit)
			break;
		size_t at = (size_t)(hit - s.p);
		put(&b, s.p + i, at - i);
		put(&b, rep.p, rep.len);
		if (old.len == 0) {
			if (at >= s.len) {
				i = s.len + 1;
				break;
			}
			size_t k = rune_len(s.p + at, s.len - at);
			put(&b, s.p + at, k);
			i = at + k;
		} else {
			i = at + old.len;
		}
		limit--;
	}
	if (i < s.len)
		put(&b, s.p + i, s.len - i);
	return cel_string_n(b.p, b.len);
}

CEL_FN(cel_s_split)
{
	if (n < 2 || n > 3 || !is_str(a, n, 0) || !is_str(a, n, 1) || (n == 3 && !is_int(a, n, 2)))
		return cel_no_overload(c, "split");
	int64_t limit = n == 3 ? a[2].i : -1;
	struct cel_str s = a[0].s, sep = a[1].s;
	if (limit == 0)
		return cel_list_new(c, NULL, 0);
	size_t cap = s.len + 2, k = 0, i = 0;
	cel_value_t *items = cel_alloc(c, cap * sizeof(*items));
	while (i < s.len || (sep.len && i == s.len)) {
		if (limit > 0 && (int64_t)k == limit - 1)
			break;
		size_t at;
		if (sep.len == 0) {
			at = i + rune_len(s.p + i, s.len - i);
			items[k++] = cel_string_n(s.p + i, at - i);
			i = at;
			continue;
		}
		struct cel_str rest = {s.p + i, s.len - i};
		const char *hit = cel_memmem(rest, sep);
		if (!hit)
			break;
		at = (size_t)(hit - s.p);
		items[k++] = cel_string_n(s.p + i, at - i);
		i = at + sep.len;
	}
	if (sep.len || i < s.len)
		items[k++] = cel_string_n(s.p + i, s.len - i);
	return cel_list_new(c, items, k);
}

CEL_FN(cel_s_substring)
{
	if (n < 2 || n > 3 || !is_str(a, n, 0) || !is_int(a, n, 1) || (n == 3 && !is_int(a, n, 2)))
		return cel_no_overload(c, "substring");
	int64_t len = (int64_t)cel_utf8_len(a[0].s);
	int64_t start = a[1].i, end = n == 3 ? a[2].i : len;
	if (start < 0 || start > len)
		return out_of_range(c, start);
	if (end < 0 || end > len)
		return out_of_range(c, end);
	if (start > end)
		return cel_errorf(c, "invalid substring range. start: %lld, end: %lld",
				  (long long)start, (long long)end);
	size_t b = cp_offset(a[0].s, (size_t)start), e = cp_offset(a[0].s, (size_t)end);
	return cel_string_n(a[0].s.p + b, e - b);
}

/* Length of a Unicode white space character at s, or 0. */
static size_t space_at(const char *s, size_t left)
{
	static const char *const spaces[] = {
	    "\xc2\x85",     "\xc2\xa0",     "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81",
	    "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86",
	    "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8",
	    "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80", NULL};
	if (strchr(" \t\n\v\f\r", s[0]) && s[0])
		return 1;
	for (int k = 0; spaces[k]; k++) {
		size_t l = strlen(spaces[k]);
		if (l <= left && !memcmp(s, spaces[k], l))
			return l;
	}
	return 0;
}

CEL_FN(cel_s_trim)
{
	if (!is_str(a, n, 0))
		return cel_no_overload(c, "trim");
	struct cel_str s = a[0].s;
	size_t b = 0, e = s.len, k;
	while (b < e && (k = space_at(s.p + b, e - b)) > 0)
		b += k;
	for (bool more = true; more && e > b;) {
		more = false;
		size_t r = e - 1;
		while (r > b && ((unsigned char)s.p[r] & 0xc0) == 0x80)
			r--;
		if (space_at(s.p + r, e - r) == e - r) {
			e = r;
			more = true;
		}
	}
	return cel_string_n(s.p + b, e - b);
}

CEL_FN(cel_s_join)
{
	if (n < 1 || n > 2 || a[0].kind != CEL_LIST || (n == 2 && !is_str(a, n, 1)))
		return cel_no_overload(c, "join");
	struct buf b = {c};
	put(&b, "", 0);
	size_t size = cel_list_size(a[0].l);
	for (size_t i = 0; i < size; i++) {
		cel_value_t v = cel_list_at(c, a[0].l, i);
		if (v.kind != CEL_STRING)
			return cel_no_overload(c, "join");
		if (i && n == 2)
			put(&b, a[1].s.p, a[1].s.len);
		put(&b, v.s.p, v.s.len);
	}
	return cel_string_n(b.p, b.len);
}

CEL_FN(cel_s_quote)
{
	if (!is_str(a, n, 0))
		return cel_no_overload(c, "strings.quote");
	struct buf b = {c};
	put(&b, "\"", 1);
	struct cel_str s = a[0].s;
	for (size_t i = 0; i < s.len;) {
		const char *esc = NULL;
		switch (s.p[i]) {
		case '\a': esc = "\\a"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\v': esc = "\\v"; break;
		case '\\': esc = "\\\\"; break;
		case '"': esc = "\\\""; break;
		default: break;
		}
		size_t k = rune_len(s.p + i, s.len - i);
		if (esc)
			put(&b, esc, 2);
		else if (!cel_utf8_valid(s.p + i, k))
			put(&b, "\xef\xbf\xbd", 3);
		else
			put(&b, s.p + i, k);
		i += k;
	}
	put(&b, "\"", 1);
	return cel_string_n(b.p, b.len);
}
