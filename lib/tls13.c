/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS 1.3 record sealing for one direction of a connection (see tls13.h):
 * HKDF-Expand-Label for key and IV (RFC 8446 section 7.1 and 7.3), the
 * per-record nonce (section 5.3) and the AEAD over TLSInnerPlaintext with
 * the record header as additional data (section 5.2).
 */
#include "lib/tls13.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "lib/log.h"

#define TAG_LEN 16
#define IV_LEN  12
/* RFC 8446 section 5.5: at most 2^24.5 records under one AES-GCM key; we
 * stop well before (the stream's connection then closes). */
#define SEQ_LIMIT (1ull << 24)

struct suite_info {
	const char *cipher, *digest;
	size_t key_len, secret_len;
};

static const struct suite_info suites[3] = {
    {"AES-128-GCM", "SHA256", 16, 32},
    {"AES-256-GCM", "SHA384", 32, 48},
    {"ChaCha20-Poly1305", "SHA256", 32, 32},
};

int kb_tls13_supported(unsigned suite)
{
	return suite >= KB_TLS13_AES_128_GCM_SHA256 && suite <= KB_TLS13_CHACHA20_POLY1305_SHA256;
}

/* HKDF-Expand-Label(secret, label, "", out_len). */
static int expand_label(const char *digest, const uint8_t *secret, size_t secret_len,
			const char *label, uint8_t *out, size_t out_len)
{
	uint8_t info[2 + 1 + 6 + 16 + 1];
	size_t llen = strlen(label), n = 0;
	KB_CHECK(llen <= 16, -EINVAL);
	info[n++] = (uint8_t)(out_len >> 8);
	info[n++] = (uint8_t)out_len;
	info[n++] = (uint8_t)(6 + llen);
	memcpy(info + n, "tls13 ", 6);
	n += 6;
	memcpy(info + n, label, llen);
	n += llen;
	info[n++] = 0; /* empty context */

	int rc = -EIO;
	int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM params[] = {
	    OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)digest, 0),
	    OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, secret_len),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n),
	    OSSL_PARAM_construct_end(),
	};
	if (kctx && EVP_KDF_derive(kctx, out, out_len, params) == 1)
		rc = 0;
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	return rc;
}

