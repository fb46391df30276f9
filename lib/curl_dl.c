/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl loaded on first use (curl_dl.h says why): dlopen of the soname
 * the headers belong to, every entry point looked up by name.
 */
#define KB_CURL_DL_IMPL 1
#include "lib/curl_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>

#include "lib/log.h"

struct kb_curl_api kb_curl;

/* one entry per line */
/* clang-format off */
static const struct {
	const char *name;
	size_t offset;
} entries[] = {
#define E(sym, field) {#sym, offsetof(struct kb_curl_api, field)}
	E(curl_global_init, global_init),
	E(curl_easy_init, easy_init),
	E(curl_easy_cleanup, easy_cleanup),
	E(curl_easy_reset, easy_reset),
	E(curl_easy_setopt, easy_setopt),
	E(curl_easy_getinfo, easy_getinfo),
	E(curl_easy_strerror, easy_strerror),
	E(curl_easy_send, easy_send),
	E(curl_easy_recv, easy_recv),
	E(curl_easy_pause, easy_pause),
	E(curl_multi_init, multi_init),
	E(curl_multi_cleanup, multi_cleanup),
	E(curl_multi_setopt, multi_setopt),
	E(curl_multi_add_handle, multi_add_handle),
	E(curl_multi_remove_handle, multi_remove_handle),
	E(curl_multi_assign, multi_assign),
	E(curl_multi_socket_action, multi_socket_action),
	E(curl_multi_info_read, multi_info_read),
	E(curl_slist_append, slist_append),
	E(curl_slist_free_all, slist_free_all),
	E(curl_share_init, share_init),
	E(curl_share_setopt, share_setopt),
	E(curl_share_cleanup, share_cleanup),
#undef E
};
/* clang-format on */

int kb_curl_load(void)
{
	static int state; /* 0: not tried, 1: loaded, -errno: failed */
	if (state)
		return state > 0 ? 0 : state;
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		kb_err("httpc", "cannot load libcurl: %s", dlerror());
		state = -ENOENT;
		return state;
	}
	struct kb_curl_api api;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		void *sym = dlsym(h, entries[i].name);
		if (!sym) {
			kb_err("httpc", "libcurl lacks %s", entries[i].name);
			dlclose(h);
			state = -ENOENT;
			return state;
		}
		memcpy((char *)&api + entries[i].offset, &sym, sizeof(sym));
	}
	kb_curl = api;
	kb_curl.global_init(CURL_GLOBAL_DEFAULT);
	state = 1;
	return 0;
}
