/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
int main(void) { puts("kubicle"); return 0; }
