/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tenant PKI (see pki.h): an ECDSA P-256 CA, a serving certificate and client
 * certificates, kept as PEM files, plus the atomic file helpers they use.
 *
 * DESIGN: kb_pki_ensure() is on the path of a tenant's first start, whose
 * target is 15 ms, so it does the minimum: P-256 keys (a fraction of a
 * millisecond each), no RSA, OpenSSL 3.0's costly encoders and decoders
 * avoided where a cheaper call gives the same bytes (set_pubkey,
 * kb_pki_key_from_pem), and the files written as one batch (struct batch):
 * all synced, then renamed, then one directory fsync. Each file still
 * appears atomically (temp + fsync + rename), keys renamed before the
 * certificates that name them, so that a crash leaves either the old pair
 * or a new key with an old certificate, which the next start detects (key
 * mismatch) and re-issues.
 */
#include "lib/pki.h"
#include "lib/pki_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/log.h"
#include "lib/tls.h"
#include "lib/util.h"

#define CA_DAYS          (10 * 365)
#define SERVER_DAYS      365
#define CLIENT_SECONDS   (365L * 86400L)
#define BACKDATE_SECONDS 300L
/* Certificates closer than this to expiry are re-issued. */
#define RENEW_MARGIN_SECONDS (7L * 86400L)
#define MAX_FILE_SIZE        (64L * 1024 * 1024)

void pki_pair_free(struct pki_pair *p)
{
	X509_free(p->cert);
	EVP_PKEY_free(p->key);
	p->cert = NULL;
	p->key = NULL;
}

/* ---- files ---- */

int kb_read_file(const char *path, char **out, size_t *len_out)
{
	int rc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (st.st_size > MAX_FILE_SIZE) {
		rc = -EFBIG;
		goto out;
	}
	size_t cap = (size_t)st.st_size + 1, len = 0;
	char *buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (len + 1 >= cap) {
			char *n = cap * 2 > (size_t)MAX_FILE_SIZE ? NULL : realloc(buf, cap * 2);
			if (!n) {
				free(buf);
				rc = -EFBIG;
				goto out;
			}
			buf = n;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			free(buf);
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	*out = buf;
	if (len_out)
		*len_out = len;
out:
	close(fd);
	return rc;
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

static int dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return snprintf(dir, len, ".") >= (int)len ? -ENAMETOOLONG : 0;
	size_t n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Temp file in the same folder, fsync when `sync`, rename; the folder is
 * not synced. */
static int replace_file(const char *path, const char *data, size_t len, int mode, bool sync)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (fchmod(fd, (mode_t)mode) < 0)
		rc = -errno;
	if (rc == 0)
		rc = write_all(fd, data, len);
	if (rc == 0 && sync && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int kb_write_file_unsynced(const char *path, const char *data, size_t len, int mode)
{
	return replace_file(path, data, len, mode, false);
}

int kb_write_file(const char *path, const char *data, size_t len, int mode)
{
	char dir[PATH_MAX];
	int rc = dir_of(path, dir, sizeof(dir));
	if (rc < 0)
		return rc;
	rc = replace_file(path, data, len, mode, true);
	if (rc < 0)
		return rc;
	return fsync_dir(dir);
}

static int path_join(char *buf, size_t len, const char *dir, const char *name)
{
	if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- PEM ---- */

static char *bio_to_string(BIO *b)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	memcpy(s, data, (size_t)n);
	s[n] = '\0';
	return s;
}

char *pki_cert_pem(X509 *cert)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s = NULL;
	if (b && PEM_write_bio_X509(b, cert) == 1)
		s = bio_to_string(b);
	BIO_free(b);
	return s;
}

/* The 65-byte uncompressed point of a P-256 key into pt: 0, or -EINVAL
 * for any other key. */
static int p256_point(EVP_PKEY *key, unsigned char pt[65])
{
	char group[32];
	size_t n = 0;
	if (EVP_PKEY_get_group_name(key, group, sizeof(group), NULL) != 1 ||
	    strcmp(group, SN_X9_62_prime256v1) != 0 ||
	    EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, pt, 65, &n) != 1 ||
	    n != 65 || pt[0] != POINT_CONVERSION_UNCOMPRESSED) {
		ERR_clear_error();
		return -EINVAL;
	}
	return 0;
}

/*
 * A P-256 key as PKCS#8 DER (RFC 5208 PrivateKeyInfo holding an RFC 5915
 * ECPrivateKey with its public key and without parameters, the curve named
 * in the outer AlgorithmIdentifier): the 138 bytes OpenSSL 3.0's
 * PEM_write_bio_PrivateKey writes for such a key, without the encoder it
 * builds for each key (1.35 M instructions). 0 or -EINVAL (another key).
 */
#define P256_PKCS8_LEN 138
static const unsigned char p8_head[] = {
    0x30, 0x81, 0x87, 0x02, 0x01, 0x00,                         /* SEQ, version 0 */
    0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, /* id-ecPublicKey */
    0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, /* prime256v1 */
    0x07, 0x04, 0x6d, 0x30, 0x6b, 0x02, 0x01, 0x01, 0x04, 0x20, /* ECPrivateKey v1 */
};
static const unsigned char p8_mid[] = {0xa1, 0x44, 0x03, 0x42, 0x00}; /* [1] BIT STRING */

static int p256_pkcs8(EVP_PKEY *key, unsigned char der[P256_PKCS8_LEN])
{
	BIGNUM *d = NULL;
	int rc = p256_point(key, der + sizeof(p8_head) + 32 + sizeof(p8_mid));
	if (rc == 0 && EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &d) != 1)
		rc = -EINVAL;
	if (rc == 0 && BN_bn2binpad(d, der + sizeof(p8_head), 32) != 32)
		rc = -EINVAL;
	BN_clear_free(d);
	ERR_clear_error();
	memcpy(der, p8_head, sizeof(p8_head));
	memcpy(der + sizeof(p8_head) + 32, p8_mid, sizeof(p8_mid));
	return rc;
}

