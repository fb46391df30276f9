/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library functions defined outside std.c (strings.c: cel-go's ext
 * strings; ext.c: kube's lists and regex, ext sets and encoders, optional
 * types), listed into std.c's table by the macros below, and text helpers
 * they share.
 */
#ifndef KUBICLE_CEL_STD_H
#define KUBICLE_CEL_STD_H

#include "proxy/cel/cel_impl.h"

/* Code points in s (UTF-8). */
size_t cel_utf8_len(struct cel_str s);
bool cel_utf8_valid(const char *s, size_t n);
/* The first occurrence of n in h, or NULL; an empty n is found at h.p. */
const char *cel_memmem(struct cel_str h, struct cel_str n);

/* cel-go's check of a constant format string applied to a list literal
 * of nargs elements of static types types[i] (NULL: dyn): 0, or -EINVAL
 * and msg, with *bad_arg the element at fault (-1: the call). */
int cel_format_check(const char *f, size_t len, const char *const *types, size_t nargs, char *msg,
		     size_t cap, long *bad_arg);

#define CEL_FN(name) cel_value_t name(cel_ctx_t *c, const cel_value_t *a, size_t n)
CEL_FN(cel_s_char_at);
CEL_FN(cel_s_index_of);
CEL_FN(cel_s_last_index_of);
CEL_FN(cel_s_lower);
CEL_FN(cel_s_upper);
CEL_FN(cel_s_replace);
CEL_FN(cel_s_split);
CEL_FN(cel_s_substring);
CEL_FN(cel_s_trim);
CEL_FN(cel_s_join);
CEL_FN(cel_s_quote);
CEL_FN(cel_s_format);
CEL_FN(cel_l_is_sorted);
CEL_FN(cel_l_sum);
CEL_FN(cel_l_min);
CEL_FN(cel_l_max);
CEL_FN(cel_l_index_of);
CEL_FN(cel_l_last_index_of);
CEL_FN(cel_r_find);
CEL_FN(cel_r_find_all);
CEL_FN(cel_set_contains);
CEL_FN(cel_set_equivalent);
CEL_FN(cel_set_intersects);
CEL_FN(cel_b64_encode);
CEL_FN(cel_b64_decode);
CEL_FN(cel_opt_of);
CEL_FN(cel_opt_none);
CEL_FN(cel_opt_of_non_zero);
CEL_FN(cel_opt_has_value);
CEL_FN(cel_opt_value);
CEL_FN(cel_opt_or);
CEL_FN(cel_opt_or_value);
CEL_FN(cel_opt_first);
CEL_FN(cel_opt_last);
CEL_FN(cel_opt_unwrap);

#define CEL_STRINGS_FUNCS                                                    \
	{"charAt", true, 2, CEL_LIB_STRINGS, cel_s_char_at},                 \
	    {"indexOf", true, -1, CEL_LIB_STRINGS, cel_s_index_of},          \
	    {"lastIndexOf", true, -1, CEL_LIB_STRINGS, cel_s_last_index_of}, \
	    {"lowerAscii", true, 1, CEL_LIB_STRINGS, cel_s_lower},           \
	    {"upperAscii", true, 1, CEL_LIB_STRINGS, cel_s_upper},           \
	    {"replace", true, -1, CEL_LIB_STRINGS, cel_s_replace},           \
	    {"split", true, -1, CEL_LIB_STRINGS, cel_s_split},               \
	    {"substring", true, -1, CEL_LIB_STRINGS, cel_s_substring},       \
	    {"trim", true, 1, CEL_LIB_STRINGS, cel_s_trim},                  \
	    {"join", true, -1, CEL_LIB_STRINGS, cel_s_join},                 \
	    {"strings.quote", false, 1, CEL_LIB_STRINGS, cel_s_quote},       \
	{                                                                    \
		"format", true, 2, CEL_LIB_STRINGS, cel_s_format             \
	}

#define CEL_EXT_FUNCS                                                                     \
	{"isSorted", true, 1, CEL_LIB_LISTS, cel_l_is_sorted},                            \
	    {"sum", true, 1, CEL_LIB_LISTS, cel_l_sum},                                   \
	    {"min", true, 1, CEL_LIB_LISTS, cel_l_min},                                   \
	    {"max", true, 1, CEL_LIB_LISTS, cel_l_max},                                   \
	    {"indexOf", true, 2, CEL_LIB_LISTS, cel_l_index_of},                          \
	    {"lastIndexOf", true, 2, CEL_LIB_LISTS, cel_l_last_index_of},                 \
	    {"find", true, 2, CEL_LIB_REGEX, cel_r_find},                                 \
	    {"findAll", true, -1, CEL_LIB_REGEX, cel_r_find_all},                         \
	    {"sets.contains", false, 2, CEL_LIB_SETS, cel_set_contains},                  \
	    {"sets.equivalent", false, 2, CEL_LIB_SETS, cel_set_equivalent},              \
	    {"sets.intersects", false, 2, CEL_LIB_SETS, cel_set_intersects},              \
	    {"base64.encode", false, 1, CEL_LIB_ENCODERS, cel_b64_encode},                \
	    {"base64.decode", false, 1, CEL_LIB_ENCODERS, cel_b64_decode},                \
	    {"optional.of", false, 1, CEL_LIB_OPTIONAL, cel_opt_of},                      \
	    {"optional.none", false, 0, CEL_LIB_OPTIONAL, cel_opt_none},                  \
	    {"optional.ofNonZeroValue", false, 1, CEL_LIB_OPTIONAL, cel_opt_of_non_zero}, \
	    {"hasValue", true, 1, CEL_LIB_OPTIONAL, cel_opt_has_value},                   \
	    {"value", true, 1, CEL_LIB_OPTIONAL, cel_opt_value},                          \
	    {"or", true, 2, CEL_LIB_OPTIONAL, cel_opt_or},                                \
	    {"orValue", true, 2, CEL_LIB_OPTIONAL, cel_opt_or_value},                     \
	    {"first", true, 1, CEL_LIB_OPTIONAL, cel_opt_first},                          \
	    {"last", true, 1, CEL_LIB_OPTIONAL, cel_opt_last},                            \
	    {"optional.unwrap", false, 1, CEL_LIB_OPTIONAL, cel_opt_unwrap},              \
	{                                                                                 \
		"unwrapOpt", true, 1, CEL_LIB_OPTIONAL, cel_opt_unwrap                    \
	}

#endif
