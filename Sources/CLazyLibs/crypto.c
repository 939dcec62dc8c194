/// OpenSSL's libcrypto (hashes, MACs, AEADs, keys, X.509 for every module): the functions `job` calls, bound on
/// first use, so commands that do no cryptography (`--help`, `status`, `list`) never map and relocate it.
///
/// Rows from `scripts/lazy-library-table libcrypto.so.3 openssl/evp.h …` (the headers below).
#include "lazy_library.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/sha.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/kdf.h>
#include <openssl/bio.h>

#define LAZY_LIBRARY lazy_crypto
#define CRYPTO_FUNCTIONS(F, V, M) \
    V(void, ASN1_OBJECT_free, (ASN1_OBJECT *a0), (a0)) \
    F(int, ASN1_STRING_length, (const ASN1_STRING *a0), (a0)) \
    F(long, BIO_ctrl, (BIO *a0, int a1, long a2, void *a3), (a0, a1, a2, a3)) \
    F(int, BIO_free, (BIO *a0), (a0)) \
    F(BIO *, BIO_new, (const BIO_METHOD *a0), (a0)) \
    F(BIO *, BIO_new_mem_buf, (const void *a0, int a1), (a0, a1)) \
    F(const BIO_METHOD *, BIO_s_mem, (void), ()) \
    F(BIGNUM *, BN_bin2bn, (const unsigned char *a0, int a1, BIGNUM *a2), (a0, a1, a2)) \
    F(int, BN_bn2binpad, (const BIGNUM *a0, unsigned char *a1, int a2), (a0, a1, a2)) \
    V(void, BN_free, (BIGNUM *a0), (a0)) \
    V(void, CRYPTO_free, (void *a0, const char *a1, int a2), (a0, a1, a2)) \
    F(int, CRYPTO_memcmp, (const void *a0, const void *a1, size_t a2), (a0, a1, a2)) \
    V(void, ECDSA_SIG_free, (ECDSA_SIG *a0), (a0)) \
    F(const BIGNUM *, ECDSA_SIG_get0_r, (const ECDSA_SIG *a0), (a0)) \
    F(const BIGNUM *, ECDSA_SIG_get0_s, (const ECDSA_SIG *a0), (a0)) \
    F(ECDSA_SIG *, ECDSA_SIG_new, (void), ()) \
    F(int, ECDSA_SIG_set0, (ECDSA_SIG *a0, BIGNUM *a1, BIGNUM *a2), (a0, a1, a2)) \
    V(void, ERR_clear_error, (void), ()) \
    F(int, EVP_CIPHER_CTX_ctrl, (EVP_CIPHER_CTX *a0, int a1, int a2, void *a3), (a0, a1, a2, a3)) \
    V(void, EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX *a0), (a0)) \
    F(EVP_CIPHER_CTX *, EVP_CIPHER_CTX_new, (void), ()) \
    F(int, EVP_DecryptFinal_ex, (EVP_CIPHER_CTX *a0, unsigned char *a1, int *a2), (a0, a1, a2)) \
    F(int, EVP_DecryptInit_ex, (EVP_CIPHER_CTX *a0, const EVP_CIPHER *a1, ENGINE *a2, const unsigned char *a3, const unsigned char *a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_DecryptUpdate, (EVP_CIPHER_CTX *a0, unsigned char *a1, int *a2, const unsigned char *a3, int a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_Digest, (const void *a0, size_t a1, unsigned char *a2, unsigned int *a3, const EVP_MD *a4, ENGINE *a5), (a0, a1, a2, a3, a4, a5)) \
    F(int, EVP_DigestSign, (EVP_MD_CTX *a0, unsigned char *a1, size_t *a2, const unsigned char *a3, size_t a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_DigestSignInit, (EVP_MD_CTX *a0, EVP_PKEY_CTX **a1, const EVP_MD *a2, ENGINE *a3, EVP_PKEY *a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_DigestVerify, (EVP_MD_CTX *a0, const unsigned char *a1, size_t a2, const unsigned char *a3, size_t a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_DigestVerifyInit, (EVP_MD_CTX *a0, EVP_PKEY_CTX **a1, const EVP_MD *a2, ENGINE *a3, EVP_PKEY *a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_EncryptFinal_ex, (EVP_CIPHER_CTX *a0, unsigned char *a1, int *a2), (a0, a1, a2)) \
    F(int, EVP_EncryptInit_ex, (EVP_CIPHER_CTX *a0, const EVP_CIPHER *a1, ENGINE *a2, const unsigned char *a3, const unsigned char *a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_EncryptUpdate, (EVP_CIPHER_CTX *a0, unsigned char *a1, int *a2, const unsigned char *a3, int a4), (a0, a1, a2, a3, a4)) \
    V(void, EVP_KDF_CTX_free, (EVP_KDF_CTX *a0), (a0)) \
    F(EVP_KDF_CTX *, EVP_KDF_CTX_new, (EVP_KDF *a0), (a0)) \
    F(int, EVP_KDF_derive, (EVP_KDF_CTX *a0, unsigned char *a1, size_t a2, const OSSL_PARAM a3[]), (a0, a1, a2, a3)) \
    F(EVP_KDF *, EVP_KDF_fetch, (OSSL_LIB_CTX *a0, const char *a1, const char *a2), (a0, a1, a2)) \
    V(void, EVP_KDF_free, (EVP_KDF *a0), (a0)) \
    F(EVP_MAC_CTX *, EVP_MAC_CTX_dup, (const EVP_MAC_CTX *a0), (a0)) \
    V(void, EVP_MAC_CTX_free, (EVP_MAC_CTX *a0), (a0)) \
    F(EVP_MAC_CTX *, EVP_MAC_CTX_new, (EVP_MAC *a0), (a0)) \
    F(int, EVP_MAC_CTX_set_params, (EVP_MAC_CTX *a0, const OSSL_PARAM a1[]), (a0, a1)) \
    F(EVP_MAC *, EVP_MAC_fetch, (OSSL_LIB_CTX *a0, const char *a1, const char *a2), (a0, a1, a2)) \
    F(int, EVP_MAC_final, (EVP_MAC_CTX *a0, unsigned char *a1, size_t *a2, size_t a3), (a0, a1, a2, a3)) \
    V(void, EVP_MAC_free, (EVP_MAC *a0), (a0)) \
    F(int, EVP_MAC_init, (EVP_MAC_CTX *a0, const unsigned char *a1, size_t a2, const OSSL_PARAM a3[]), (a0, a1, a2, a3)) \
    F(int, EVP_MAC_update, (EVP_MAC_CTX *a0, const unsigned char *a1, size_t a2), (a0, a1, a2)) \
    V(void, EVP_MD_CTX_free, (EVP_MD_CTX *a0), (a0)) \
    F(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ()) \
    V(void, EVP_PKEY_CTX_free, (EVP_PKEY_CTX *a0), (a0)) \
    F(EVP_PKEY_CTX *, EVP_PKEY_CTX_new, (EVP_PKEY *a0, ENGINE *a1), (a0, a1)) \
    F(EVP_PKEY_CTX *, EVP_PKEY_CTX_new_from_name, (OSSL_LIB_CTX *a0, const char *a1, const char *a2), (a0, a1, a2)) \
    F(int, EVP_PKEY_CTX_set_group_name, (EVP_PKEY_CTX *a0, const char *a1), (a0, a1)) \
    F(int, EVP_PKEY_derive, (EVP_PKEY_CTX *a0, unsigned char *a1, size_t *a2), (a0, a1, a2)) \
    F(int, EVP_PKEY_derive_init, (EVP_PKEY_CTX *a0), (a0)) \
    F(int, EVP_PKEY_derive_set_peer, (EVP_PKEY_CTX *a0, EVP_PKEY *a1), (a0, a1)) \
    V(void, EVP_PKEY_free, (EVP_PKEY *a0), (a0)) \
    F(int, EVP_PKEY_generate, (EVP_PKEY_CTX *a0, EVP_PKEY **a1), (a0, a1)) \
    F(int, EVP_PKEY_get_bits, (const EVP_PKEY *a0), (a0)) \
    F(int, EVP_PKEY_get_base_id, (const EVP_PKEY *a0), (a0)) \
    F(int, EVP_PKEY_get_group_name, (const EVP_PKEY *a0, char *a1, size_t a2, size_t *a3), (a0, a1, a2, a3)) \
    F(int, EVP_PKEY_get_octet_string_param, (const EVP_PKEY *a0, const char *a1, unsigned char *a2, size_t a3, size_t *a4), (a0, a1, a2, a3, a4)) \
    F(int, EVP_PKEY_get_raw_public_key, (const EVP_PKEY *a0, unsigned char *a1, size_t *a2), (a0, a1, a2)) \
    F(int, EVP_PKEY_keygen_init, (EVP_PKEY_CTX *a0), (a0)) \
    F(EVP_PKEY *, EVP_PKEY_new_raw_private_key, (int a0, ENGINE *a1, const unsigned char *a2, size_t a3), (a0, a1, a2, a3)) \
    F(EVP_PKEY *, EVP_PKEY_new_raw_public_key, (int a0, ENGINE *a1, const unsigned char *a2, size_t a3), (a0, a1, a2, a3)) \
    F(int, EVP_PKEY_set_utf8_string_param, (EVP_PKEY *a0, const char *a1, const char *a2), (a0, a1, a2)) \
    F(const EVP_CIPHER *, EVP_aes_256_gcm, (void), ()) \
    F(const EVP_CIPHER *, EVP_chacha20_poly1305, (void), ()) \
    F(const EVP_MD *, EVP_sha256, (void), ()) \
    F(const EVP_MD *, EVP_sha384, (void), ()) \
    F(const EVP_MD *, EVP_sha3_256, (void), ()) \
    F(ASN1_OBJECT *, OBJ_txt2obj, (const char *a0, int a1), (a0, a1)) \
    V(void, OPENSSL_cleanse, (void *a0, size_t a1), (a0, a1)) \
    V(void, OPENSSL_sk_free, (OPENSSL_STACK * a0), (a0)) \
    F(OPENSSL_STACK *, OPENSSL_sk_new_null, (void), ()) \
    F(int, OPENSSL_sk_num, (const OPENSSL_STACK * a0), (a0)) \
    F(int, OPENSSL_sk_push, (OPENSSL_STACK *a0, const void *a1), (a0, a1)) \
    F(void *, OPENSSL_sk_value, (const OPENSSL_STACK * a0, int a1), (a0, a1)) \
    F(OSSL_PARAM, OSSL_PARAM_construct_end, (void), ()) \
    F(OSSL_PARAM, OSSL_PARAM_construct_octet_string, (const char *a0, void *a1, size_t a2), (a0, a1, a2)) \
    F(OSSL_PARAM, OSSL_PARAM_construct_utf8_string, (const char *a0, char *a1, size_t a2), (a0, a1, a2)) \
    F(const char *, OpenSSL_version, (int a0), (a0)) \
    F(EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO *a0, EVP_PKEY **a1, pem_password_cb *a2, void *a3), (a0, a1, a2, a3)) \
    F(X509 *, PEM_read_bio_X509, (BIO *a0, X509 **a1, pem_password_cb *a2, void *a3), (a0, a1, a2, a3)) \
    F(int, PEM_write_bio_PrivateKey, (BIO *a0, const EVP_PKEY *a1, const EVP_CIPHER *a2, const unsigned char *a3, int a4, pem_password_cb *a5, void *a6), (a0, a1, a2, a3, a4, a5, a6)) \
    F(int, RAND_bytes, (unsigned char *a0, int a1), (a0, a1)) \
    V(void, X509_STORE_CTX_free, (X509_STORE_CTX *a0), (a0)) \
    F(struct stack_st_X509 *, X509_STORE_CTX_get0_chain, (const X509_STORE_CTX *a0), (a0)) \
    F(int, X509_STORE_CTX_init, (X509_STORE_CTX *a0, X509_STORE *a1, X509 *a2, struct stack_st_X509 *a3), (a0, a1, a2, a3)) \
    F(X509_STORE_CTX *, X509_STORE_CTX_new, (void), ()) \
    V(void, X509_STORE_CTX_set_depth, (X509_STORE_CTX *a0, int a1), (a0, a1)) \
    V(void, X509_STORE_CTX_set_time, (X509_STORE_CTX *a0, unsigned long a1, time_t a2), (a0, a1, a2)) \
    F(int, X509_STORE_add_cert, (X509_STORE *a0, X509 *a1), (a0, a1)) \
    V(void, X509_STORE_free, (X509_STORE *a0), (a0)) \
    F(X509_STORE *, X509_STORE_new, (void), ()) \
    F(int, X509_cmp, (const X509 *a0, const X509 *a1), (a0, a1)) \
    V(void, X509_free, (X509 *a0), (a0)) \
    F(const ASN1_OCTET_STRING *, X509_get0_authority_key_id, (X509 *a0), (a0)) \
    F(EVP_PKEY *, X509_get0_pubkey, (const X509 *a0), (a0)) \
    F(int, X509_get_ext_by_OBJ, (const X509 *a0, const ASN1_OBJECT *a1, int a2), (a0, a1, a2)) \
    F(uint32_t, X509_get_extension_flags, (X509 *a0), (a0)) \
    F(uint32_t, X509_get_key_usage, (X509 *a0), (a0)) \
    F(int, X509_verify_cert, (X509_STORE_CTX *a0), (a0)) \
    F(ECDSA_SIG *, d2i_ECDSA_SIG, (ECDSA_SIG **a0, const unsigned char **a1, long a2), (a0, a1, a2)) \
    F(EVP_PKEY *, d2i_PUBKEY, (EVP_PKEY **a0, const unsigned char **a1, long a2), (a0, a1, a2)) \
    F(X509 *, d2i_X509, (X509 **a0, const unsigned char **a1, long a2), (a0, a1, a2)) \
    F(int, i2d_ECDSA_SIG, (const ECDSA_SIG *a0, unsigned char **a1), (a0, a1)) \
    F(int, i2d_PUBKEY, (const EVP_PKEY *a0, unsigned char **a1), (a0, a1)) \
    F(int, i2d_X509, (const X509 *a0, unsigned char **a1), (a0, a1))

LAZY_DEFINE_LIBRARY(lazy_crypto, "libcrypto.so.3", "libssl3", CRYPTO_FUNCTIONS)