static char *key_pem(EVP_PKEY *key)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s = NULL;
	unsigned char der[P256_PKCS8_LEN];
	int ok;
	if (p256_pkcs8(key, der) == 0)
		ok = b && PEM_write_bio(b, PEM_STRING_PKCS8INF, "", der, sizeof(der)) > 0;
	else
		ok = b && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1;
	OPENSSL_cleanse(der, sizeof(der));
	if (ok)
		s = bio_to_string(b);
	BIO_free_all(b);
	return s;
}

/*
 * The files one ensure() writes, staged: each is written to a temp file in
 * its folder and its writeback started at once (sync_file_range), then
 * commit fsyncs them all, renames them in the order staged (keys before the
 * certificates that name them) and fsyncs the folder once. Every file is
 * durable before the first rename, as when each was synced and renamed in
 * turn, but the disk sees one batch of writes and ext4 one journal commit
 * instead of one per file (six fsyncs took 5-25 ms of a first start).
 */
#define BATCH_MAX 6

struct staged {
	char tmp[PATH_MAX], path[PATH_MAX];
	int fd;
};

struct batch {
	size_t n;
	struct staged f[BATCH_MAX];
};

static int batch_add(struct batch *bt, const char *path, const char *data, int mode)
{
	if (bt->n == BATCH_MAX)
		return -ENOBUFS;
	struct staged *f = &bt->f[bt->n];
	if (snprintf(f->tmp, sizeof(f->tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(f->tmp))
		return -ENAMETOOLONG;
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	bt->n++;
	if (fchmod(f->fd, (mode_t)mode) < 0)
		return -errno;
	int rc = write_all(f->fd, data, strlen(data));
	if (rc == 0)
		sync_file_range(f->fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint: fsync follows */
	return rc;
}

/*
 * fsyncs the staged files side by side, each on a thread of its own (the
 * first on the caller's), so that ext4 commits them in one journal
 * transaction instead of one each: six fsyncs in turn took 5-20 ms of a
 * first start here (0.3-6 ms each), side by side about one fsync's time.
 * (io_uring's IORING_OP_FSYNC would do the same without threads, but a
 * ring made and dropped here upset the loop a libuv server then ran in the
 * same process: tests/unit/lib/test_http.c saw handshakes cut.) A thread
 * that cannot be made leaves its fsync to the caller. 0 or the first
 * fsync's -errno.
 */
struct fsync_job {
	pthread_t thread;
	int fd, rc;
	bool started;
};

static void *fsync_main(void *arg)
{
	struct fsync_job *j = arg;
	j->rc = fsync(j->fd) < 0 ? -errno : 0;
	return NULL;
}

static int fsync_side_by_side(struct batch *bt)
{
	struct fsync_job jobs[BATCH_MAX] = {{0}};
	for (size_t i = 1; i < bt->n; i++) {
		jobs[i].fd = bt->f[i].fd;
		jobs[i].started = pthread_create(&jobs[i].thread, NULL, fsync_main, &jobs[i]) == 0;
	}
	int rc = bt->n > 0 && fsync(bt->f[0].fd) < 0 ? -errno : 0;
	for (size_t i = 1; i < bt->n; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].thread, NULL);
		else
			fsync_main(&jobs[i]);
		if (rc == 0)
			rc = jobs[i].rc;
	}
	return rc;
}

/* Syncs and renames the staged files (rc 0) or drops them (rc < 0). */
static int batch_commit(struct batch *bt, const char *dir, int rc)
{
	if (rc == 0)
		rc = fsync_side_by_side(bt);
	for (size_t i = 0; i < bt->n; i++)
		if (close(bt->f[i].fd) < 0 && rc == 0)
			rc = -errno;
	for (size_t i = 0; i < bt->n; i++)
		if (rc == 0 && rename(bt->f[i].tmp, bt->f[i].path) < 0)
			rc = -errno;
	for (size_t i = 0; i < bt->n; i++)
		if (rc < 0)
			unlink(bt->f[i].tmp); /* the renamed are gone already */
	if (rc == 0 && bt->n > 0)
		rc = fsync_dir(dir);
	bt->n = 0;
	return rc;
}

/* Stages key (0600) then certificate (0644) as dir/<base>.key|.crt. */
static int save_pair(struct batch *bt, const char *dir, const char *base, const struct pki_pair *p)
{
	char path[PATH_MAX], name[64];
	char *kp = key_pem(p->key), *cp = pki_cert_pem(p->cert);
	int rc = (kp && cp) ? 0 : -ENOMEM;
	if (rc == 0) {
		snprintf(name, sizeof(name), "%s.key", base);
		rc = path_join(path, sizeof(path), dir, name);
	}
	if (rc == 0)
		rc = batch_add(bt, path, kp, 0600);
	if (rc == 0) {
		snprintf(name, sizeof(name), "%s.crt", base);
		rc = path_join(path, sizeof(path), dir, name);
	}
	if (rc == 0)
		rc = batch_add(bt, path, cp, 0644);
	if (kp)
		OPENSSL_cleanse(kp, strlen(kp));
	free(kp);
	free(cp);
	return rc;
}

/*
 * Private keys from PEM. OpenSSL 3.0 builds a decoder context for every
 * PEM_read_*PrivateKey (OSSL_DECODER_CTX_new_for_pkey in
 * crypto/encode_decode/decoder_pkey.c, which walks every decoder of every
 * provider): about 4.4 M instructions per key (callgrind), more than half a
 * restart. One context for what kb_pki writes (PKCS#8 "PRIVATE KEY", an EC
 * key) is built once and reused (0.3 M per key); any other PEM (a --pki-dir
 * with an RSA or a SEC1 key) takes the generic path.
 */
static pthread_mutex_t key_dec_lock = PTHREAD_MUTEX_INITIALIZER;
static OSSL_DECODER_CTX *key_dec; /* writes to key_dec_out; process lifetime */
static EVP_PKEY *key_dec_out;

/*
 * The 138 bytes p256_pkcs8 writes (what OpenSSL writes for a P-256 key)
 * taken apart by their layout: the scalar and the point given to
 * EVP_PKEY_fromdata, without a decoder (OpenSSL 3.0 builds one for its
 * first key: 2 M instructions, at every start). NULL for any other DER.
 */
static EVP_PKEY *p256_from_pkcs8(const unsigned char *der, long n)
{
	const size_t priv = sizeof(p8_head), pub = priv + 32 + sizeof(p8_mid);
	if (n != P256_PKCS8_LEN || memcmp(der, p8_head, sizeof(p8_head)) != 0 ||
	    memcmp(der + priv + 32, p8_mid, sizeof(p8_mid)) != 0 || der[pub] != 0x04)
		return NULL;
	EVP_PKEY *k = NULL;
	BIGNUM *d = BN_bin2bn(der + priv, 32, NULL);
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	if (d && b && ctx &&
	    OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, SN_X9_62_prime256v1,
					    0) == 1 &&
	    OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_PRIV_KEY, d) == 1 &&
	    OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, der + pub, 65) == 1 &&
	    (params = OSSL_PARAM_BLD_to_param(b)) && EVP_PKEY_fromdata_init(ctx) == 1 &&
	    EVP_PKEY_fromdata(ctx, &k, EVP_PKEY_KEYPAIR, params) != 1)
		k = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(b);
	BN_clear_free(d);
	return k;
}

