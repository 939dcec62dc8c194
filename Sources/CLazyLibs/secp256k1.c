/// libsecp256k1 (Ethereum keys and signatures: the token pool's DIDs), bound on first use.
///
/// Rows from `scripts/lazy-library-table libsecp256k1.so.1 secp256k1.h secp256k1_recovery.h …`.
#include "lazy_library.h"
#include "CLazyLibs.h"

#include <secp256k1.h>
#include <secp256k1_recovery.h>
#include <secp256k1_extrakeys.h>

#define LAZY_LIBRARY lazy_secp256k1
#define SECP256K1_FUNCTIONS(F, V, M) \
    F(secp256k1_context*, secp256k1_context_create, (unsigned int a0), (a0)) \
    V(void, secp256k1_context_destroy, (secp256k1_context* a0), (a0)) \
    F(int, secp256k1_context_randomize, (secp256k1_context* a0, const unsigned char *a1), (a0, a1)) \
    M(secp256k1_context_static) \
    F(int, secp256k1_ec_pubkey_create, (const secp256k1_context* a0, secp256k1_pubkey *a1, const unsigned char *a2), (a0, a1, a2)) \
    F(int, secp256k1_ec_pubkey_parse, (const secp256k1_context* a0, secp256k1_pubkey* a1, const unsigned char *a2, size_t a3), (a0, a1, a2, a3)) \
    F(int, secp256k1_ec_pubkey_serialize, (const secp256k1_context* a0, unsigned char *a1, size_t *a2, const secp256k1_pubkey* a3, unsigned int a4), (a0, a1, a2, a3, a4)) \
    F(int, secp256k1_ec_seckey_verify, (const secp256k1_context* a0, const unsigned char *a1), (a0, a1)) \
    F(int, secp256k1_ecdsa_recover, (const secp256k1_context* a0, secp256k1_pubkey *a1, const secp256k1_ecdsa_recoverable_signature *a2, const unsigned char *a3), (a0, a1, a2, a3)) \
    F(int, secp256k1_ecdsa_recoverable_signature_parse_compact, (const secp256k1_context* a0, secp256k1_ecdsa_recoverable_signature* a1, const unsigned char *a2, int a3), (a0, a1, a2, a3)) \
    F(int, secp256k1_ecdsa_sign, (const secp256k1_context* a0, secp256k1_ecdsa_signature *a1, const unsigned char *a2, const unsigned char *a3, secp256k1_nonce_function a4, const void *a5), (a0, a1, a2, a3, a4, a5)) \
    F(int, secp256k1_ecdsa_signature_normalize, (const secp256k1_context* a0, secp256k1_ecdsa_signature *a1, const secp256k1_ecdsa_signature *a2), (a0, a1, a2)) \
    F(int, secp256k1_ecdsa_signature_parse_compact, (const secp256k1_context* a0, secp256k1_ecdsa_signature* a1, const unsigned char *a2), (a0, a1, a2)) \
    F(int, secp256k1_ecdsa_signature_serialize_compact, (const secp256k1_context* a0, unsigned char *a1, const secp256k1_ecdsa_signature* a2), (a0, a1, a2)) \
    F(int, secp256k1_ecdsa_verify, (const secp256k1_context* a0, const secp256k1_ecdsa_signature *a1, const unsigned char *a2, const secp256k1_pubkey *a3), (a0, a1, a2, a3))

LAZY_DEFINE_LIBRARY(lazy_secp256k1, "libsecp256k1.so.1", "libsecp256k1-1", SECP256K1_FUNCTIONS)

/* secp256k1_context_static is a variable (a const pointer to the library's static context), not a function:
   its address in the library is found with the rest, and this reads it. */
const struct secp256k1_context_struct *clazy_secp256k1_context_static(void) {
    return *(const secp256k1_context *const *)lazy_library_symbol(&lazy_secp256k1, LAZY_INDEX(secp256k1_context_static));
}
