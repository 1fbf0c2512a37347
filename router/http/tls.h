/* tls.h — TLS of the client listener (tls.c): certificate chain and key
 * files (PEM), ALPN h2 and http/1.1. */
#ifndef SY_ROUTER_HTTP_TLS_H
#define SY_ROUTER_HTTP_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

/* A server SSL_CTX for the certificate chain in `cert_path` and the private
 * key in `key_path` (both PEM; the key must match the certificate): TLS 1.2
 * and later, ALPN h2 / http/1.1. NULL with the reason in err. The caller
 * owns the context (SSL_CTX_free). */
SSL_CTX *rt_tls_server_ctx(const char *cert_path, const char *key_path, char *err, size_t cap);

#endif