static EVP_PKEY *ec_pkcs8_from_der(const unsigned char *der, long n)
{
	EVP_PKEY *k = p256_from_pkcs8(der, n);
	if (k)
		return k;
	const unsigned char *p = der;
	size_t left = (size_t)n;
	pthread_mutex_lock(&key_dec_lock);
	if (!key_dec)
		key_dec = OSSL_DECODER_CTX_new_for_pkey(&key_dec_out, "DER", "PrivateKeyInfo", "EC",
							EVP_PKEY_KEYPAIR, NULL, NULL);
	if (key_dec && OSSL_DECODER_from_data(key_dec, &p, &left) == 1)
		k = key_dec_out;
	else
		EVP_PKEY_free(key_dec_out);
	key_dec_out = NULL;
	pthread_mutex_unlock(&key_dec_lock);
	return k;
}

EVP_PKEY *kb_pki_key_from_pem(const char *pem, size_t len)
{
	KB_CHECK(pem && len <= INT_MAX, NULL);
	char *name = NULL, *hdr = NULL;
	unsigned char *der = NULL;
	long n = 0;
	EVP_PKEY *k = NULL;
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (b && PEM_read_bio(b, &name, &hdr, &der, &n) == 1 &&
	    strcmp(name, PEM_STRING_PKCS8INF) == 0 && hdr[0] == '\0')
		k = ec_pkcs8_from_der(der, n);
	if (!k && b && BIO_reset(b) == 1)
		k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	if (der)
		OPENSSL_cleanse(der, (size_t)n);
	OPENSSL_free(der);
	OPENSSL_free(name);
	OPENSSL_free(hdr);
	BIO_free(b);
	ERR_clear_error();
	return k;
}

/* dir/<name> as a private key, or NULL. */
static EVP_PKEY *read_key(const char *path)
{
	char *pem = NULL;
	size_t len = 0;
	if (kb_read_file(path, &pem, &len) < 0)
		return NULL;
	EVP_PKEY *k = kb_pki_key_from_pem(pem, len);
	OPENSSL_cleanse(pem, len);
	free(pem);
	return k;
}

/* The first certificate in PEM text, or NULL; *one_block: the text holds
 * one PEM block, that certificate (what this module writes). */
static X509 *cert_from_pem(const char *pem, size_t len, bool *one_block)
{
	const char *begin = strstr(pem, "-----BEGIN ");
	*one_block = begin && !strstr(begin + 1, "-----BEGIN ");
	BIO *b = len <= INT_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	return x;
}

/* pki_load_pair, and whether the certificate file holds that one
 * certificate only (one_block, may be NULL). */
static int load_pair(const char *dir, const char *base, struct pki_pair *p, bool *one_block)
{
	char path[PATH_MAX], name[64];
	int rc = -ENOENT;
	bool one = false;
	snprintf(name, sizeof(name), "%s.crt", base);
	if (path_join(path, sizeof(path), dir, name) < 0)
		return -ENAMETOOLONG;
	char *pem = NULL;
	size_t len = 0;
	if (kb_read_file(path, &pem, &len) == 0) {
		p->cert = cert_from_pem(pem, len, &one);
		free(pem);
	}
	if (one_block)
		*one_block = one;
	snprintf(name, sizeof(name), "%s.key", base);
	if (path_join(path, sizeof(path), dir, name) < 0)
		return -ENAMETOOLONG;
	p->key = read_key(path);
	if (p->cert && p->key && X509_check_private_key(p->cert, p->key) == 1)
		rc = 0;
	else
		pki_pair_free(p);
	ERR_clear_error();
	return rc;
}

/* Loads dir/<base>.crt and .key; -ENOENT when either is missing or broken. */
int pki_load_pair(const char *dir, const char *base, struct pki_pair *p)
{
	return load_pair(dir, base, p, NULL);
}

/* ---- building certificates ---- */

int pki_random_serial(X509 *cert)
{
	int rc = -ENOMEM;
	BIGNUM *bn = BN_new();
	if (!bn)
		return rc;
	/* 128 random bits, top bit forced so the length is constant, and
	 * positive as RFC 5280 requires. */
	if (BN_rand(bn, 128, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) == 1 &&
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)))
		rc = 0;
	BN_free(bn);
	return rc;
}

int pki_add_ext(X509 *cert, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	if (!ext)
		return -EINVAL;
	int ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -ENOMEM;
}

static int add_name_entry(X509_NAME *name, const char *field, const char *value)
{
	if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, (const unsigned char *)value, -1,
				       -1, 0) != 1)
		return -EINVAL;
	return 0;
}

/*
 * The certificate's subjectPublicKeyInfo for a P-256 key (what gen_key
 * makes): id-ecPublicKey, the named curve, the uncompressed point (RFC 5480
 * section 2), the bytes X509_set_pubkey writes. X509_set_pubkey in OpenSSL
 * 3.0 encodes the key with an encoder and decodes the result again
 * (X509_PUBKEY_set in crypto/x509/x_pubkey.c), about 2.1 M instructions a
 * certificate; this is a copy of the point. Other keys: X509_set_pubkey.
 */
