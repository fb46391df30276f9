/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: protobuf request bodies (proxy/model/protobuf.h): the "k8s\0"
 * envelope with the message taken from the envelope and with a fixed Pod,
 * and the same bytes as a bare Pod message.
 */
#include "tests/fuzz/fuzz.h"

#include "proxy/model/protobuf.h"

#define POD "k8s.io.api.core.v1.Pod"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *out = NULL;
	char err[256];
	(void)pb_is_k8s(data, size);
	if (pb_decode_k8s(data, size, NULL, &out, err, sizeof(err)) == 0)
		fuzz_check_json(out);
	json_decref(out);
	out = NULL;
	if (pb_decode_k8s(data, size, POD, &out, err, sizeof(err)) == 0)
		fuzz_check_json(out);
	json_decref(out);
	out = NULL;
	if (pb_decode_message(POD, data, size, &out, err, sizeof(err)) == 0)
		fuzz_check_json(out);
	json_decref(out);
	return 0;
}
