/// The system libraries `job` loads only when a command first uses them (see lazy_library.h for the mechanism).
///
/// The executable has no DT_NEEDED entry for these: `job --help`, `job status` and every command that does no
/// networking start without mapping and relocating libcurl, GnuTLS, ngtcp2 or libmicrohttpd and the dozens of
/// libraries those pull in, nor OpenSSL's libcrypto, libsecp256k1, zlib or libpq unless they use them. The first call into one of them
/// loads it by its SONAME.
#ifndef BACKGROUNDJOBS_CLAZYLIBS_H
#define BACKGROUNDJOBS_CLAZYLIBS_H

/// One lazily loaded library. Adding a library adds a case here, a row in loader.c and one file of stubs.
typedef enum CLazyLibrary {
    CLazyLibraryCurl = 0,
    CLazyLibraryGnuTLS,
    CLazyLibraryNgtcp2,
    CLazyLibraryNgtcp2CryptoGnuTLS,
    CLazyLibraryMicroHTTPD,
    CLazyLibraryCrypto,
    CLazyLibrarySecp256k1,
    CLazyLibraryZlib,
    CLazyLibraryPQ,
    CLazyLibraryCount
} CLazyLibrary;

/// Loads `library` and resolves every symbol `job` uses from it, once per process (thread-safe).
/// Returns NULL when it is usable, else a one-line message naming the library file and its Debian package.
const char *clazy_library_load(CLazyLibrary library);

/// Whether `library` is already loaded in this process (without loading it).
int clazy_library_is_loaded(CLazyLibrary library);

/// The file `library` is loaded from ("libcurl.so.4"), without loading it.
const char *clazy_library_soname(CLazyLibrary library);

/// The Debian package that ships that file ("libcurl4").
const char *clazy_library_package(CLazyLibrary library);

/// libsecp256k1's `secp256k1_context_static`, a variable rather than a function (loads the library).
struct secp256k1_context_struct;
const struct secp256k1_context_struct *clazy_secp256k1_context_static(void);

#endif
