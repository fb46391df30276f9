/* SPDX-License-Identifier: Apache-2.0 */
/* CEL's standard definitions: to be written (stub so the module builds). */
#include "cel/cel_impl.h"

const struct cel_func cel_std_funcs[] = {
	{0},
};
