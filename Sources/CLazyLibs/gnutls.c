/// GnuTLS (the TLS 1.3 inside the QUIC links): the functions `job` calls, bound on first use.
#include "lazy_library.h"

#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>

#define LAZY_LIBRARY lazy_gnutls
#define GNUTLS_FUNCTIONS(F, V, M)                                                                                 \
    F(int, gnutls_init, (gnutls_session_t *session, unsigned int flags), (session, flags))                       \
    V(void, gnutls_deinit, (gnutls_session_t session), (session))                                                \
    F(void *, gnutls_session_get_ptr, (gnutls_session_t session), (session))                                     \
    V(void, gnutls_session_set_ptr, (gnutls_session_t session, void *ptr), (session, ptr))                       \
    F(int, gnutls_priority_set_direct, (gnutls_session_t session, const char *priorities, const char **err_pos), \
      (session, priorities, err_pos))                                                                             \
    F(int, gnutls_credentials_set, (gnutls_session_t session, gnutls_credentials_type_t type, void *cred),       \
      (session, type, cred))                                                                                      \
    F(int, gnutls_alpn_set_protocols, (gnutls_session_t session, const gnutls_datum_t *protocols,                \
                                       unsigned protocols_size, unsigned flags), (session, protocols, protocols_size, flags)) \
    F(int, gnutls_alpn_get_selected_protocol, (gnutls_session_t session, gnutls_datum_t *protocol),              \
      (session, protocol))                                                                                        \
    F(int, gnutls_certificate_allocate_credentials, (gnutls_certificate_credentials_t *res), (res))              \
    V(void, gnutls_certificate_free_credentials, (gnutls_certificate_credentials_t sc), (sc))                    \
    F(const gnutls_datum_t *, gnutls_certificate_get_peers, (gnutls_session_t session, unsigned int *list_size), \
      (session, list_size))                                                                                       \
    V(void, gnutls_certificate_server_set_request, (gnutls_session_t session, gnutls_certificate_request_t req), \
      (session, req))                                                                                             \
    F(int, gnutls_certificate_set_key, (gnutls_certificate_credentials_t res, const char **names, int names_size, \
                                        gnutls_pcert_st *pcert_list, int pcert_list_size, gnutls_privkey_t key),  \
      (res, names, names_size, pcert_list, pcert_list_size, key))                                                 \
    V(void, gnutls_certificate_set_verify_function, (gnutls_certificate_credentials_t cred,                      \
                                                     gnutls_certificate_verify_function *func), (cred, func))     \
    F(gnutls_certificate_type_t, gnutls_certificate_type_get2, (gnutls_session_t session,                        \
                                                                gnutls_ctype_target_t target), (session, target)) \
    F(int, gnutls_pcert_import_rawpk_raw, (gnutls_pcert_st *pcert, const gnutls_datum_t *rawpubkey,              \
                                           gnutls_x509_crt_fmt_t format, unsigned int key_usage, unsigned int flags), \
      (pcert, rawpubkey, format, key_usage, flags))                                                               \
    F(int, gnutls_privkey_init, (gnutls_privkey_t *key), (key))                                                  \
    V(void, gnutls_privkey_deinit, (gnutls_privkey_t key), (key))                                                \
    F(int, gnutls_privkey_import_ecc_raw, (gnutls_privkey_t key, gnutls_ecc_curve_t curve, const gnutls_datum_t *x, \
                                           const gnutls_datum_t *y, const gnutls_datum_t *k), (key, curve, x, y, k)) \
    F(int, gnutls_rnd, (gnutls_rnd_level_t level, void *data, size_t len), (level, data, len))                   \
    M(gnutls_malloc)

LAZY_DEFINE_LIBRARY(lazy_gnutls, "libgnutls.so.30", "libgnutls30", GNUTLS_FUNCTIONS)

/* gnutls_malloc is a variable in libgnutls (the allocator GnuTLS frees with), not a function. Ours starts as,
   and stays, a function that calls whatever the library's variable holds at that moment. */
static void *library_gnutls_malloc(size_t size) {
    gnutls_alloc_function allocate = *(gnutls_alloc_function *)lazy_library_symbol(&lazy_gnutls, LAZY_INDEX(gnutls_malloc));
    return allocate(size);
}
gnutls_alloc_function gnutls_malloc = library_gnutls_malloc;
