/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TLS 1.3 record writer for one direction of an established connection
 * (RFC 8446 section 5.2): the AEAD sealing of records with the keys of one
 * traffic secret, nothing else. lib/http hands a long response stream (a
 * watch) to it so that the connection can free its whole OpenSSL state
 * (~17 KiB) and keep ~1 KiB instead; the handshake, key schedule and
 * reading stay OpenSSL's.
 *
 * DESIGN: the caller gives the traffic secret of the direction (from the
 * key-log callback, SERVER_TRAFFIC_SECRET_0) and the number of records
 * already sent under it; the writer derives key and IV with
 * HKDF-Expand-Label and seals records whose nonce is the IV xor the
 * sequence number. A writer keeps one keyed cipher context (~0.9 KiB), so
 * that a record costs an IV change, not a key schedule. Only the three
 * AEAD suites of TLS 1.3 that OpenSSL enables by default are supported
 * (AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305).
 *
 * Threading: a writer is used by one thread at a time.
 */
#ifndef KB_TLS13_H
#define KB_TLS13_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* TLS 1.3 cipher suite ids (low 16 bits of OpenSSL's SSL_CIPHER_get_id). */
#define KB_TLS13_AES_128_GCM_SHA256       0x1301
#define KB_TLS13_AES_256_GCM_SHA384       0x1302
#define KB_TLS13_CHACHA20_POLY1305_SHA256 0x1303

/* Inner content types. */
#define KB_TLS13_ALERT            21
#define KB_TLS13_APPLICATION_DATA 23

/* Largest plaintext of one record. */
#define KB_TLS13_MAX_PLAIN 16384u
/* Bytes one record adds: header, inner content type, tag. */
#define KB_TLS13_OVERHEAD (5u + 1u + 16u)

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;

struct kb_tls13_writer {
	EVP_CIPHER_CTX *ctx; /* keyed; owned */
	uint8_t iv[12];
	uint64_t seq; /* records sealed under this key */
};

/* True when `suite` (a KB_TLS13_* id) is one this writer supports. */
int kb_tls13_supported(unsigned suite);

/*
 * Derives the writer's key and IV from `secret` (secret_len bytes: 32, or
 * 48 for the SHA-384 suite) for `suite`; `seq` records were already sent
 * under that secret. 0, -ENOTSUP (suite), -EINVAL (secret length) or -EIO.
 */
int kb_tls13_writer_init(struct kb_tls13_writer *w, unsigned suite, const uint8_t *secret,
			 size_t secret_len, uint64_t seq);

/* Bytes needed to seal `len` bytes of plaintext (as records of at most
 * KB_TLS13_MAX_PLAIN). */
size_t kb_tls13_sealed_size(size_t len);

/*
 * Seals the concatenation of `iov[0..n)` as records of inner content type
 * `type` into `out` (at least kb_tls13_sealed_size(total) bytes); *out_len
 * gets the bytes written. 0, -EOVERFLOW when the key's record budget is
 * spent (the connection must close), or -EIO.
 */
int kb_tls13_seal(struct kb_tls13_writer *w, uint8_t type, const struct iovec *iov, int n,
		  uint8_t *out, size_t *out_len);

/* Frees the cipher context and forgets the keys (cleansed). */
void kb_tls13_writer_wipe(struct kb_tls13_writer *w);

#endif
