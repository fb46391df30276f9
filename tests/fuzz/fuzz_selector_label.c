/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: ?labelSelector= strings (proxy/model/selector.h). Parses the
 * input, matches it against a fixed label set, and checks that the canonical
 * text kube would print parses again to a selector with the same verdict.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#include "proxy/model/selector.h"

static json_t *fixed_labels(void)
{
	static json_t *labels;
	if (!labels)
		labels = json_pack("{s:s, s:s, s:s, s:s, s:s}", "app", "web", "tier", "front",
				   "version", "3", "example.com/team", "a-b.c_d", "empty", "");
	return labels;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	struct sel_label *sel = NULL, *again = NULL;
	char err[256], *text = NULL;
	if (!s || sel_label_parse(s, &sel, err, sizeof(err)) < 0)
		goto out;
	bool m = sel_label_match(sel, fixed_labels());
	(void)sel_label_match(sel, NULL);
	(void)sel_label_empty(sel);
	text = sel_label_string(sel);
	if (!text)
		goto out;
	/* kube's String() of a parsed selector is itself a valid selector. */
	KB_REQUIRE(sel_label_parse(text, &again, err, sizeof(err)) == 0);
	KB_REQUIRE(sel_label_match(again, fixed_labels()) == m);
out:
	sel_label_free(again);
	sel_label_free(sel);
	free(text);
	free(s);
	return 0;
}
