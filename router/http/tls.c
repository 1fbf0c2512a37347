/* tls.c — TLS of the client listener (tls.h). */
#include "router/http/tls.h"

#include <stdbool.h>
#include <stdio.h>

#include <h2o.h>
#include <openssl/err.h>
#include <openssl/x509.h>

/* The reason of the last OpenSSL error, or `dflt`. */
static const char *ssl_reason(const char *dflt)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return r != NULL ? r : dflt;
}

SSL_CTX *rt_tls_server_ctx(const char *cert_path, const char *key_path, char *err, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL) {
		snprintf(err, cap, "TLS: cannot create a context: %s", ssl_reason("out of memory"));
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
					 SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_path) != 1) {
		snprintf(err, cap, "router.tls_cert_path: cannot load a PEM certificate chain from %s: %s",
			 cert_path, ssl_reason("unreadable"));
		SSL_CTX_free(ctx);
		return NULL;
	}
	ERR_clear_error();
	bool mismatch = false;
	if (SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM) != 1) {
		/* OpenSSL 3 checks the pair here already. */
		mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
		if (!mismatch) {
			snprintf(err, cap,
				 "router.tls_key_path: cannot load a PEM private key from %s: %s",
				 key_path, ssl_reason("unreadable"));
			SSL_CTX_free(ctx);
			return NULL;
		}
	}
	if (mismatch || SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(err, cap, "router.tls_key_path: the key in %s does not match the certificate "
				   "in %s", key_path, cert_path);
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return NULL;
	}
	h2o_ssl_register_alpn_protocols(ctx, h2o_alpn_protocols);
	return ctx;
}
