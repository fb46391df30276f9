/* SPDX-License-Identifier: Apache-2.0 */
/* JSON helpers: see json.h. */
#include "lib/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "lib/util.h"

bool kb_json_same(const json_t *a, const json_t *b)
{
	return (!a && !b) || json_equal((json_t *)a, (json_t *)b);
}

json_t *kb_json_path(const json_t *obj, const char *path)
{
	const json_t *cur = obj;
	while (cur && *path) {
		size_t n = 0;
		while (path[n] && path[n] != '.')
			n++;
		if (n >= 128) /* as long a part as a key ever was */
			return NULL;
		cur = json_object_getn(cur, path, n);
		path += n + (path[n] ? 1 : 0);
	}
	return (json_t *)cur;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **kb_json_sorted_keys(const json_t *obj, size_t *n)
{
	size_t cnt = json_object_size(obj), i = 0;
	const char **keys = calloc(cnt ? cnt : 1, sizeof(*keys));
	const char *k;
	json_t *v;
	if (!keys)
		return NULL;
	json_object_foreach ((json_t *)obj, k, v)
		keys[i++] = k;
	qsort(keys, i, sizeof(*keys), cmp_key);
	*n = i;
	return keys;
}

json_t *kb_json_object_at(json_t *parent, const char *key)
{
	json_t *o = json_object_get(parent, key);
	if (!json_is_object(o)) {
		o = json_object();
		json_object_set_new(parent, key, o);
	}
	return o;
}

/* ---- compact serialization ------------------------------------------ */

/* kb_buf_reserve with its common case inline */
static inline int dump_reserve(struct kb_buf *b, size_t n)
{
	return b->data && b->len + n + 1 <= b->cap ? 0 : kb_buf_reserve(b, n);
}

/* One byte of punctuation: inline, no memcpy call (a create's object has
 * some 300 of them). */
static inline int dump_char(struct kb_buf *b, char c)
{
	if (dump_reserve(b, 1))
		return -ENOMEM;
	b->data[b->len++] = c;
	return 0;
}

static int dump_bytes(struct kb_buf *b, const char *s, size_t n)
{
	if (dump_reserve(b, n))
		return -ENOMEM;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (lead byte >= 0x80), 0 when it is
 * not one: overlong forms, surrogates and code points past U+10FFFF are
 * refused, as jansson's checks do. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	size_t n;
	uint32_t cp;

	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		n = 2;
		cp = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		n = 3;
		cp = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n > avail)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* Bytes written as they are in a JSON string: printable ASCII but '"' and
 * '\\' (32 byte values a row). */
static const unsigned char json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* A JSON string: '"', '\\' and control characters escaped (\uXXXX with
 * upper-case hex for those without a short form), everything else as is.
 * Invalid UTF-8 is refused, or with `lossy` written as U+FFFD per bad byte
 * (as Go's encoding/json coerces it). */
static inline int dump_string_pfx(struct kb_buf *b, const char *pfx, size_t pfxlen, const char *str,
				  size_t len, bool lossy)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *)str;
	size_t start = b->len, i = 0;

	/* at most 6 output bytes per input byte */
	if (dump_reserve(b, len * 6 + 2 + pfxlen))
		return -ENOMEM;
	char *o = b->data + b->len;
	*o++ = '"';
	for (size_t k = 0; k < pfxlen; k++)
		*o++ = pfx[k];
	while (i < len) {
		size_t j = i;
		while (j < len && json_plain[s[j]])
			j++;
		memcpy(o, s + i, j - i);
		o += j - i;
		i = j;
		if (i == len)
			break;
		unsigned char c = s[i];
		if (c >= 0x80) {
			size_t n = utf8_seq(s + i, len - i);
			if (!n && lossy) {
				memcpy(o, "\\ufffd", 6);
				o += 6;
				i++;
				continue;
			}
			if (!n) {
				b->len = start;
				return -EINVAL;
			}
			memcpy(o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		*o++ = '\\';
		switch (c) {
		case '"':
		case '\\': *o++ = (char)c; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		default:
			memcpy(o, "u00", 3);
			o[3] = hex[c >> 4];
			o[4] = hex[c & 15];
			o += 5;
		}
		i++;
	}
	*o++ = '"';
	b->len = (size_t)(o - b->data);
	return 0;
}

static int dump_string_as(struct kb_buf *b, const char *str, size_t len, bool lossy)
{
	return dump_string_pfx(b, NULL, 0, str, len, lossy);
}

static int dump_string(struct kb_buf *b, const char *str, size_t len)
{
	return dump_string_as(b, str, len, false);
}

/* A key with '"' or '\\' (a fieldsV1 list item's, "k:{\"name\":...}"):
 * those escaped in the byte loop; control bytes and UTF-8 by the general
 * writer. */
__attribute__((noinline)) static int put_key_escaped(struct kb_buf *b, const char *pfx,
						     size_t pfxlen, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	/* room for every byte escaped as \" or \\ */
	if (dump_reserve(b, 2 * len + pfxlen + 2))
		return -ENOMEM;
	char *o = b->data + b->len;
	*o++ = '"';
	for (size_t k = 0; k < pfxlen; k++)
		*o++ = pfx[k];
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (!json_plain[c]) {
			if (c != '"' && c != '\\')
				return dump_string_pfx(b, pfx, pfxlen, str, len, false);
			*o++ = '\\';
		}
		*o++ = (char)c;
	}
	*o++ = '"';
	b->len = (size_t)(o - b->data);
	return 0;
}

/* Keys are short and plain nearly always: copied a byte at a time while
 * plain (a run's memcpy costs more than such a key), put_key_escaped from
 * the first byte that is not. */
int kb_json_put_key(struct kb_buf *b, const char *pfx, size_t pfxlen, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	if (dump_reserve(b, len + pfxlen + 2))
		return -ENOMEM;
	char *o = b->data + b->len;
	*o++ = '"';
	for (size_t k = 0; k < pfxlen; k++)
		*o++ = pfx[k];
	for (size_t i = 0; i < len; i++) {
		if (!json_plain[s[i]])
			return put_key_escaped(b, pfx, pfxlen, str, len);
		*o++ = (char)s[i];
	}
	*o++ = '"';
	b->len = (size_t)(o - b->data);
	return 0;
}

/*
 * Raw values. The mark is this process's own json_t: a null that is not
 * jansson's (json_null() is a static singleton, and every parser of this
 * project and jansson's own give only that one), so nothing decoded from
 * input can be it, whatever its content. Its refcount is jansson's
 * "never counted" (-1): increfs, decrefs and json_deep_copy (which returns
 * a null as it is) leave it shared and alive.
 */
static json_t raw_mark = {JSON_NULL, (size_t)-1};

json_t *kb_json_raw(const char *text, size_t len)
{
	json_t *a = json_array();

	/* append_new takes the string, or frees it when it fails */
	if (!a || json_array_append_new(a, json_stringn_nocheck(text, len)) ||
	    json_array_append(a, &raw_mark)) {
		json_decref(a);
		return NULL;
	}
	return a;
}

const char *kb_json_raw_text(const json_t *v, size_t *len)
{
	const json_t *s;

	if (!json_is_array(v) || json_array_size(v) != 2 || json_array_get(v, 1) != &raw_mark)
		return NULL;
	s = json_array_get(v, 0);
	*len = json_string_length(s);
	return json_string_value(s);
}

int kb_json_put_string(struct kb_buf *b, const char *str)
{
	return dump_string_as(b, str ? str : "", str ? strlen(str) : 0, true);
}

static int dump_integer(struct kb_buf *b, json_int_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	/* magnitude as unsigned: INT64_MIN has no positive counterpart */
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return dump_bytes(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* Reals are rare in API objects: jansson writes them (its precision and
 * exponent rules). */
static int dump_real(struct kb_buf *b, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	int r = s ? dump_bytes(b, s, strlen(s)) : -ENOMEM;
	free(s);
	return r;
}

static int dump_value(struct kb_buf *b, const json_t *v);

static int dump_object(struct kb_buf *b, const json_t *v)
{
	bool first = true;
	int r = dump_char(b, '{');

	for (void *it = json_object_iter((json_t *)v); it && !r;
	     it = json_object_iter_next((json_t *)v, it)) {
		if (!first)
			r = dump_char(b, ',');
		first = false;
		/* keys are short: kb_json_put_key's byte loop */
		if (!r)
			r = kb_json_put_key(b, NULL, 0, json_object_iter_key(it),
					    json_object_iter_key_len(it));
		if (!r)
			r = dump_char(b, ':');
		if (!r)
			r = dump_value(b, json_object_iter_value(it));
	}
	return r ? r : dump_char(b, '}');
}

static int dump_array(struct kb_buf *b, const json_t *v)
{
	size_t n = json_array_size(v), len;
	const char *raw = kb_json_raw_text(v, &len);

	if (raw) /* a raw value (kb_json_raw): its text as it is */
		return dump_bytes(b, raw, len);

	int r = dump_char(b, '[');

	for (size_t i = 0; i < n && !r; i++) {
		if (i)
			r = dump_char(b, ',');
		if (!r)
			r = dump_value(b, json_array_get(v, i));
	}
	return r ? r : dump_char(b, ']');
}

static int dump_value(struct kb_buf *b, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return dump_object(b, v);
	case JSON_ARRAY: return dump_array(b, v);
	case JSON_STRING: return dump_string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER: return dump_integer(b, json_integer_value(v));
	case JSON_REAL: return dump_real(b, v);
	case JSON_TRUE: return dump_bytes(b, "true", 4);
	case JSON_FALSE: return dump_bytes(b, "false", 5);
	case JSON_NULL: return dump_bytes(b, "null", 4);
	}
	return -EINVAL;
}

int kb_json_dump(const json_t *v, struct kb_buf *buf)
{
	size_t start = buf->len;
	int r = v ? dump_value(buf, v) : -EINVAL;

	if (r)
		buf->len = start;
	if (buf->data)
		buf->data[buf->len] = '\0';
	return r;
}

/* ---- deep copy -------------------------------------------------------- */

static json_t *copy_object(const json_t *v)
{
	json_t *c = json_object();

	for (void *it = json_object_iter((json_t *)v); c && it;
	     it = json_object_iter_next((json_t *)v, it)) {
		json_t *e = kb_json_copy(json_object_iter_value(it));
		if (!e || json_object_setn_new_nocheck(c, json_object_iter_key(it),
						       json_object_iter_key_len(it), e)) {
			json_decref(c);
			return NULL;
		}
	}
	return c;
}

static json_t *copy_array(const json_t *v)
{
	size_t n = json_array_size(v);
	json_t *c = json_array();

	for (size_t i = 0; c && i < n; i++) {
		if (json_array_append_new(c, kb_json_copy(json_array_get(v, i)))) {
			json_decref(c);
			return NULL;
		}
	}
	return c;
}

/* ---- a member's span in JSON text ------------------------------------- */

struct tscan {
	const char *s;
	size_t n, i;
};

static void tscan_ws(struct tscan *c)
{
	while (c->i < c->n && strchr(" \t\r\n", c->s[c->i]))
		c->i++;
}

/* At a '"': moves past the string. False when it does not end. memchr
 * finds each candidate quote (a byte loop was a tenth of a syncer's host
 * event); one preceded by an odd run of backslashes is escaped. */
static bool tscan_string(struct tscan *c)
{
	size_t from = c->i + 1;
	for (;;) {
		const char *q = from < c->n ? memchr(c->s + from, '"', c->n - from) : NULL;
		if (!q)
			return false;
		size_t at = (size_t)(q - c->s), bs = 0;
		while (at - bs > c->i + 1 && c->s[at - bs - 1] == '\\')
			bs++;
		if (bs % 2 == 0) {
			c->i = at + 1;
			return true;
		}
		from = at + 1;
	}
}

/* Moves past one value (string, object, array or scalar). */
static bool tscan_value(struct tscan *c)
{
	tscan_ws(c);
	if (c->i >= c->n)
		return false;
	if (c->s[c->i] == '"')
		return tscan_string(c);
	int depth = 0;
	for (; c->i < c->n; c->i++) {
		char ch = c->s[c->i];
		if (ch == '"') {
			if (!tscan_string(c))
				return false;
			c->i--;
		} else if (ch == '{' || ch == '[') {
			depth++;
		} else if (ch == '}' || ch == ']') {
			if (depth == 0)
				return true; /* end of the enclosing container: a scalar ended */
			if (--depth == 0) {
				c->i++;
				return true;
			}
		} else if (depth == 0 && ch == ',') {
			return true;
		}
	}
	return depth == 0;
}

bool kb_json_text_member(const char *t, size_t n, size_t at, const char *key, size_t *key_at,
			 size_t *val, size_t *val_end)
{
	struct tscan c = {t, n, at};
	size_t kl = strlen(key);
	tscan_ws(&c);
	if (c.i >= n || t[c.i] != '{')
		return false;
	c.i++;
	for (;;) {
		tscan_ws(&c);
		if (c.i >= n || t[c.i] != '"')
			return false;
		size_t k = c.i;
		if (!tscan_string(&c))
			return false;
		bool match = c.i - k == kl + 2 && memcmp(t + k + 1, key, kl) == 0;
		tscan_ws(&c);
		if (c.i >= n || t[c.i] != ':')
			return false;
		c.i++;
		tscan_ws(&c);
		size_t v = c.i;
		if (match && !val_end) {
			if (key_at)
				*key_at = k;
			*val = v;
			return true;
		}
		if (!tscan_value(&c))
			return false;
		if (match) {
			if (key_at)
				*key_at = k;
			*val = v;
			*val_end = c.i;
			return true;
		}
		tscan_ws(&c);
		if (c.i >= n || t[c.i] != ',')
			return false;
		c.i++;
	}
}

json_t *kb_json_copy(const json_t *v)
{
	if (!v)
		return NULL;
	switch (json_typeof(v)) {
	case JSON_OBJECT: return copy_object(v);
	case JSON_ARRAY: return copy_array(v);
	case JSON_STRING: return json_stringn_nocheck(json_string_value(v), json_string_length(v));
	case JSON_INTEGER: return json_integer(json_integer_value(v));
	case JSON_REAL: return json_real(json_real_value(v));
	default: return json_incref((json_t *)v);
	}
}

/* ---- parsing ---------------------------------------------------------- */

#define LOAD_MAX_DEPTH 512

struct loader {
	const unsigned char *p, *end;
	size_t flags;
	struct kb_buf sbuf; /* unescaped string scratch */
};

static void load_ws(struct loader *l)
{
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\n' || *l->p == '\r' || *l->p == '\t'))
		l->p++;
}

static int hex4(const unsigned char *s, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		int d = kb_hexval(s[i]);
		if (d < 0)
			return -1;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return 0;
}

/* One \uXXXX escape (with its low surrogate) at l->p (after the 'u') as
 * UTF-8 into o; bytes written, 0 to give up. */
static size_t load_uescape(struct loader *l, char *o)
{
	uint32_t cp, lo;

	if (l->end - l->p < 4 || hex4(l->p, &cp))
		return 0;
	l->p += 4;
	if (cp >= 0xDC00 && cp <= 0xDFFF)
		return 0;
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (l->end - l->p < 6 || l->p[0] != '\\' || l->p[1] != 'u' || hex4(l->p + 2, &lo) ||
		    lo < 0xDC00 || lo > 0xDFFF)
			return 0;
		l->p += 6;
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
	}
	if (cp == 0)
		return 0;
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* A string at l->p (after the opening quote): its text in *s and *n (in the
 * input when it has no escapes, else into l->sbuf). -1 to give up. */
static int load_string(struct loader *l, const char **s, size_t *n)
{
	const unsigned char *start = l->p;

	while (l->p < l->end) {
		while (l->p < l->end && json_plain[*l->p]) /* plain ASCII: most of a body */
			l->p++;
		if (l->p >= l->end)
			break;
		unsigned char c = *l->p;
		if (c == '"') {
			*s = (const char *)start;
			*n = (size_t)(l->p - start);
			l->p++;
			return 0;
		}
		if (c == '\\')
			break;
		if (c < 0x20)
			return -1;
		if (c < 0x80) {
			l->p++;
			continue;
		}
		size_t k = utf8_seq(l->p, (size_t)(l->end - l->p));
		if (!k)
			return -1;
		l->p += k;
	}
	if (l->p >= l->end)
		return -1;
	/* escapes: copy what was scanned, then decode into the scratch */
	l->sbuf.len = 0;
	if (dump_bytes(&l->sbuf, (const char *)start, (size_t)(l->p - start)))
		return -1;
	while (l->p < l->end) {
		unsigned char c = *l->p;
		if (c == '"') {
			l->p++;
			*s = l->sbuf.data;
			*n = l->sbuf.len;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c >= 0x80) {
			size_t k = utf8_seq(l->p, (size_t)(l->end - l->p));
			if (!k || dump_bytes(&l->sbuf, (const char *)l->p, k))
				return -1;
			l->p += k;
			continue;
		}
		if (c != '\\') {
			if (dump_bytes(&l->sbuf, (const char *)l->p, 1))
				return -1;
			l->p++;
			continue;
		}
		if (++l->p >= l->end)
			return -1;
		char e = (char)*l->p++, o[4];
		size_t k = 1;
		switch (e) {
		case '"':
		case '\\':
		case '/': o[0] = e; break;
		case 'b': o[0] = '\b'; break;
		case 'f': o[0] = '\f'; break;
		case 'n': o[0] = '\n'; break;
		case 'r': o[0] = '\r'; break;
		case 't': o[0] = '\t'; break;
		case 'u': k = load_uescape(l, o); break;
		default: return -1;
		}
		if (!k || dump_bytes(&l->sbuf, o, k))
			return -1;
	}
	return -1;
}

static bool load_delim(const struct loader *l)
{
	if (l->p >= l->end)
		return true;
	unsigned char c = *l->p;
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* An integer of at most 18 digits (no fraction, no exponent); NULL to give
 * up (reals and longer numbers are jansson's). */
static json_t *load_number(struct loader *l)
{
	bool neg = false;
	json_int_t v = 0;
	const unsigned char *d;

	if (*l->p == '-') {
		neg = true;
		l->p++;
	}
	d = l->p;
	while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
		if (l->p - d < 18) /* longer ones are jansson's: no overflow here */
			v = v * 10 + (*l->p - '0');
		l->p++;
	}
	size_t nd = (size_t)(l->p - d);
	if (nd == 0 || nd > 18 || (nd > 1 && *d == '0') || !load_delim(l))
		return NULL;
	return json_integer(neg ? -v : v);
}

static json_t *load_value(struct loader *l, int depth);

static json_t *load_object(struct loader *l, int depth)
{
	json_t *o = json_object();

	load_ws(l);
	if (l->p < l->end && *l->p == '}') {
		l->p++;
		return o;
	}
	while (o && l->p < l->end && *l->p == '"') {
		const char *k;
		size_t kn;
		l->p++;
		if (load_string(l, &k, &kn))
			break;
		/* a key in the input is used where it is (no NUL: control
		 * characters are refused); one decoded into the scratch, which
		 * the value reuses, is copied out first */
		char kbuf[256], *copy = NULL;
		const char *key = k;
		if (k == l->sbuf.data) {
			if (memchr(k, '\0', kn))
				break;
			copy = kn < sizeof(kbuf) ? kbuf : malloc(kn + 1);
			if (!copy)
				break;
			memcpy(copy, k, kn);
			copy[kn] = '\0';
			key = copy;
		}
		load_ws(l);
		json_t *v = NULL;
		if (l->p < l->end && *l->p == ':') {
			l->p++;
			load_ws(l);
			v = load_value(l, depth + 1);
		}
		int r = -1;
		if (v && (l->flags & JSON_REJECT_DUPLICATES) && json_object_getn(o, key, kn))
			json_decref(v); /* jansson's error */
		else if (v)
			r = json_object_setn_new_nocheck(o, key, kn, v); /* takes v */
		if (copy != kbuf)
			free(copy);
		if (r)
			break;
		load_ws(l);
		if (l->p < l->end && *l->p == '}') {
			l->p++;
			return o;
		}
		if (l->p >= l->end || *l->p != ',')
			break;
		l->p++;
		load_ws(l);
	}
	json_decref(o);
	return NULL;
}

static json_t *load_array(struct loader *l, int depth)
{
	json_t *a = json_array();

	load_ws(l);
	if (l->p < l->end && *l->p == ']') {
		l->p++;
		return a;
	}
	while (a) {
		json_t *v = load_value(l, depth + 1);
		if (!v || json_array_append_new(a, v))
			break;
		load_ws(l);
		if (l->p < l->end && *l->p == ']') {
			l->p++;
			return a;
		}
		if (l->p >= l->end || *l->p != ',')
			break;
		l->p++;
		load_ws(l);
	}
	json_decref(a);
	return NULL;
}

static json_t *load_literal(struct loader *l, const char *word, json_t *v)
{
	size_t n = strlen(word);
	if ((size_t)(l->end - l->p) < n || memcmp(l->p, word, n) != 0)
		return NULL;
	l->p += n;
	return load_delim(l) ? v : NULL;
}

static json_t *load_value(struct loader *l, int depth)
{
	if (l->p >= l->end || depth > LOAD_MAX_DEPTH)
		return NULL;
	switch (*l->p) {
	case '{': l->p++; return load_object(l, depth);
	case '[': l->p++; return load_array(l, depth);
	case '"': {
		const char *s;
		size_t n;
		l->p++;
		/* a NUL only where escapes were decoded (raw control bytes
		 * are refused) */
		if (load_string(l, &s, &n) || (s == l->sbuf.data && memchr(s, '\0', n)))
			return NULL;
		return json_stringn_nocheck(s, n);
	}
	case 't': return load_literal(l, "true", json_true());
	case 'f': return load_literal(l, "false", json_false());
	case 'n': return load_literal(l, "null", json_null());
	default:
		if (*l->p == '-' || (*l->p >= '0' && *l->p <= '9'))
			return load_number(l);
		return NULL;
	}
}

json_t *kb_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err)
{
	struct loader l = {.p = (const unsigned char *)buf,
			   .end = (const unsigned char *)buf + len,
			   .flags = flags};
	json_t *v = NULL;

	if (buf && !(flags & ~(size_t)JSON_REJECT_DUPLICATES)) {
		load_ws(&l);
		if (l.p < l.end && (*l.p == '{' || *l.p == '['))
			v = load_value(&l, 0);
		load_ws(&l);
		if (v && l.p != l.end) {
			json_decref(v);
			v = NULL;
		}
	}
	kb_buf_free(&l.sbuf);
	if (v) {
		if (err) {
			memset(err, 0, sizeof(*err));
			err->line = err->column = -1;
			snprintf(err->source, sizeof(err->source), "<buffer>");
		}
		return v;
	}
	return json_loadb(buf, len, flags, err);
}

static json_t *yaml_node_json(yaml_document_t *doc, yaml_node_t *n, int depth)
{
	if (!n || depth > 32)
		return NULL;
	if (n->type == YAML_SCALAR_NODE)
		return json_stringn((const char *)n->data.scalar.value, n->data.scalar.length);
	if (n->type == YAML_SEQUENCE_NODE) {
		json_t *a = json_array();
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     a && it < n->data.sequence.items.top; it++) {
			json_t *v =
			    yaml_node_json(doc, yaml_document_get_node(doc, *it), depth + 1);
			if (!v || json_array_append_new(a, v) < 0) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	json_t *o = json_object();
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
	     o && pr < n->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(doc, pr->key);
		json_t *v = yaml_node_json(doc, yaml_document_get_node(doc, pr->value), depth + 1);
		if (!k || k->type != YAML_SCALAR_NODE || !v ||
		    json_object_set_new(o, (const char *)k->data.scalar.value, v) < 0) {
			json_decref(v);
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *kb_yaml_load(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	json_t *out = NULL;
	if (!yaml_parser_initialize(&parser))
		return NULL;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		if (err)
			snprintf(err, errlen, "yaml: %s at line %zu",
				 parser.problem ? parser.problem : "syntax error",
				 parser.problem_mark.line + 1);
		yaml_parser_delete(&parser);
		return NULL;
	}
	out = yaml_node_json(&doc, yaml_document_get_root_node(&doc), 0);
	if (!out && err)
		snprintf(err, errlen, "yaml: empty, or nested deeper than 32");
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return out;
}

void kb_json_array_sort(json_t *arr, int (*cmp)(const void *, const void *))
{
	size_t n = json_array_size(arr);
	json_t **v = n ? malloc(n * sizeof(*v)) : NULL;
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, n, sizeof(*v), cmp);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}
