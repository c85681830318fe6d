#ifndef HERALD_COPENSSL_SHIM_H
#define HERALD_COPENSSL_SHIM_H
// OpenSSL from Debian's libssl-dev (3.x). The static inline wrappers stand in for the
// function-like macros Swift cannot import (they expand to SSL_CTX_ctrl / SSL_ctrl calls).
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>

/// Refuses SSLv3, TLS 1.0 and 1.1: TLS 1.2 is the oldest version Herald speaks.
static inline int herald_ssl_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

/// Lets SSL_write accept a different buffer address on retry; memory BIOs never ask for one,
/// but the flag keeps a retry after WANT_READ (handshake) from failing with "bad write retry".
static inline long herald_ssl_ctx_set_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/// Refuses TLS 1.2 renegotiation: a client could otherwise make the loop redo handshakes
/// (CPU) at will, and Herald has no use for it.
static inline void herald_ssl_ctx_no_renegotiation(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
}

/// Server Name Indication for a client connection.
static inline int herald_ssl_set_sni(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// Bytes waiting in a memory BIO.
static inline size_t herald_bio_pending(BIO *bio) {
    return BIO_ctrl_pending(bio);
}

/// An empty memory BIO reports "retry" on read instead of end of file, so SSL_read says
/// WANT_READ while more ciphertext may come.
static inline void herald_bio_set_retry_when_empty(BIO *bio) {
    BIO_set_mem_eof_return(bio, -1);
}
#endif