int kb_tls13_writer_init(struct kb_tls13_writer *w, unsigned suite, const uint8_t *secret,
			 size_t secret_len, uint64_t seq)
{
	memset(w, 0, sizeof(*w));
	if (!kb_tls13_supported(suite))
		return -ENOTSUP;
	const struct suite_info *si = &suites[(suite & 0xff) - 1];
	if (secret_len != si->secret_len)
		return -EINVAL;
	uint8_t key[32];
	int rc = -EIO;
	EVP_CIPHER *c = NULL;
	if (expand_label(si->digest, secret, secret_len, "key", key, si->key_len) < 0 ||
	    expand_label(si->digest, secret, secret_len, "iv", w->iv, IV_LEN) < 0)
		goto out;
	c = EVP_CIPHER_fetch(NULL, si->cipher, NULL);
	w->ctx = EVP_CIPHER_CTX_new();
	if (!c || !w->ctx || EVP_EncryptInit_ex(w->ctx, c, NULL, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(w->ctx, EVP_CTRL_AEAD_SET_IVLEN, IV_LEN, NULL) != 1 ||
	    EVP_EncryptInit_ex(w->ctx, NULL, NULL, key, w->iv) != 1)
		goto out;
	w->seq = seq;
	rc = 0;
out:
	OPENSSL_cleanse(key, sizeof(key));
	EVP_CIPHER_free(c);
	if (rc < 0)
		kb_tls13_writer_wipe(w);
	return rc;
}

size_t kb_tls13_sealed_size(size_t len)
{
	size_t records = len == 0 ? 1 : (len + KB_TLS13_MAX_PLAIN - 1) / KB_TLS13_MAX_PLAIN;
	return len + records * KB_TLS13_OVERHEAD;
}

/* Walks an iovec array as one byte stream. */
struct cursor {
	const struct iovec *iov;
	int n, i;
	size_t off;
};

/*
 * The plaintext of one record goes to the cipher in as few calls as its
 * pieces allow: each EVP_EncryptUpdate costs a few hundred instructions
 * of dispatch, and a piece that starts inside a 16-byte block is taken
 * byte by byte up to the next block. Pieces of at most STAGE_PIECE bytes
 * (a chunk's head and tail, the inner content type) are gathered in a
 * small buffer, topped up from the next large piece to a whole number of
 * blocks, so that a watch event (head, line, "\r\n", type) is sealed in
 * three calls with its line aligned, as one piece would be. GCM and
 * ChaCha20-Poly1305 are stream modes: how the plaintext is split between
 * calls does not change a byte of the record.
 */
#define STAGE_PIECE 32
struct stage {
	uint8_t buf[2 * STAGE_PIECE + 16];
	size_t n;     /* bytes gathered */
	uint8_t *out; /* where their ciphertext goes */
};

static int encrypt(EVP_CIPHER_CTX *x, const uint8_t *in, size_t len, uint8_t *out)
{
	int outl = 0;
	if (len == 0)
		return 0;
	if (EVP_EncryptUpdate(x, out, &outl, in, (int)len) != 1)
		return -EIO;
	KB_CHECK((size_t)outl == len, -EIO);
	return 0;
}

static int stage_flush(EVP_CIPHER_CTX *x, struct stage *st)
{
	int rc = encrypt(x, st->buf, st->n, st->out);
	st->out += st->n;
	st->n = 0;
	return rc;
}

/* Adds n bytes at p to the record: gathered when small, else sent to the
 * cipher (after what is gathered, topped up to a whole block from p). */
static int stage_add(EVP_CIPHER_CTX *x, struct stage *st, const uint8_t *p, size_t n)
{
	if (n <= STAGE_PIECE && st->n + n <= sizeof(st->buf)) {
		memcpy(st->buf + st->n, p, n);
		st->n += n;
		return 0;
	}
	if (st->n > 0) {
		size_t top = (16 - st->n % 16) % 16;
		if (top > n || st->n + top > sizeof(st->buf))
			top = 0;
		memcpy(st->buf + st->n, p, top);
		st->n += top;
		p += top;
		n -= top;
		int rc = stage_flush(x, st);
		if (rc < 0)
			return rc;
	}
	int rc = encrypt(x, p, n, st->out);
	st->out += n;
	return rc;
}

/* Encrypts the next `len` bytes of the cursor, then the inner content
 * type, into out. */
static int encrypt_from(EVP_CIPHER_CTX *x, struct cursor *cur, size_t len, uint8_t type,
			uint8_t *out)
{
	struct stage st = {.n = 0, .out = out};
	while (len > 0) {
		KB_CHECK(cur->i < cur->n, -EINVAL);
		const struct iovec *v = &cur->iov[cur->i];
		size_t take = v->iov_len - cur->off;
		if (take > len)
			take = len;
		int rc = stage_add(x, &st, (const uint8_t *)v->iov_base + cur->off, take);
		if (rc < 0)
			return rc;
		len -= take;
		cur->off += take;
		if (cur->off == v->iov_len) {
			cur->i++;
			cur->off = 0;
		}
	}
	int rc = stage_add(x, &st, &type, 1);
	return rc < 0 ? rc : stage_flush(x, &st);
}

/* One record of `len` plaintext bytes from the cursor. */
static int seal_record(struct kb_tls13_writer *w, EVP_CIPHER_CTX *x, uint8_t type,
		       struct cursor *cur, size_t len, uint8_t *out)
{
	if (w->seq >= SEQ_LIMIT)
		return -EOVERFLOW;
	size_t clen = len + 1 + TAG_LEN;
	uint8_t *hdr = out;
	hdr[0] = KB_TLS13_APPLICATION_DATA; /* opaque type of every protected record */
	hdr[1] = 0x03;
	hdr[2] = 0x03;
	hdr[3] = (uint8_t)(clen >> 8);
	hdr[4] = (uint8_t)clen;
	uint8_t nonce[IV_LEN];
	memcpy(nonce, w->iv, IV_LEN);
	for (int i = 0; i < 8; i++)
		nonce[IV_LEN - 1 - i] ^= (uint8_t)(w->seq >> (8 * i));
	int outl = 0;
	if (EVP_EncryptInit_ex(x, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_EncryptUpdate(x, NULL, &outl, hdr, 5) != 1)
		return -EIO;
	int rc = encrypt_from(x, cur, len, type, out + 5);
	if (rc < 0)
		return rc;
	/* the tag asked for directly (EVP_CIPHER_CTX_ctrl would build
	 * the same parameter and then ask) */
	OSSL_PARAM tag[] = {
	    OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, out + 5 + len + 1,
					      TAG_LEN),
	    OSSL_PARAM_construct_end(),
	};
	if (EVP_EncryptFinal_ex(x, out + 5 + len + 1, &outl) != 1 || outl != 0 ||
	    EVP_CIPHER_CTX_get_params(x, tag) != 1)
		return -EIO;
	w->seq++;
	return 0;
}

int kb_tls13_seal(struct kb_tls13_writer *w, uint8_t type, const struct iovec *iov, int n,
		  uint8_t *out, size_t *out_len)
{
	KB_CHECK(w->ctx, -EINVAL);
	EVP_CIPHER_CTX *x = w->ctx;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	struct cursor cur = {.iov = iov, .n = n};
	size_t done = 0, pos = 0;
	do {
		size_t len = total - done;
		if (len > KB_TLS13_MAX_PLAIN)
			len = KB_TLS13_MAX_PLAIN;
		int rc = seal_record(w, x, type, &cur, len, out + pos);
		if (rc < 0)
			return rc;
		pos += len + KB_TLS13_OVERHEAD;
		done += len;
	} while (done < total);
	*out_len = pos;
	return 0;
}

void kb_tls13_writer_wipe(struct kb_tls13_writer *w)
{
	EVP_CIPHER_CTX_free(w->ctx); /* cleanses the key schedule */
	OPENSSL_cleanse(w, sizeof(*w));
}