static int set_pubkey(X509 *cert, EVP_PKEY *key)
{
	unsigned char pt[65];
	if (p256_point(key, pt) < 0)
		return X509_set_pubkey(cert, key) == 1 ? 0 : -ENOMEM;
	unsigned char *enc = OPENSSL_memdup(pt, sizeof(pt));
	if (!enc ||
	    X509_PUBKEY_set0_param(X509_get_X509_PUBKEY(cert),
				   OBJ_nid2obj(NID_X9_62_id_ecPublicKey), V_ASN1_OBJECT,
				   OBJ_nid2obj(NID_X9_62_prime256v1), enc, (int)sizeof(pt)) != 1) {
		OPENSSL_free(enc);
		return -ENOMEM;
	}
	return 0;
}

/* A new certificate for `key`, valid from now - BACKDATE for `seconds`,
 * with the subject set by the caller afterwards. */
static X509 *new_cert(EVP_PKEY *key, long seconds)
{
	X509 *cert = X509_new();
	if (!cert)
		return NULL;
	if (X509_set_version(cert, 2) != 1 || pki_random_serial(cert) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(cert), -BACKDATE_SECONDS) ||
	    !X509_gmtime_adj(X509_getm_notAfter(cert), seconds) || set_pubkey(cert, key) < 0) {
		X509_free(cert);
		return NULL;
	}
	return cert;
}

/*
 * A new P-256 key. EVP_EC_gen builds a key-generation context for every key
 * (EVP_PKEY_Q_keygen: EVP_PKEY_CTX_new_from_name fetches the key manager
 * again each time, 0.7 M instructions a key at a first start, which makes
 * six); one context, initialised once, generates them all.
 */
static pthread_mutex_t keygen_lock = PTHREAD_MUTEX_INITIALIZER;
static EVP_PKEY_CTX *keygen_ctx; /* process lifetime */

