/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keys and certificates for a tenant: an ECDSA P-256 CA, a serving
 * certificate and client certificates, all written as PEM files.
 *
 * Threading: blocking file I/O; call at start-up or from a CLI command,
 * never from a loop callback serving requests.
 */
#ifndef KB_PKI_H
#define KB_PKI_H

#include <stddef.h>

/*
 * Makes sure `dir` holds ca.crt/ca.key, server.crt/server.key (SANs:
 * 127.0.0.1, ::1, localhost plus `sans`, each an IP or DNS name) and
 * admin.crt/admin.key (client certificate, CN `admin_user`, O each of
 * `admin_groups`). Existing valid files are kept; the serving certificate is
 * re-issued when its SANs differ from the requested ones. Keys are 0600.
 * Returns 0 or a negative errno.
 */
int kb_pki_ensure(const char *dir, const char *const *sans, size_t nsans, const char *admin_user,
		  const char *const *admin_groups, size_t ngroups);

/*
 * Issues a client certificate signed by the CA in `dir`: writes PEM
 * certificate and key into the malloc'ed *cert_pem and *key_pem (caller
 * frees). `ttl_seconds` 0 means one year.
 */
int kb_pki_issue_client(const char *dir, const char *user, const char *const *groups,
			size_t ngroups, long ttl_seconds, char **cert_pem, char **key_pem);

/* Reads a whole file into a malloc'ed NUL-terminated buffer. */
int kb_read_file(const char *path, char **out, size_t *len_out);
/* Writes atomically (temp file + fsync + rename) with `mode`. */
int kb_write_file(const char *path, const char *data, size_t len, int mode);

#endif
