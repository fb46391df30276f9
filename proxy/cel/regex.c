/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL's regular expressions: RE2's syntax (Go's regexp, as cel-go uses)
 * matched by PCRE2 in UTF mode. Perl constructs RE2 refuses (lookaround,
 * backreferences, atomic groups, possessive quantifiers, ...) are refused
 * with Go's message, and a match limit turns catastrophic backtracking into
 * an error instead of a stuck thread.
 *
 * Patterns that are constants in a program are compiled once at compile
 * time; others once per evaluation (a thread-local cache entered and left
 * by cel_eval, nestable).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/ast.h"
#include "lib/log.h"

#define MATCH_LIMIT 1000000
#define DEPTH_LIMIT 10000

struct cel_re {
	struct cel_re *next;
	char *pat;
	size_t len;
	pcre2_code *code;
};

static _Thread_local struct cel_re_scope scope;

/* Go's message for a construct RE2 refuses, or NULL. */
static char *refused(const char *p, size_t n)
{
	static const char *const perl[] = {"(?=", "(?!", "(?<=", "(?<!", "(?>", "(?|",
					   "(?#", "(?R", "(?&",  "(?(",  "(?+", NULL};
	char buf[256];
	bool cls = false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\' && i + 1 < n) {
			char e = p[i + 1];
			if ((e >= '1' && e <= '9') || strchr("gkKRXGhHNoZ", e)) {
				snprintf(buf, sizeof(buf),
					 "error parsing regexp: invalid escape sequence: `\\%c`",
					 e);
				return strdup(buf);
			}
			i++;
			continue;
		}
		if (cls) {
			cls = p[i] != ']';
			continue;
		}
		if (p[i] == '[') {
			cls = true;
			if (i + 1 < n && p[i + 1] == ']')
				i++;
			continue;
		}
		for (int k = 0; perl[k] && p[i] == '('; k++)
			if (n - i >= strlen(perl[k]) && !memcmp(p + i, perl[k], strlen(perl[k]))) {
				size_t show = strlen(perl[k]) > 3 ? 3 : strlen(perl[k]);
				snprintf(
				    buf, sizeof(buf),
				    "error parsing regexp: invalid or unsupported Perl syntax: "
				    "`%.*s`",
				    (int)show, p + i);
				return strdup(buf);
			}
		if (strchr("*+?}", p[i]) && i + 1 < n && p[i + 1] == '+') {
			snprintf(buf, sizeof(buf),
				 "error parsing regexp: invalid nested repetition operator: `%c+`",
				 p[i]);
			return strdup(buf);
		}
	}
	return NULL;
}

/* PCRE2's compile error in Go's words where they are known. */
static char *compile_error(int code, const char *p, size_t n)
{
	PCRE2_UCHAR msg[256];
	pcre2_get_error_message(code, msg, sizeof(msg));
	char buf[512];
	const char *m = (const char *)msg;
	if (strstr(m, "missing closing parenthesis"))
		snprintf(buf, sizeof(buf), "error parsing regexp: missing closing ): `%.*s`",
			 (int)n, p);
	else if (strstr(m, "missing terminating ]"))
		snprintf(buf, sizeof(buf), "error parsing regexp: missing closing ]: `%.*s`",
			 (int)n, p);
	else if (strstr(m, "quantifier does not follow"))
		snprintf(buf, sizeof(buf),
			 "error parsing regexp: missing argument to repetition operator: `%.*s`",
			 (int)n, p);
	else if (strstr(m, "unmatched closing parenthesis"))
		snprintf(buf, sizeof(buf), "error parsing regexp: unexpected ): `%.*s`", (int)n, p);
	else
		snprintf(buf, sizeof(buf), "error parsing regexp: %s: `%.*s`", m, (int)n, p);
	return strdup(buf);
}

static struct cel_re *compile(const char *pat, size_t len, char **err)
{
	*err = refused(pat, len);
	if (*err)
		return NULL;
	int code;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, len,
				       PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_MATCH_INVALID_UTF |
					   PCRE2_NEVER_BACKSLASH_C,
				       &code, &off, NULL);
	if (!re) {
		*err = compile_error(code, pat, len);
		return NULL;
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* when available; the match limit holds */
	struct cel_re *r = calloc(1, sizeof(*r));
	KB_REQUIRE(r != NULL);
	r->pat = malloc(len + 1);
	KB_REQUIRE(r->pat != NULL);
	memcpy(r->pat, pat, len);
	r->pat[len] = 0;
	r->len = len;
	r->code = re;
	return r;
}

