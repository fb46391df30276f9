/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the HTTP/1.1 request parser of lib/http.c (llhttp with
 * the server's callbacks and limits), through kb_http_parse_head_for_fuzz.
 * The input is the plaintext a client sends after the TLS handshake; several
 * pipelined requests may follow each other.
 */
#include "tests/fuzz/fuzz.h"

#include "lib/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)kb_http_parse_head_for_fuzz((const char *)data, size);
	return 0;
}
