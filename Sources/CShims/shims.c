/* posix_spawn_file_actions_addclosefrom_np is a GNU extension of <spawn.h> (glibc 2.34). */
#define _GNU_SOURCE
#include <spawn.h>
#include "CShims.h"
#include "CLazyLibs.h"
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/vfs.h>
#include <pthread.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

int shim_sqlite3_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_TRANSIENT);
}
int shim_sqlite3_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int byteCount) {
    /* A zero-length blob must still bind as a blob, not NULL: pass a non-NULL pointer. */
    static const char empty = 0;
    return sqlite3_bind_blob(stmt, index, byteCount == 0 ? (const void *)&empty : bytes, byteCount, SQLITE_TRANSIENT);
}

static int fair_busy_handler(void *context, int attempts) {
    int timeout_ms = (int)(intptr_t)context;
    if ((long)attempts * 2 >= timeout_ms) return 0;  /* give up: SQLITE_BUSY reaches the caller */
    usleep(2000);
    return 1;
}

int shim_sqlite3_fair_busy_timeout(sqlite3 *db, int timeout_ms) {
    return sqlite3_busy_handler(db, fair_busy_handler, (void *)(intptr_t)timeout_ms);
}

int shim_sqlite3_no_checkpoint_on_close(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on, (int *)0);
}

CURLcode shim_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) { return curl_easy_setopt(handle, option, value); }
CURLcode shim_curl_easy_setopt_pointer(CURL *handle, CURLoption option, const void *value) { return curl_easy_setopt(handle, option, value); }
CURLcode shim_curl_easy_setopt_offt(CURL *handle, CURLoption option, curl_off_t value) { return curl_easy_setopt(handle, option, value); }
CURLcode shim_curl_easy_setopt_write_callback(CURL *handle, shim_curl_data_callback callback) { return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback); }
CURLcode shim_curl_easy_setopt_header_callback(CURL *handle, shim_curl_data_callback callback) { return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback); }
CURLcode shim_curl_easy_setopt_read_callback(CURL *handle, shim_curl_data_callback callback) { return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback); }
CURLMcode shim_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) { return curl_multi_setopt(multi, option, value); }
CURLcode shim_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) { return curl_easy_getinfo(handle, info, value); }
CURLcode shim_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) { return curl_easy_getinfo(handle, info, value); }
CURLcode shim_curl_msg_result(const CURLMsg *message) { return message->data.result; }

int shim_pem_certificate_spki_sha256(const char *pem, size_t length, unsigned char out[32]) {
    if (pem == NULL || length == 0 || length > (size_t)INT32_MAX) return 0;
    int ok = 0;
    unsigned char *der = NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    X509 *certificate = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    EVP_PKEY *key = certificate ? X509_get0_pubkey(certificate) : NULL;
    int derLength = key ? i2d_PUBKEY(key, &der) : -1;
    unsigned int digestLength = 0;
    if (derLength > 0 && EVP_Digest(der, (size_t)derLength, out, &digestLength, EVP_sha256(), NULL) == 1 && digestLength == 32) ok = 1;
    OPENSSL_free(der);
    X509_free(certificate);
    BIO_free(bio);
    return ok;
}

long shim_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

const secp256k1_context *shim_secp256k1_context_static(void) { return clazy_secp256k1_context_static(); }

static volatile sig_atomic_t termination_signal = 0;

static void record_termination(int signo) {
    if (termination_signal != 0) {
        /* Asked twice: the operator means it. 75 = EX_TEMPFAIL, the documented "retry next pass". */
        _exit(75);
    }
    termination_signal = signo;
}

/* Installs `handler` for SIGTERM and SIGINT and unblocks both in this thread: a parent (or a multi-threaded
   parent's fork) may have started us with them blocked, and they would then never arrive. No SA_RESTART: a
   blocking read or poll returns EINTR so the pass notices promptly. */
static void install_termination_handler(void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigset_t wanted;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGTERM);
    sigaddset(&wanted, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &wanted, NULL);
}

void shim_install_termination_handlers(void) { install_termination_handler(record_termination); }

static void exit_at_once(int signo) {
    (void)signo;
    /* Before a pass has begun there is nothing to finish: stop now with the documented "retry next pass". */
    _exit(75);
}

void shim_install_early_exit_handlers(void) { install_termination_handler(exit_at_once); }

int shim_termination_signal(void) { return termination_signal; }

/* libcurl calls this "roughly once per second or sooner" while a transfer runs, idle or not; a non-zero return aborts
   it with CURLE_ABORTED_BY_CALLBACK. So SIGTERM or SIGINT stops a transfer in flight within about a second. */
static int abort_after_termination(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)context; (void)dltotal; (void)dlnow; (void)ultotal; (void)ulnow;
    return termination_signal != 0;
}

CURLcode shim_curl_easy_abort_on_termination(CURL *handle) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, abort_after_termination);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
    return code;
}
void shim_reset_termination(void) { termination_signal = 0; }

const char *shim_sqlite_version(void) { return sqlite3_libversion(); }
const char *shim_openssl_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
const char *shim_curl_version(void) {
    /* libcurl is loaded on first use: `job version` loads it, and says so when it cannot. */
    if (clazy_library_load(CLazyLibraryCurl) != NULL) return "unavailable";
    const curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return info ? info->version : "unknown";
}

long shim_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}

int shim_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