int cel_re_add(struct cel_re **list, const char *pat, size_t len, char **err)
{
	for (struct cel_re *r = *list; r; r = r->next)
		if (r->len == len && !memcmp(r->pat, pat, len))
			return 0;
	struct cel_re *r = compile(pat, len, err);
	if (!r)
		return -EINVAL;
	r->next = *list;
	*list = r;
	return 0;
}

void cel_re_free_all(struct cel_re *re)
{
	while (re) {
		struct cel_re *next = re->next;
		pcre2_code_free(re->code);
		free(re->pat);
		free(re);
		re = next;
	}
}

void cel_re_enter(struct cel_re *program_res, struct cel_re_scope *saved)
{
	*saved = scope;
	scope.prog = program_res;
	scope.eval = NULL;
}

void cel_re_leave(const struct cel_re_scope *saved)
{
	cel_re_free_all(scope.eval);
	scope = *saved;
}

static const struct cel_re *find(const struct cel_re *r, struct cel_str p)
{
	for (; r; r = r->next)
		if (r->len == p.len && !memcmp(r->pat, p.p, p.len))
			return r;
	return NULL;
}

const struct cel_re *cel_regex(cel_ctx_t *c, struct cel_str pattern, cel_value_t *err)
{
	const struct cel_re *r = find(scope.prog, pattern);
	if (!r)
		r = find(scope.eval, pattern);
	if (r)
		return r;
	char *msg = NULL;
	if (cel_re_add(&scope.eval, pattern.p, pattern.len, &msg) < 0) {
		*err = cel_errorf(c, "%s", msg ? msg : "error parsing regexp");
		free(msg);
		return NULL;
	}
	return scope.eval;
}

int cel_regex_find(cel_ctx_t *c, const struct cel_re *re, struct cel_str s, size_t start,
		   size_t *so, size_t *eo, cel_value_t *err)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
	pcre2_match_context *mc = pcre2_match_context_create(NULL);
	KB_REQUIRE(md != NULL && mc != NULL);
	pcre2_set_match_limit(mc, MATCH_LIMIT);
	pcre2_set_depth_limit(mc, DEPTH_LIMIT);
	int rc = pcre2_match(re->code, (PCRE2_SPTR)(s.p ? s.p : ""), s.len, start, 0, md, mc);
	int out = 0;
	if (rc >= 0) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		*so = ov[0];
		*eo = ov[1];
		out = 1;
	} else if (rc != PCRE2_ERROR_NOMATCH) {
		*err = cel_errorf(c, "regular expression match limit exceeded");
		out = -EIO;
	}
	pcre2_match_context_free(mc);
	pcre2_match_data_free(md);
	return out;
}

/* ---- plain searches (CRD `pattern`) ---------------------------------------------------- */

#define SEARCH_CACHE 64

static _Thread_local struct cel_re *search_cache;
static _Thread_local size_t search_cached;

int cel_regex_search(const char *pattern, const char *s, char **err)
{
	*err = NULL;
	size_t len = strlen(pattern);
	const struct cel_re *re = find(search_cache, (struct cel_str){pattern, len});
	if (!re) {
		if (search_cached >= SEARCH_CACHE) {
			cel_re_free_all(search_cache);
			search_cache = NULL;
			search_cached = 0;
		}
		if (cel_re_add(&search_cache, pattern, len, err) < 0)
			return -EINVAL;
		search_cached++;
		re = search_cache;
	}
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
	pcre2_match_context *mc = pcre2_match_context_create(NULL);
	KB_REQUIRE(md != NULL && mc != NULL);
	pcre2_set_match_limit(mc, MATCH_LIMIT);
	pcre2_set_depth_limit(mc, DEPTH_LIMIT);
	int rc = pcre2_match(re->code, (PCRE2_SPTR)s, strlen(s), 0, 0, md, mc);
	pcre2_match_data_free(md);
	pcre2_match_context_free(mc);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	*err = strdup("regular expression match limit exceeded");
	return -EIO;
}