static EVP_PKEY_CTX *keygen_ctx_new(void)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	if (!ctx || EVP_PKEY_keygen_init(ctx) != 1 ||
	    EVP_PKEY_CTX_set_group_name(ctx, SN_X9_62_prime256v1) != 1) {
		EVP_PKEY_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static int gen_key(EVP_PKEY **out)
{
	*out = NULL;
	pthread_mutex_lock(&keygen_lock);
	if (!keygen_ctx)
		keygen_ctx = keygen_ctx_new();
	if (keygen_ctx && EVP_PKEY_generate(keygen_ctx, out) != 1)
		*out = NULL;
	pthread_mutex_unlock(&keygen_lock);
	if (!*out) {
		kb_tls_log_errors("pki", "P-256 key generation");
		return -ENOMEM;
	}
	return 0;
}

int kb_pki_new_key(EVP_PKEY **key, char **pem)
{
	KB_CHECK(key && pem, -EINVAL);
	int rc = gen_key(key);
	if (rc < 0)
		return rc;
	*pem = key_pem(*key);
	if (!*pem) {
		EVP_PKEY_free(*key);
		*key = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int make_ca(struct pki_pair *ca)
{
	int rc = gen_key(&ca->key);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	ca->cert = new_cert(ca->key, CA_DAYS * 86400L);
	if (!ca->cert)
		goto fail;
	X509_NAME *name = X509_get_subject_name(ca->cert);
	if (add_name_entry(name, "CN", "kubicle-ca") < 0 ||
	    X509_set_issuer_name(ca->cert, name) != 1)
		goto fail;
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, ca->cert, ca->cert, NULL, NULL, 0);
	if (pki_add_ext(ca->cert, &ctx, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
	    pki_add_ext(ca->cert, &ctx, NID_key_usage,
			"critical,keyCertSign,cRLSign,digitalSignature") < 0 ||
	    pki_add_ext(ca->cert, &ctx, NID_subject_key_identifier, "hash") < 0)
		goto fail;
	if (X509_sign(ca->cert, ca->key, EVP_sha256()) <= 0)
		goto fail;
	return 0;
fail:
	kb_tls_log_errors("pki", "CA");
	pki_pair_free(ca);
	return rc;
}

/* Common leaf extensions and signature. */
static int finish_leaf(X509 *cert, const struct pki_pair *ca, const char *eku)
{
	X509V3_CTX ctx;
	if (X509_set_issuer_name(cert, X509_get_subject_name(ca->cert)) != 1)
		return -ENOMEM;
	X509V3_set_ctx(&ctx, ca->cert, cert, NULL, NULL, 0);
	if (pki_add_ext(cert, &ctx, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    pki_add_ext(cert, &ctx, NID_key_usage, "critical,digitalSignature") < 0 ||
	    pki_add_ext(cert, &ctx, NID_ext_key_usage, eku) < 0 ||
	    pki_add_ext(cert, &ctx, NID_authority_key_identifier, "keyid:always") < 0)
		return -EINVAL;
	if (X509_sign(cert, ca->key, EVP_sha256()) <= 0)
		return -EINVAL;
	return 0;
}

/* One SAN entry: an IP address when `s` parses as one, else a DNS name. */
static GENERAL_NAME *san_entry(const char *s)
{
	GENERAL_NAME *gn = NULL;
	ASN1_OCTET_STRING *ip = a2i_IPADDRESS(s);
	if (ip) {
		gn = GENERAL_NAME_new();
		if (gn)
			GENERAL_NAME_set0_value(gn, GEN_IPADD, ip);
		else
			ASN1_OCTET_STRING_free(ip);
		return gn;
	}
	ERR_clear_error();
	ASN1_IA5STRING *dns = ASN1_IA5STRING_new();
	if (!dns || ASN1_STRING_set(dns, s, -1) != 1 || !(gn = GENERAL_NAME_new())) {
		ASN1_IA5STRING_free(dns);
		return NULL;
	}
	GENERAL_NAME_set0_value(gn, GEN_DNS, dns);
	return gn;
}

static const char *const default_sans[] = {"127.0.0.1", "::1", "localhost"};

/* Every SAN requested: the defaults and then `sans`, empty ones skipped. */
static GENERAL_NAMES *wanted_sans(const char *const *sans, size_t nsans)
{
	GENERAL_NAMES *gens = GENERAL_NAMES_new();
	if (!gens)
		return NULL;
	for (size_t i = 0; i < KB_ARRAY_SIZE(default_sans) + nsans; i++) {
		const char *s = i < KB_ARRAY_SIZE(default_sans)
				    ? default_sans[i]
				    : sans[i - KB_ARRAY_SIZE(default_sans)];
		if (!s || !*s)
			continue;
		GENERAL_NAME *gn = san_entry(s);
		if (!gn || !sk_GENERAL_NAME_push(gens, gn)) {
			GENERAL_NAME_free(gn);
			GENERAL_NAMES_free(gens);
			return NULL;
		}
	}
	return gens;
}

static bool gens_contains(const GENERAL_NAMES *set, const GENERAL_NAME *gn)
{
	for (int i = 0; i < sk_GENERAL_NAME_num(set); i++)
		if (GENERAL_NAME_cmp(sk_GENERAL_NAME_value(set, i), (GENERAL_NAME *)gn) == 0)
			return true;
	return false;
}

/* Set equality (order and duplicates ignored). */
static bool gens_same_set(const GENERAL_NAMES *a, const GENERAL_NAMES *b)
{
	for (int i = 0; i < sk_GENERAL_NAME_num(a); i++)
		if (!gens_contains(b, sk_GENERAL_NAME_value(a, i)))
			return false;
	for (int i = 0; i < sk_GENERAL_NAME_num(b); i++)
		if (!gens_contains(a, sk_GENERAL_NAME_value(b, i)))
			return false;
	return true;
}

static int make_server(const struct pki_pair *ca, const GENERAL_NAMES *gens, struct pki_pair *out)
{
	int rc = gen_key(&out->key);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	out->cert = new_cert(out->key, SERVER_DAYS * 86400L);
	if (!out->cert)
		goto fail;
	if (add_name_entry(X509_get_subject_name(out->cert), "CN", "kubicle") < 0)
		goto fail;
	if (X509_add1_ext_i2d(out->cert, NID_subject_alt_name, (void *)gens, 0,
			      X509V3_ADD_DEFAULT) != 1)
		goto fail;
	rc = finish_leaf(out->cert, ca, "serverAuth");
	if (rc < 0)
		goto fail;
	return 0;
fail:
	kb_tls_log_errors("pki", "serving certificate");
	pki_pair_free(out);
	return rc;
}

static int make_client(const struct pki_pair *ca, const char *user, const char *const *groups,
		       size_t ngroups, long seconds, struct pki_pair *out)
{
	int rc = gen_key(&out->key);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	out->cert = new_cert(out->key, seconds);
	if (!out->cert)
		goto fail;
	X509_NAME *name = X509_get_subject_name(out->cert);
	rc = -EINVAL;
	for (size_t i = 0; i < ngroups; i++)
		if (add_name_entry(name, "O", groups[i]) < 0)
			goto fail;
	if (add_name_entry(name, "CN", user) < 0)
		goto fail;
	rc = finish_leaf(out->cert, ca, "clientAuth");
	if (rc < 0)
		goto fail;
	return 0;
fail:
	kb_tls_log_errors("pki", "client certificate");
	pki_pair_free(out);
	return rc;
}

/* ---- checking existing files ---- */

/* Signed by the CA and valid for a while longer. */
static bool leaf_usable(const struct pki_pair *leaf, const struct pki_pair *ca)
{
	bool ok = X509_verify(leaf->cert, ca->key) == 1 &&
		  X509_check_issued(ca->cert, leaf->cert) == X509_V_OK;
	time_t soon = time(NULL) + RENEW_MARGIN_SECONDS;
	if (ok && X509_cmp_time(X509_get0_notAfter(leaf->cert), &soon) <= 0)
		ok = false;
	ERR_clear_error();
	return ok;
}

static bool ca_usable(const struct pki_pair *ca)
{
	time_t soon = time(NULL) + RENEW_MARGIN_SECONDS;
	bool ok =
	    X509_check_ca(ca->cert) == 1 && X509_cmp_time(X509_get0_notAfter(ca->cert), &soon) > 0;
	ERR_clear_error();
	return ok;
}

static bool server_sans_match(X509 *cert, const GENERAL_NAMES *want)
{
	GENERAL_NAMES *have = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	bool same = have && gens_same_set(have, want);
	GENERAL_NAMES_free(have);
	return same;
}

/* Collects the entries of `nid` in the subject, in order. */
static size_t subject_entries(X509 *cert, int nid, const char **out, size_t max, ASN1_STRING **raw)
{
	X509_NAME *name = X509_get_subject_name(cert);
	size_t n = 0;
	int pos = -1;
	while ((pos = X509_NAME_get_index_by_NID(name, nid, pos)) >= 0 && n < max) {
		raw[n] = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, pos));
		out[n] = (const char *)ASN1_STRING_get0_data(raw[n]);
		n++;
	}
	return n;
}

static bool client_subject_matches(X509 *cert, const char *user, const char *const *groups,
				   size_t ngroups)
{
	const char *cn[2], *o[64];
	ASN1_STRING *raw[64];
	if (ngroups > KB_ARRAY_SIZE(o) - 1)
		return false;
	if (subject_entries(cert, NID_commonName, cn, 2, raw) != 1 || strcmp(cn[0], user) != 0)
		return false;
	if (subject_entries(cert, NID_organizationName, o, KB_ARRAY_SIZE(o), raw) != ngroups)
		return false;
	for (size_t i = 0; i < ngroups; i++)
		if (strcmp(o[i], groups[i]) != 0)
			return false;
	return true;
}

/* ---- public ---- */

/* The PKI kb_pki_ensure_keep leaves in memory (pki.h). */
struct kb_pki {
	char dir[PATH_MAX];
	struct pki_pair ca, server;
	bool one_block; /* ca.crt and server.crt each hold their one certificate */
};

static int ensure_ca(struct batch *bt, const char *dir, struct pki_pair *ca, bool *fresh,
		     bool *one_block)
{
	*fresh = false;
	if (load_pair(dir, "ca", ca, one_block) == 0 && ca_usable(ca))
		return 0;
	pki_pair_free(ca);
	int rc = make_ca(ca);
	if (rc == 0)
		rc = save_pair(bt, dir, "ca", ca);
	if (rc == 0) {
		*fresh = true;
		*one_block = true;
		kb_info("pki", "created CA in %s", dir);
	}
	return rc;
}

/* The serving pair, kept in *keep (its certificate file's shape in
 * *one_block). */
static int ensure_server(struct batch *bt, const char *dir, const struct pki_pair *ca,
			 bool fresh_ca, const char *const *sans, size_t nsans,
			 struct pki_pair *keep, bool *one_block)
{
	struct pki_pair cur = {0}, made = {0};
	GENERAL_NAMES *want = wanted_sans(sans, nsans);
	if (!want)
		return -ENOMEM;
	int rc = 0;
	if (!fresh_ca && load_pair(dir, "server", &cur, one_block) == 0 && leaf_usable(&cur, ca) &&
	    server_sans_match(cur.cert, want)) {
		*keep = cur;
		cur = (struct pki_pair){0};
		goto out;
	}
	rc = make_server(ca, want, &made);
	if (rc == 0)
		rc = save_pair(bt, dir, "server", &made);
	if (rc == 0) {
		kb_info("pki", "issued serving certificate in %s", dir);
		*keep = made;
		*one_block = true;
		made = (struct pki_pair){0};
	}
out:
	pki_pair_free(&cur);
	pki_pair_free(&made);
	GENERAL_NAMES_free(want);
	return rc;
}

/* The client pair; its notAfter in *not_after. */
static int ensure_admin(struct batch *bt, const char *dir, const struct pki_pair *ca, bool fresh_ca,
			const char *user, const char *const *groups, size_t ngroups,
			time_t *not_after)
{
	struct pki_pair cur = {0}, made = {0};
	int rc = 0;
	if (!fresh_ca && pki_load_pair(dir, "admin", &cur) == 0 && leaf_usable(&cur, ca) &&
	    client_subject_matches(cur.cert, user, groups, ngroups)) {
		*not_after = pki_not_after(cur.cert);
		goto out;
	}
	rc = make_client(ca, user, groups, ngroups, CLIENT_SECONDS, &made);
	if (rc == 0)
		rc = save_pair(bt, dir, "admin", &made);
	if (rc == 0)
		*not_after = pki_not_after(made.cert);
out:
	pki_pair_free(&cur);
	pki_pair_free(&made);
	return rc;
}

/*
 * A certificate made here has its key as set_pubkey wrote it, never
 * decoded, and OpenSSL needs the decoded key to serve it or to verify with
 * it (X509_get0_pubkey); such a certificate is replaced by a parse of its
 * own DER, as the file would have given.
 */
static int decoded(struct pki_pair *p)
{
	if (!p->cert || X509_get0_pubkey(p->cert))
		return 0;
	ERR_clear_error();
	unsigned char *der = NULL;
	int n = i2d_X509(p->cert, &der);
	const unsigned char *q = der;
	X509 *x = n > 0 ? d2i_X509(NULL, &q, n) : NULL;
	OPENSSL_free(der);
	if (!x || !X509_get0_pubkey(x)) {
		X509_free(x);
		kb_tls_log_errors("pki", "certificate");
		return -ENOMEM;
	}
	X509_free(p->cert);
	p->cert = x;
	return 0;
}

/*
 * The stamp of the last full check (DIR/.pki-checked). Every start used to
 * check the same files again: parse each certificate (OpenSSL 3.0 builds a
 * decoder for its key: 1.4 M instructions), verify each leaf's signature,
 * for the tenant's pairs and the front-proxy's, about 11 M instructions of
 * a 60 M start on existing data. A check that passed leaves
 * "v1 DIGEST NOT_AFTER": the SHA-256 of what was asked (SANs, user, groups)
 * and of every file's bytes, and the earliest notAfter of the certificates.
 * A start whose files and request hash to DIGEST, while NOT_AFTER is more
 * than the renewal margin away, knows the check would pass again and
 * skips it; anything else (a changed or missing file, other SANs, renewal
 * due, a missing or torn stamp) takes the full check, which writes a new
 * stamp. The stamp is a cache: not synced (a stamp lost in a crash costs
 * one full check), and a read-only --pki-dir simply has none.
 */
#define STAMP_FILE  KB_PKI_STAMP
#define STAMP_FILES 6
/* Bump when the full check asks more of the files: older stamps then no
 * longer match. */
#define STAMP_VERSION "v1"

struct pki_request {
	bool serving;
	const char *const *sans;
	size_t nsans;
	const char *user;
	const char *const *groups;
	size_t ngroups;
	pki_ca_known_fn ca_known; /* NULL, or told the CA's text once it is settled */
	void *ca_arg;
};

/* Tells the request's ca_known the text ca.crt holds (or will hold). */
static void tell_ca(const struct pki_request *rq, const char *pem, size_t len)
{
	if (rq->ca_known)
		rq->ca_known(rq->ca_arg, pem, len);
}

struct pki_texts {
	char *text[STAMP_FILES];
	size_t len[STAMP_FILES];
};

static const char *const files_serving[STAMP_FILES] = {"ca.crt",     "ca.key",    "server.crt",
						       "server.key", "admin.crt", "admin.key"};
static const char *const files_client[STAMP_FILES] = {"ca.crt", "ca.key", "admin.crt", "admin.key"};

static void texts_free(struct pki_texts *t)
{
	for (size_t i = 0; i < STAMP_FILES; i++) {
		if (t->text[i])
			OPENSSL_cleanse(t->text[i], t->len[i]);
		free(t->text[i]);
	}
	memset(t, 0, sizeof(*t));
}

static void digest_str(EVP_MD_CTX *md, const char *s)
{
	EVP_DigestUpdate(md, s ? s : "", (s ? strlen(s) : 0) + 1); /* with its NUL */
}

/* Reads the request's files into t and hashes them with the request into
 * hex[65]. 0, or -errno (a file missing: no stamp can match). */
static int request_digest(const char *dir, const struct pki_request *rq, struct pki_texts *t,
			  char hex[65])
{
	const char *const *files = rq->serving ? files_serving : files_client;
	char path[PATH_MAX];
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	int rc = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md);
		return -ENOMEM;
	}
	digest_str(md, rq->serving ? STAMP_VERSION " serving" : STAMP_VERSION " client");
	for (size_t i = 0; rq->serving && i < KB_ARRAY_SIZE(default_sans); i++)
		digest_str(md, default_sans[i]);
	for (size_t i = 0; i < rq->nsans; i++)
		digest_str(md, rq->sans[i]);
	digest_str(md, "user");
	digest_str(md, rq->user);
	for (size_t i = 0; i < rq->ngroups; i++)
		digest_str(md, rq->groups[i]);
	for (size_t i = 0; rc == 0 && i < STAMP_FILES && files[i]; i++) {
		uint64_t len;
		if ((rc = path_join(path, sizeof(path), dir, files[i])) < 0 ||
		    (rc = kb_read_file(path, &t->text[i], &t->len[i])) < 0)
			break;
		len = t->len[i];
		digest_str(md, files[i]);
		EVP_DigestUpdate(md, &len, sizeof(len));
		EVP_DigestUpdate(md, t->text[i], t->len[i]);
	}
	if (rc == 0 && EVP_DigestFinal_ex(md, d, &n) != 1)
		rc = -ENOMEM;
	EVP_MD_CTX_free(md);
	for (unsigned int i = 0; rc == 0 && i < n && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return rc;
}

/* The stamp names this digest and renewal is not due. */
static bool stamp_matches(const char *dir, const char *hex)
{
	char path[PATH_MAX], *text = NULL, have[65];
	long long not_after = 0;
	bool ok = false;
	if (path_join(path, sizeof(path), dir, STAMP_FILE) < 0 ||
	    kb_read_file(path, &text, NULL) < 0)
		return false;
	if (sscanf(text, STAMP_VERSION " %64[0-9a-f] %lld", have, &not_after) == 2 &&
	    strcmp(have, hex) == 0 && (long long)time(NULL) + RENEW_MARGIN_SECONDS < not_after)
		ok = true;
	free(text);
	return ok;
}

/* Writes the stamp after a full check passed (errors ignored: a cache). */
static void stamp_write(const char *dir, const struct pki_request *rq, time_t not_after)
{
	struct pki_texts t = {0};
	char hex[65], path[PATH_MAX], line[128];
	if (request_digest(dir, rq, &t, hex) == 0 &&
	    path_join(path, sizeof(path), dir, STAMP_FILE) == 0) {
		int n = snprintf(line, sizeof(line), STAMP_VERSION " %s %lld\n", hex,
				 (long long)not_after);
		kb_write_file_unsynced(path, line, (size_t)n, 0600);
	}
	texts_free(&t);
}

/* Parses pair `i` (certificate text i, key text i + 1) of t. */
static int pair_from_texts(const struct pki_texts *t, size_t i, struct pki_pair *p, bool *one)
{
	p->cert = cert_from_pem(t->text[i], t->len[i], one);
	p->key = kb_pki_key_from_pem(t->text[i + 1], t->len[i + 1]);
	if (p->cert && p->key && X509_check_private_key(p->cert, p->key) == 1)
		return 0;
	ERR_clear_error();
	pki_pair_free(p);
	return -ENOENT;
}

/* The stamp matched: what keep holds, from the texts already read. */
static int keep_from_texts(const char *dir, const struct pki_request *rq, const struct pki_texts *t,
			   struct kb_pki *keep)
{
	bool ca_one = false, server_one = false;
	struct pki_pair ca = {0}, server = {0};
	if (pair_from_texts(t, 0, &ca, &ca_one) == 0)
		tell_ca(rq, t->text[0], t->len[0]);
	if (!ca.cert || pair_from_texts(t, 2, &server, &server_one) < 0) {
		pki_pair_free(&ca);
		return -ENOENT;
	}
	snprintf(keep->dir, sizeof(keep->dir), "%s", dir);
	keep->ca = ca;
	keep->server = server;
	keep->one_block = ca_one && server_one;
	return 0;
}

/* The earlier of two notAfters, 0 meaning none. */
static time_t earlier(time_t a, time_t b)
{
	return a == 0 ? b : b == 0 || a < b ? a : b;
}

/* ensure_ca settled the CA: tell its text, the new certificate's PEM (what
 * save_pair stages) or the file's. */
static int tell_new_ca(const char *dir, const struct pki_request *rq, struct pki_pair *ca,
		       bool fresh)
{
	char path[PATH_MAX], *pem = NULL;
	size_t len = 0;
	int rc = 0;
	if (fresh && (pem = pki_cert_pem(ca->cert)))
		len = strlen(pem);
	else if (fresh)
		rc = -ENOMEM;
	else if ((rc = path_join(path, sizeof(path), dir, "ca.crt")) == 0)
		rc = kb_read_file(path, &pem, &len);
	if (rc == 0)
		tell_ca(rq, pem, len);
	free(pem);
	return rc;
}

/* The full check: kb_pki_ensure's files made sure of, kept in *keep when
 * not NULL, the earliest notAfter in *not_after. */
static int ensure_full(const char *dir, const struct pki_request *rq, struct kb_pki *keep,
		       time_t *not_after)
{
	struct pki_pair ca = {0}, server = {0};
	struct batch bt = {0};
	bool fresh = false, ca_one = false, server_one = false;
	time_t admin_na = 0;
	int rc = ensure_ca(&bt, dir, &ca, &fresh, &ca_one);
	if (rc == 0 && rq->ca_known)
		rc = tell_new_ca(dir, rq, &ca, fresh);
	if (rc == 0 && rq->serving)
		rc = ensure_server(&bt, dir, &ca, fresh, rq->sans, rq->nsans, &server, &server_one);
	if (rc == 0)
		rc = ensure_admin(&bt, dir, &ca, fresh, rq->user, rq->groups, rq->ngroups,
				  &admin_na);
	rc = batch_commit(&bt, dir, rc);
	if (rc == 0) {
		*not_after = earlier(pki_not_after(ca.cert), admin_na);
		if (server.cert)
			*not_after = earlier(*not_after, pki_not_after(server.cert));
	}
	if (rc == 0 && keep && (rc = decoded(&ca)) == 0 && (rc = decoded(&server)) == 0) {
		snprintf(keep->dir, sizeof(keep->dir), "%s", dir);
		keep->ca = ca;
		keep->server = server;
		keep->one_block = ca_one && server_one;
		ca = server = (struct pki_pair){0};
	}
	pki_pair_free(&ca);
	pki_pair_free(&server);
	return rc;
}

/* kb_pki_ensure, without the serving certificate when !rq->serving; the
 * CA and serving pairs are kept in *keep when it is not NULL. */
static int ensure(const char *dir, const struct pki_request *rq, struct kb_pki *keep)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct pki_texts t = {0};
	char hex[65];
	int rc = -ENOENT;
	if (request_digest(dir, rq, &t, hex) == 0 && stamp_matches(dir, hex))
		rc = keep ? keep_from_texts(dir, rq, &t, keep) : 0;
	texts_free(&t);
	if (rc == 0)
		return 0;
	time_t not_after = 0;
	rc = ensure_full(dir, rq, keep, &not_after);
	if (rc < 0)
		kb_err("pki", "ensure %s: %s", dir, strerror(-rc));
	else
		stamp_write(dir, rq, not_after);
	return rc;
}

