/// Loading a lazily bound library: dlopen by SONAME, resolve every listed symbol, or explain why not.
#include "CLazyLibs.h"
#include "lazy_library.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// The libraries by `CLazyLibrary` case, for Swift and for `job version`.
static struct lazy_library *const libraries[CLazyLibraryCount] = {
    [CLazyLibraryCurl] = &lazy_curl,
    [CLazyLibraryGnuTLS] = &lazy_gnutls,
    [CLazyLibraryNgtcp2] = &lazy_ngtcp2,
    [CLazyLibraryNgtcp2CryptoGnuTLS] = &lazy_ngtcp2_crypto_gnutls,
    [CLazyLibraryMicroHTTPD] = &lazy_microhttpd,
    [CLazyLibraryCrypto] = &lazy_crypto,
    [CLazyLibrarySecp256k1] = &lazy_secp256k1,
    [CLazyLibraryZlib] = &lazy_z,
    [CLazyLibraryPQ] = &lazy_pq,
};

/// One lock for all loads: a load happens at most once per library and process, so it is never contended for long.
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/// dlerror's text on one line (it has none today, but the message must stay one line whatever the loader says).
static void one_line(char *text) {
    for (char *c = text; *c; c++) if (*c == '\n' || *c == '\r') *c = ' ';
}

static void load_locked(struct lazy_library *library) {
    /* RTLD_NOW: a library that lacks a symbol, or whose own dependencies are missing, fails here, with a message,
       rather than at some later call with the loader's "symbol lookup error" exit. RTLD_LOCAL: the library's
       symbols stay out of the global scope (we only reach them through this handle), so nothing loaded later
       binds to them by accident. Never unloaded. */
    void *handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(library->message, sizeof library->message,
                 "cannot load %s, which this command needs (install the Debian package %s): %s",
                 library->soname, library->package, why ? why : "unknown reason");
        one_line(library->message);
        __atomic_store_n(&library->state, LAZY_FAILED, __ATOMIC_RELEASE);
        return;
    }
    for (size_t i = 0; i < library->count; i++) {
        dlerror();
        void *address = dlsym(handle, library->symbols[i]);
        if (address == NULL) {
            snprintf(library->message, sizeof library->message,
                     "%s lacks the function %s that this command needs (install a current version of the Debian package %s)",
                     library->soname, library->symbols[i], library->package);
            __atomic_store_n(&library->state, LAZY_FAILED, __ATOMIC_RELEASE);
            return;
        }
        library->addresses[i] = address;
    }
    __atomic_store_n(&library->state, LAZY_LOADED, __ATOMIC_RELEASE);
}

const char *lazy_library_load(struct lazy_library *library) {
    int state = __atomic_load_n(&library->state, __ATOMIC_ACQUIRE);
    if (state == LAZY_UNTRIED) {
        pthread_mutex_lock(&load_lock);
        if (__atomic_load_n(&library->state, __ATOMIC_ACQUIRE) == LAZY_UNTRIED) load_locked(library);
        pthread_mutex_unlock(&load_lock);
        state = __atomic_load_n(&library->state, __ATOMIC_ACQUIRE);
    }
    return state == LAZY_LOADED ? NULL : library->message;
}

void *lazy_library_symbol(struct lazy_library *library, size_t index) {
    if (__atomic_load_n(&library->state, __ATOMIC_ACQUIRE) != LAZY_LOADED) {
        const char *failure = lazy_library_load(library);
        if (failure != NULL) {
            /* The command reached code that needs the library; there is no way back into it from here. */
            fflush(stdout);  /* what the command printed so far stays printed */
            char line[600];
            int length = snprintf(line, sizeof line, "job: %s\n", failure);
            if (length > 0) (void)!write(2, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
            _exit(69);
        }
    }
    return library->addresses[index];
}

const char *clazy_library_load(CLazyLibrary library) {
    if ((unsigned)library >= CLazyLibraryCount) return "unknown library";
    return lazy_library_load(libraries[library]);
}

int clazy_library_is_loaded(CLazyLibrary library) {
    if ((unsigned)library >= CLazyLibraryCount) return 0;
    return __atomic_load_n(&libraries[library]->state, __ATOMIC_ACQUIRE) == LAZY_LOADED;
}

const char *clazy_library_soname(CLazyLibrary library) {
    if ((unsigned)library >= CLazyLibraryCount) return "";
    return libraries[library]->soname;
}

const char *clazy_library_package(CLazyLibrary library) {
    if ((unsigned)library >= CLazyLibraryCount) return "";
    return libraries[library]->package;
}
