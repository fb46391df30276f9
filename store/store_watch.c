/* SPDX-License-Identifier: Apache-2.0 */
/* placeholder */
typedef int kb_placeholder_store_store_watch_c;