int kb_pki_ensure(const char *dir, const char *const *sans, size_t nsans, const char *admin_user,
		  const char *const *admin_groups, size_t ngroups)
{
	KB_CHECK(dir && admin_user && (ngroups == 0 || admin_groups), -EINVAL);
	KB_CHECK(nsans == 0 || sans, -EINVAL);
	struct pki_request rq = {true, sans, nsans, admin_user, admin_groups, ngroups};
	return ensure(dir, &rq, NULL);
}

int kb_pki_ensure_keep(const char *dir, const char *const *sans, size_t nsans,
		       const char *admin_user, const char *const *admin_groups, size_t ngroups,
		       kb_pki_t **out)
{
	return pki_ensure_keep_tell(dir, sans, nsans, admin_user, admin_groups, ngroups, NULL, NULL,
				    out);
}

int pki_ensure_keep_tell(const char *dir, const char *const *sans, size_t nsans,
			 const char *admin_user, const char *const *admin_groups, size_t ngroups,
			 pki_ca_known_fn ca_known, void *ca_arg, kb_pki_t **out)
{
	KB_CHECK(dir && admin_user && (ngroups == 0 || admin_groups) && out, -EINVAL);
	KB_CHECK(nsans == 0 || sans, -EINVAL);
	KB_CHECK(strlen(dir) < PATH_MAX, -ENAMETOOLONG);
	struct kb_pki *pki = calloc(1, sizeof(*pki));
	if (!pki)
		return -ENOMEM;
	struct pki_request rq = {.serving = true,
				 .sans = sans,
				 .nsans = nsans,
				 .user = admin_user,
				 .groups = admin_groups,
				 .ngroups = ngroups,
				 .ca_known = ca_known,
				 .ca_arg = ca_arg};
	int rc = ensure(dir, &rq, pki);
	if (rc < 0) {
		free(pki);
		return rc;
	}
	*out = pki;
	return 0;
}

