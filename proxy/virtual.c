/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resources that are computed, never stored (access reviews, token
 * reviews). None is served yet.
 */
#include "proxy/proxy_impl.h"

void virtual_handle(struct req *r)
{
	reply_status(r, 404, "NotFound", "the server could not find the requested resource", NULL);
}
