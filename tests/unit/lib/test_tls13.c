/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/tls13: a real TLS 1.3 handshake between an OpenSSL server and
 * an OpenSSL client over memory BIOs; the server's application traffic
 * secret comes from the key-log callback, the server sends some records with
 * SSL_write, then a kb_tls13_writer takes over at that record count and the
 * OpenSSL client must read what it seals, for each supported suite.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "lib/pki.h"
#include "lib/tls13.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static char dir[64];
static uint8_t secret[48];
static size_t secret_len;

static int hexv(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void keylog(const SSL *ssl, const char *line)
{
	(void)ssl;
	static const char label[] = "SERVER_TRAFFIC_SECRET_0 ";
	if (strncmp(line, label, sizeof(label) - 1) != 0)
		return;
	const char *hex = strchr(line + sizeof(label) - 1, ' ') + 1;
	secret_len = strlen(hex) / 2;
	for (size_t i = 0; i < secret_len; i++)
		secret[i] = (uint8_t)(hexv(hex[2 * i]) << 4 | hexv(hex[2 * i + 1]));
}

struct pair {
	SSL_CTX *sctx, *cctx;
	SSL *s, *c;
	BIO *s_in, *s_out, *c_in, *c_out; /* s_out feeds c_in and so on */
	unsigned sent;                    /* server records since its handshake ended */
};

static unsigned records(const uint8_t *b, size_t n);

/* Moves what one side wrote to the other side's input; returns the
 * number of protected records moved (whole records: a memory BIO holds
 * what SSL wrote). */
static unsigned pump(BIO *from, BIO *to)
{
	uint8_t buf[16384];
	int n = BIO_read(from, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	ck_assert_int_eq(BIO_write(to, buf, n), n);
	ck_assert_int_eq(BIO_ctrl_pending(from), 0);
	return records(buf, (size_t)n);
}

static BIO *mem(void)
{
	BIO *b = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(b, -1);
	return b;
}

static void setup_pair(struct pair *p, const char *suite_name)
{
	char crt[128], key[128];
	snprintf(crt, sizeof(crt), "%s/server.crt", dir);
	snprintf(key, sizeof(key), "%s/server.key", dir);
	memset(p, 0, sizeof(*p));
	secret_len = 0;
	p->sctx = SSL_CTX_new(TLS_server_method());
	p->cctx = SSL_CTX_new(TLS_client_method());
	ck_assert_int_eq(SSL_CTX_use_certificate_chain_file(p->sctx, crt), 1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(p->sctx, key, SSL_FILETYPE_PEM), 1);
	SSL_CTX_set_min_proto_version(p->sctx, TLS1_3_VERSION);
	ck_assert_int_eq(SSL_CTX_set_ciphersuites(p->sctx, suite_name), 1);
	ck_assert_int_eq(SSL_CTX_set_ciphersuites(p->cctx, suite_name), 1);
	SSL_CTX_set_keylog_callback(p->sctx, keylog);
	p->s = SSL_new(p->sctx);
	p->c = SSL_new(p->cctx);
	p->s_in = mem();
	p->s_out = mem();
	p->c_in = mem();
	p->c_out = mem();
	SSL_set_bio(p->s, p->s_in, p->s_out);
	SSL_set_bio(p->c, p->c_in, p->c_out);
	SSL_set_accept_state(p->s);
	SSL_set_connect_state(p->c);
	for (int i = 0; i < 10; i++) {
		int rc = SSL_do_handshake(p->c);
		pump(p->c_out, p->s_in);
		int rs = SSL_do_handshake(p->s);
		unsigned moved = pump(p->s_out, p->c_in);
		if (rs == 1)
			p->sent += moved; /* the session ticket */
		if (rc == 1 && rs == 1)
			break;
	}
	ck_assert_int_eq(SSL_is_init_finished(p->s), 1);
	ck_assert_int_eq(SSL_version(p->s), TLS1_3_VERSION);
	ck_assert_uint_gt(secret_len, 0);
}

static void free_pair(struct pair *p)
{
	SSL_free(p->s);
	SSL_free(p->c);
	SSL_CTX_free(p->sctx);
	SSL_CTX_free(p->cctx);
}

/* Client reads exactly `len` bytes (or fails the test). */
static void client_expect(struct pair *p, const char *want, size_t len)
{
	char *got = malloc(len + 1);
	size_t have = 0;
	while (have < len) {
		int n = SSL_read(p->c, got + have, (int)(len - have));
		ck_assert_msg(n > 0, "SSL_read failed: %d", SSL_get_error(p->c, n));
		have += (size_t)n;
	}
	ck_assert_int_eq(memcmp(got, want, len), 0);
	free(got);
}

/* Counts the protected records in `n` bytes of ciphertext. */
static unsigned records(const uint8_t *b, size_t n)
{
	unsigned count = 0;
	for (size_t i = 0; i + 5 <= n; i += 5 + ((size_t)b[i + 3] << 8 | b[i + 4]))
		count += b[i] == 23;
	return count;
}

static void take_over(const char *suite_name, unsigned suite_id)
{
	struct pair p;
	setup_pair(&p, suite_name);
	/* The server writes two records under OpenSSL; the ticket is in the
	 * same output. */
	ck_assert_int_gt(SSL_write(p.s, "hello ", 6), 0);
	ck_assert_int_gt(SSL_write(p.s, "world ", 6), 0);
	uint8_t buf[8192];
	int n = BIO_read(p.s_out, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	unsigned seq = p.sent + records(buf, (size_t)n);
	ck_assert_uint_ge(seq, 3); /* ticket, hello, world */
	ck_assert_int_eq(BIO_write(p.c_in, buf, n), n);
	client_expect(&p, "hello world ", 12);

	struct kb_tls13_writer w;
	ck_assert_int_eq(kb_tls13_writer_init(&w, suite_id, secret, secret_len, seq), 0);
	/* a small record, then 40,000 bytes (three records) from three pieces */
	struct iovec one = {.iov_base = "taken over", .iov_len = 10};
	size_t big_len = 40000;
	char *big = malloc(big_len);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (char)('a' + i % 26);
	struct iovec three[3] = {{.iov_base = big, .iov_len = 100},
				 {.iov_base = big + 100, .iov_len = 30000},
				 {.iov_base = big + 30100, .iov_len = big_len - 30100}};
	size_t cap = kb_tls13_sealed_size(big_len);
	uint8_t *out = malloc(cap);
	size_t len = 0;
	ck_assert_int_eq(kb_tls13_seal(&w, KB_TLS13_APPLICATION_DATA, &one, 1, out, &len), 0);
	ck_assert_uint_eq(len, kb_tls13_sealed_size(10));
	ck_assert_int_eq(BIO_write(p.c_in, out, (int)len), (int)len);
	client_expect(&p, "taken over", 10);
	ck_assert_int_eq(kb_tls13_seal(&w, KB_TLS13_APPLICATION_DATA, three, 3, out, &len), 0);
	ck_assert_uint_eq(len, cap);
	ck_assert_uint_eq(records(out, len), 3);
	ck_assert_int_eq(BIO_write(p.c_in, out, (int)len), (int)len);
	client_expect(&p, big, big_len);
	ck_assert_uint_eq(w.seq, seq + 4);

	/* close_notify: the client sees a clean end of the stream */
	struct iovec alert = {.iov_base = "\x01\x00", .iov_len = 2};
	ck_assert_int_eq(kb_tls13_seal(&w, KB_TLS13_ALERT, &alert, 1, out, &len), 0);
	ck_assert_int_eq(BIO_write(p.c_in, out, (int)len), (int)len);
	char c;
	int r = SSL_read(p.c, &c, 1);
	ck_assert_int_le(r, 0);
	ck_assert_int_eq(SSL_get_error(p.c, r), SSL_ERROR_ZERO_RETURN);

	kb_tls13_writer_wipe(&w);
	free(out);
	free(big);
	free_pair(&p);
}

START_TEST(aes128)
{
	take_over("TLS_AES_128_GCM_SHA256", KB_TLS13_AES_128_GCM_SHA256);
}
END_TEST

START_TEST(aes256)
{
	take_over("TLS_AES_256_GCM_SHA384", KB_TLS13_AES_256_GCM_SHA384);
}
END_TEST

START_TEST(chacha20)
{
	take_over("TLS_CHACHA20_POLY1305_SHA256", KB_TLS13_CHACHA20_POLY1305_SHA256);
}
END_TEST

/* A writer that starts at the wrong record number produces records the
 * peer rejects: the sequence number is really part of the protection. */
START_TEST(wrong_sequence_is_rejected)
{
	struct pair p;
	setup_pair(&p, "TLS_AES_128_GCM_SHA256");
	uint8_t buf[8192];
	int n = BIO_read(p.s_out, buf, sizeof(buf));
	unsigned seq = p.sent + (n > 0 ? records(buf, (size_t)n) : 0);
	if (n > 0)
		BIO_write(p.c_in, buf, n);
	struct kb_tls13_writer w;
	ck_assert_int_eq(
	    kb_tls13_writer_init(&w, KB_TLS13_AES_128_GCM_SHA256, secret, secret_len, seq + 1), 0);
	struct iovec v = {.iov_base = "x", .iov_len = 1};
	uint8_t out[64];
	size_t len;
	ck_assert_int_eq(kb_tls13_seal(&w, KB_TLS13_APPLICATION_DATA, &v, 1, out, &len), 0);
	BIO_write(p.c_in, out, (int)len);
	char c;
	int r = SSL_read(p.c, &c, 1);
	ck_assert_int_le(r, 0);
	ck_assert_int_eq(SSL_get_error(p.c, r), SSL_ERROR_SSL);
	ERR_clear_error();
	kb_tls13_writer_wipe(&w);
	free_pair(&p);
}
END_TEST

START_TEST(arguments)
{
	struct kb_tls13_writer w;
	uint8_t s[48] = {0};
	ck_assert_int_eq(kb_tls13_writer_init(&w, 0x1304, s, 32, 0), -ENOTSUP); /* AES-128-CCM */
	ck_assert_int_eq(kb_tls13_writer_init(&w, KB_TLS13_AES_128_GCM_SHA256, s, 48, 0), -EINVAL);
	ck_assert_int_eq(kb_tls13_writer_init(&w, KB_TLS13_AES_256_GCM_SHA384, s, 32, 0), -EINVAL);
	ck_assert(!kb_tls13_supported(0xc02f));
	ck_assert(kb_tls13_supported(KB_TLS13_CHACHA20_POLY1305_SHA256));
	ck_assert_uint_eq(kb_tls13_sealed_size(0), KB_TLS13_OVERHEAD);
	ck_assert_uint_eq(kb_tls13_sealed_size(16384), 16384 + KB_TLS13_OVERHEAD);
	ck_assert_uint_eq(kb_tls13_sealed_size(16385), 16385 + 2 * KB_TLS13_OVERHEAD);
	/* the record budget of a key */
	ck_assert_int_eq(kb_tls13_writer_init(&w, KB_TLS13_AES_128_GCM_SHA256, s, 32, 1ull << 24),
			 0);
	struct iovec v = {.iov_base = "x", .iov_len = 1};
	uint8_t out[64];
	size_t len;
	ck_assert_int_eq(kb_tls13_seal(&w, KB_TLS13_APPLICATION_DATA, &v, 1, out, &len),
			 -EOVERFLOW);
	kb_tls13_writer_wipe(&w);
}
END_TEST

/* Seals `text` as pieces of the given sizes (cycled; 0 ends the list; the
 * 64th piece takes the rest) under a fresh writer for `suite` at record 7,
 * into out. */
static size_t seal_in_pieces(unsigned suite, const uint8_t *key, const char *text, size_t len,
			     const size_t *sizes, uint8_t *out)
{
	struct iovec v[64];
	int n = 0;
	size_t at = 0;
	for (int k = 0; at < len; k = sizes[k + 1] ? k + 1 : 0) {
		size_t take = sizes[k] < len - at && n < 63 ? sizes[k] : len - at;
		v[n++] = (struct iovec){.iov_base = (void *)(text + at), .iov_len = take};
		at += take;
	}
	struct kb_tls13_writer w;
	size_t klen = suite == KB_TLS13_AES_256_GCM_SHA384 ? 48 : 32;
	ck_assert_int_eq(kb_tls13_writer_init(&w, suite, key, klen, 7), 0);
	size_t olen = 0;
	ck_assert_int_eq(kb_tls13_seal(&w, KB_TLS13_APPLICATION_DATA, v, n, out, &olen), 0);
	kb_tls13_writer_wipe(&w);
	return olen;
}

/* How the plaintext is cut into pieces (a watch event is a chunk head,
 * its line and "\r\n"; small pieces are gathered before the cipher sees
 * them) changes no byte of the records: each cut gives what one piece
 * gives, for every suite, across record boundaries too. */
START_TEST(pieces_do_not_change_the_record)
{
	static const unsigned suites[] = {KB_TLS13_AES_128_GCM_SHA256, KB_TLS13_AES_256_GCM_SHA384,
					  KB_TLS13_CHACHA20_POLY1305_SHA256};
	static const size_t cuts[][8] = {
	    {5, 3918, 2, 0}, /* a watch event: head, line, tail */
	    {1, 0},          /* byte by byte (63 bytes, then the rest) */
	    {15, 17, 31, 33, 0},
	    {16, 32, 48, 0},
	    {3, 5, 7, 11, 13, 0},
	    {40, 2, 80, 1, 0},
	    {20000, 7, 0}, /* a record boundary inside a piece */
	};
	uint8_t key[48];
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);
	size_t len = 20100;
	char *text = malloc(len);
	for (size_t i = 0; i < len; i++)
		text[i] = (char)('A' + i % 53);
	size_t cap = kb_tls13_sealed_size(len);
	uint8_t *one = malloc(cap), *cut = malloc(cap);
	for (size_t s = 0; s < 3; s++) {
		for (size_t total = 1; total <= len; total = total * 3 + 5) {
			size_t whole[] = {total, 0};
			size_t n1 = seal_in_pieces(suites[s], key, text, total, whole, one);
			ck_assert_uint_eq(n1, kb_tls13_sealed_size(total));
			for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
				size_t n2 =
				    seal_in_pieces(suites[s], key, text, total, cuts[c], cut);
				ck_assert_uint_eq(n2, n1);
				ck_assert_mem_eq(cut, one, n1);
			}
		}
	}
	free(one);
	free(cut);
	free(text);
}
END_TEST

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kb-tls13-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(kb_pki_ensure(dir, NULL, 0, "admin", NULL, 0), 0);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static Suite *suite(void)
{
	Suite *s = suite_create("tls13");
	TCase *tc = tcase_create("writer");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, aes128);
	tcase_add_test(tc, aes256);
	tcase_add_test(tc, chacha20);
	tcase_add_test(tc, wrong_sequence_is_rejected);
	tcase_add_test(tc, arguments);
	tcase_add_test(tc, pieces_do_not_change_the_record);
	suite_add_tcase(s, tc);
	return s;
}
