/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes' CEL libraries: to be written (stub so the module builds). */
#include "cel/cel_impl.h"

const struct cel_func cel_k8s_funcs[] = {
	{0},
};
