/* SPDX-License-Identifier: Apache-2.0 */
/* placeholder */
typedef int kb_placeholder_proxy_server_c;
