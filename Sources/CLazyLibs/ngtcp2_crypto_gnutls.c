/// ngtcp2's GnuTLS crypto helpers (callbacks handed to ngtcp2, session set-up, retry tokens), bound on first use.
///
/// The library needs libngtcp2 and libgnutls itself (its own DT_NEEDED), so loading it maps the same copies the
/// other two tables use.
#include "lazy_library.h"

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define LAZY_LIBRARY lazy_ngtcp2_crypto_gnutls
#define NGTCP2_CRYPTO_GNUTLS_FUNCTIONS(F, V, M)                                                                   \
    F(int, ngtcp2_crypto_gnutls_configure_client_session, (gnutls_session_t session), (session))                 \
    F(int, ngtcp2_crypto_gnutls_configure_server_session, (gnutls_session_t session), (session))                 \
    F(int, ngtcp2_crypto_client_initial_cb, (ngtcp2_conn *conn, void *user_data), (conn, user_data))             \
    F(int, ngtcp2_crypto_recv_client_initial_cb, (ngtcp2_conn *conn, const ngtcp2_cid *dcid, void *user_data),  \
      (conn, dcid, user_data))                                                                                   \
    F(int, ngtcp2_crypto_recv_crypto_data_cb, (ngtcp2_conn *conn, ngtcp2_crypto_level crypto_level,              \
                                               uint64_t offset, const uint8_t *data, size_t datalen, void *user_data), \
      (conn, crypto_level, offset, data, datalen, user_data))                                                    \
    F(int, ngtcp2_crypto_recv_retry_cb, (ngtcp2_conn *conn, const ngtcp2_pkt_hd *hd, void *user_data),           \
      (conn, hd, user_data))                                                                                     \
    F(int, ngtcp2_crypto_encrypt_cb, (uint8_t *dest, const ngtcp2_crypto_aead *aead,                             \
                                      const ngtcp2_crypto_aead_ctx *aead_ctx, const uint8_t *plaintext,          \
                                      size_t plaintextlen, const uint8_t *nonce, size_t noncelen,                \
                                      const uint8_t *aad, size_t aadlen),                                        \
      (dest, aead, aead_ctx, plaintext, plaintextlen, nonce, noncelen, aad, aadlen))                             \
    F(int, ngtcp2_crypto_decrypt_cb, (uint8_t *dest, const ngtcp2_crypto_aead *aead,                             \
                                      const ngtcp2_crypto_aead_ctx *aead_ctx, const uint8_t *ciphertext,         \
                                      size_t ciphertextlen, const uint8_t *nonce, size_t noncelen,               \
                                      const uint8_t *aad, size_t aadlen),                                        \
      (dest, aead, aead_ctx, ciphertext, ciphertextlen, nonce, noncelen, aad, aadlen))                           \
    F(int, ngtcp2_crypto_hp_mask_cb, (uint8_t *dest, const ngtcp2_crypto_cipher *hp,                             \
                                      const ngtcp2_crypto_cipher_ctx *hp_ctx, const uint8_t *sample),            \
      (dest, hp, hp_ctx, sample))                                                                                \
    F(int, ngtcp2_crypto_update_key_cb, (ngtcp2_conn *conn, uint8_t *rx_secret, uint8_t *tx_secret,              \
                                         ngtcp2_crypto_aead_ctx *rx_aead_ctx, uint8_t *rx_iv,                    \
                                         ngtcp2_crypto_aead_ctx *tx_aead_ctx, uint8_t *tx_iv,                    \
                                         const uint8_t *current_rx_secret, const uint8_t *current_tx_secret,     \
                                         size_t secretlen, void *user_data),                                     \
      (conn, rx_secret, tx_secret, rx_aead_ctx, rx_iv, tx_aead_ctx, tx_iv, current_rx_secret, current_tx_secret, \
       secretlen, user_data))                                                                                    \
    V(void, ngtcp2_crypto_delete_crypto_aead_ctx_cb, (ngtcp2_conn *conn, ngtcp2_crypto_aead_ctx *aead_ctx,       \
                                                      void *user_data), (conn, aead_ctx, user_data))             \
    V(void, ngtcp2_crypto_delete_crypto_cipher_ctx_cb, (ngtcp2_conn *conn, ngtcp2_crypto_cipher_ctx *cipher_ctx, \
                                                        void *user_data), (conn, cipher_ctx, user_data))         \
    F(int, ngtcp2_crypto_get_path_challenge_data_cb, (ngtcp2_conn *conn, uint8_t *data, void *user_data),        \
      (conn, data, user_data))                                                                                   \
    F(int, ngtcp2_crypto_version_negotiation_cb, (ngtcp2_conn *conn, uint32_t version,                           \
                                                  const ngtcp2_cid *client_dcid, void *user_data),               \
      (conn, version, client_dcid, user_data))                                                                   \
    F(ngtcp2_ssize, ngtcp2_crypto_generate_retry_token,                                                          \
      (uint8_t *token, const uint8_t *secret, size_t secretlen, uint32_t version, const ngtcp2_sockaddr *remote_addr, \
       ngtcp2_socklen remote_addrlen, const ngtcp2_cid *retry_scid, const ngtcp2_cid *odcid, ngtcp2_tstamp ts),  \
      (token, secret, secretlen, version, remote_addr, remote_addrlen, retry_scid, odcid, ts))                   \
    F(int, ngtcp2_crypto_verify_retry_token,                                                                     \
      (ngtcp2_cid *odcid, const uint8_t *token, size_t tokenlen, const uint8_t *secret, size_t secretlen,        \
       uint32_t version, const ngtcp2_sockaddr *remote_addr, ngtcp2_socklen remote_addrlen, const ngtcp2_cid *dcid, \
       ngtcp2_duration timeout, ngtcp2_tstamp ts),                                                               \
      (odcid, token, tokenlen, secret, secretlen, version, remote_addr, remote_addrlen, dcid, timeout, ts))      \
    F(ngtcp2_ssize, ngtcp2_crypto_write_retry, (uint8_t *dest, size_t destlen, uint32_t version,                 \
                                                const ngtcp2_cid *dcid, const ngtcp2_cid *scid,                  \
                                                const ngtcp2_cid *odcid, const uint8_t *token, size_t tokenlen), \
      (dest, destlen, version, dcid, scid, odcid, token, tokenlen))

LAZY_DEFINE_LIBRARY(lazy_ngtcp2_crypto_gnutls, "libngtcp2_crypto_gnutls.so.2", "libngtcp2-crypto-gnutls2",
                    NGTCP2_CRYPTO_GNUTLS_FUNCTIONS)
