/// C wrappers for library entry points Swift cannot call directly:
/// variadic functions (curl_easy_setopt, curl_multi_setopt, curl_easy_getinfo),
/// function-like macros (OpenSSL BIO_get_mem_data), sentinel function pointers
/// (SQLITE_TRANSIENT) and extern const objects that are awkward to import
/// (secp256k1_context_static).
#ifndef BACKGROUNDJOBS_CSHIMS_H
#define BACKGROUNDJOBS_CSHIMS_H

#include <stddef.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>  /* strlen and friends, which Swift modules importing CShims use */
#include <sqlite3.h>
#include <curl/curl.h>
#include <openssl/bio.h>
#include <secp256k1.h>

/* ---- SQLite ---- */
/// sqlite3_bind_text with SQLITE_TRANSIENT (SQLite copies the bytes before returning).
int shim_sqlite3_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int byteCount);
/// sqlite3_bind_blob with SQLITE_TRANSIENT.
int shim_sqlite3_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int byteCount);

/// Installs a busy handler that retries every 2 ms until `timeout_ms` have passed. SQLite's default handler
/// (sqlite3_busy_timeout) backs off to 100 ms sleeps, so a waiter can starve behind a writer that commits
/// batches back to back; polling at a fixed short interval lets it in at the first gap.
int shim_sqlite3_fair_busy_timeout(sqlite3 *db, int timeout_ms);
/// sqlite3_db_config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on) — variadic in C.
int shim_sqlite3_no_checkpoint_on_close(sqlite3 *db, int on);

/* ---- libcurl (curl_easy_setopt and friends are variadic) ---- */
CURLcode shim_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode shim_curl_easy_setopt_pointer(CURL *handle, CURLoption option, const void *value);
CURLcode shim_curl_easy_setopt_offt(CURL *handle, CURLoption option, curl_off_t value);
typedef size_t (*shim_curl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);
CURLcode shim_curl_easy_setopt_write_callback(CURL *handle, shim_curl_data_callback callback);
CURLcode shim_curl_easy_setopt_header_callback(CURL *handle, shim_curl_data_callback callback);
CURLcode shim_curl_easy_setopt_read_callback(CURL *handle, shim_curl_data_callback callback);
CURLMcode shim_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLcode shim_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode shim_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);
/// The result code of a CURLMSG_DONE message (a member of an anonymous union in CURLMsg).
CURLcode shim_curl_msg_result(const CURLMsg *message);

/* ---- Public-key pinning ---- */
/// SHA-256 of the DER SubjectPublicKeyInfo of the first certificate in a PEM buffer: the value
/// libcurl's CURLOPT_PINNEDPUBLICKEY compares against ("sha256//" + base64). Returns 1 on success, 0 otherwise.
int shim_pem_certificate_spki_sha256(const char *pem, size_t length, unsigned char out[32]);

/* ---- OpenSSL's libcrypto (function-like macros) ---- */
long shim_BIO_get_mem_data(BIO *bio, char **data);

/* ---- libsecp256k1 ---- */
/// The static (no-precomputation) context: enough for verification, key parsing and recovery.
const secp256k1_context *shim_secp256k1_context_static(void);

/* ---- Process signals ---- */
/// Installs SIGTERM/SIGINT handlers that only record the request (async-signal-safe); a second signal
/// ends the process at once with exit status 75. Also unblocks both signals: a process spawned by a
/// multi-threaded parent can inherit a mask that blocks them.
void shim_install_termination_handlers(void);
/* SIGTERM/SIGINT exit 75 at once: for the start of a process, before a pass installs the recording handlers. */
void shim_install_early_exit_handlers(void);
/* Makes a libcurl transfer abort (CURLE_ABORTED_BY_CALLBACK) once SIGTERM or SIGINT has been recorded. */
CURLcode shim_curl_easy_abort_on_termination(CURL *handle);
/* The linked libraries' versions, for `job version` (curl: "unavailable" when libcurl cannot be loaded). */
const char *shim_sqlite_version(void);
const char *shim_openssl_version(void);
const char *shim_curl_version(void);
/// The signal number that asked the process to stop, or 0.
int shim_termination_signal(void);
/// Forgets a recorded request (tests).
void shim_reset_termination(void);

/// statfs(2)'s f_type of the filesystem holding `path` (the magic numbers of linux/magic.h); -1 when it fails.
long shim_filesystem_type(const char *path);

/// Closes every descriptor from `from` up in a `posix_spawn` child (glibc's posix_spawn_file_actions_addclosefrom_np).
int shim_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from);

#endif
