/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the kubeconfig reader (lib/kubeconfig.h), with the
 * file's current context and with a named one. Relative file references
 * resolve under a folder that does not exist, so nothing is read from disk
 * unless the input names an absolute path.
 */
#include "tests/fuzz/fuzz.h"

#include "lib/kubeconfig.h"

#define NODIR "/nonexistent-kubicle-fuzz"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kb_kubeconfig_creds c;
	memset(&c, 0, sizeof(c));
	if (kb_kubeconfig_parse((const char *)data, size, NODIR, NULL, &c) == 0)
		KB_REQUIRE(c.server != NULL);
	kb_kubeconfig_creds_free(&c);
	memset(&c, 0, sizeof(c));
	(void)kb_kubeconfig_parse((const char *)data, size, NODIR, "ctx", &c);
	kb_kubeconfig_creds_free(&c);
	return 0;
}
