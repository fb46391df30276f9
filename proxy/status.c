/* SPDX-License-Identifier: Apache-2.0 */
/* placeholder */
typedef int kb_placeholder_proxy_status_c;