void kb_pki_free(kb_pki_t *pki)
{
	if (!pki)
		return;
	pki_pair_free(&pki->ca);
	pki_pair_free(&pki->server);
	free(pki);
}

/*
 * The serving context from the pairs already parsed: each certificate
 * parse costs OpenSSL 3.0 a decoder for its key (about 1.4 M instructions),
 * and reading the files again made three more of them. A ca.crt holding a
 * bundle or a server.crt holding a chain (a --pki-dir the platform filled)
 * takes the files' path, which reads every certificate in them.
 */
int kb_pki_server_ctx(const kb_pki_t *pki, SSL_CTX **out)
{
	KB_CHECK(pki && pki->ca.cert && pki->server.cert && out, -EINVAL);
	if (pki->one_block)
		return kb_tls_server_ctx_mem(pki->server.cert, pki->server.key, pki->ca.cert, out);
	char cert[PATH_MAX], key[PATH_MAX], ca[PATH_MAX];
	int rc;
	if ((rc = path_join(cert, sizeof(cert), pki->dir, "server.crt")) < 0 ||
	    (rc = path_join(key, sizeof(key), pki->dir, "server.key")) < 0 ||
	    (rc = path_join(ca, sizeof(ca), pki->dir, "ca.crt")) < 0)
		return rc;
	return kb_tls_server_ctx(cert, key, ca, out);
}

int kb_pki_signer(const kb_pki_t *pki, kb_pki_ca_t **out)
{
	KB_CHECK(pki && pki->ca.cert && out, -EINVAL);
	return pki_ca_share(&pki->ca, out);
}

int kb_pki_ensure_client_ca(const char *dir, const char *user)
{
	KB_CHECK(dir && user, -EINVAL);
	struct pki_request rq = {.user = user};
	return ensure(dir, &rq, NULL);
}

int kb_pki_issue_client(const char *dir, const char *user, const char *const *groups,
			size_t ngroups, long ttl_seconds, char **cert_pem_out, char **key_pem_out)
{
	KB_CHECK(dir && user && cert_pem_out && key_pem_out, -EINVAL);
	KB_CHECK(ngroups == 0 || groups, -EINVAL);
	struct pki_pair ca = {0}, made = {0};
	int rc = pki_load_pair(dir, "ca", &ca);
	if (rc < 0)
		return rc;
	rc = make_client(&ca, user, groups, ngroups, ttl_seconds > 0 ? ttl_seconds : CLIENT_SECONDS,
			 &made);
	if (rc < 0)
		goto out;
	char *c = pki_cert_pem(made.cert), *k = key_pem(made.key);
	if (!c || !k) {
		free(c);
		free(k);
		rc = -ENOMEM;
		goto out;
	}
	*cert_pem_out = c;
	*key_pem_out = k;
out:
	pki_pair_free(&ca);
	pki_pair_free(&made);
	return rc;
}
