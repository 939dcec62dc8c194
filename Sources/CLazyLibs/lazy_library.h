/// Lazy binding of a system library: stubs with the library's own names and prototypes that load it on first use.
///
/// Each library has one file (curl.c, gnutls.c, …) that lists the functions `job` calls as an X-macro table
/// and expands it three times: an index per symbol, the symbol names, and one stub per function. A stub
/// fetches the real address from the library's table (loading the library the first time) and calls it with
/// its own arguments. The stub's definition repeats the prototype, so it must agree with the library's header:
/// a wrong signature is a compile error, not a crash.
///
/// The stubs must never be exported (an executable exports nothing unless linked with -rdynamic): a library's calls
/// to its own exported functions would then land in them, during its own load.
///
/// Variadic functions and data symbols cannot be generated: their files write those stubs by hand and list
/// them with `LAZY_MANUAL` so their addresses are still resolved with the rest.
#ifndef BACKGROUNDJOBS_LAZY_LIBRARY_H
#define BACKGROUNDJOBS_LAZY_LIBRARY_H

#include <stddef.h>

enum { LAZY_UNTRIED = 0, LAZY_LOADED = 1, LAZY_FAILED = 2 };

struct lazy_library {
    const char *soname;         /* the file dlopen asks for: "libcurl.so.4" */
    const char *package;        /* the Debian package that ships it: "libcurl4" */
    const char *const *symbols; /* the names resolved at load time */
    void **addresses;           /* their addresses, filled once by the load */
    size_t count;
    int state;                  /* LAZY_UNTRIED, LAZY_LOADED or LAZY_FAILED; read with acquire ordering */
    char message[512];          /* why it failed, when it did */
};

/// Loads the library and resolves all its symbols once per process; NULL on success, else the one-line message.
const char *lazy_library_load(struct lazy_library *library);

/// The address of symbol `index`, loading the library first. If it cannot be loaded the process cannot go on:
/// the message goes to stderr and the process exits 69 (EX_UNAVAILABLE), never crashes.
void *lazy_library_symbol(struct lazy_library *library, size_t index);

#define LAZY_INDEX(name) lazy_index_##name
#define LAZY_ENUM_FUNCTION(ret, name, params, args) LAZY_INDEX(name),
#define LAZY_ENUM_MANUAL(name) LAZY_INDEX(name),
#define LAZY_NAME_FUNCTION(ret, name, params, args) #name,
#define LAZY_NAME_MANUAL(name) #name,
#define LAZY_REAL(name) ((__typeof__(&name))lazy_library_symbol(&LAZY_LIBRARY, LAZY_INDEX(name)))
#define LAZY_STUB_FUNCTION(ret, name, params, args) ret name params { return LAZY_REAL(name) args; }
#define LAZY_STUB_VOID(ret, name, params, args) void name params { LAZY_REAL(name) args; }
#define LAZY_STUB_MANUAL(name)

/// Defines `struct lazy_library variable` and one stub per FUNCTION/VOID row of `LIST(FUNCTION, VOID, MANUAL)`.
/// `LAZY_LIBRARY` must be #defined to `variable` before the file's manual stubs (they use LAZY_REAL too).
#define LAZY_DEFINE_LIBRARY(variable, soname_, package_, LIST)                                                    \
    enum { LIST(LAZY_ENUM_FUNCTION, LAZY_ENUM_FUNCTION, LAZY_ENUM_MANUAL) lazy_count_##variable };             \
    static const char *const variable##_symbols[] = {LIST(LAZY_NAME_FUNCTION, LAZY_NAME_FUNCTION, LAZY_NAME_MANUAL)}; \
    static void *variable##_addresses[lazy_count_##variable];                                                   \
    struct lazy_library variable = {soname_, package_, variable##_symbols, variable##_addresses,                \
                                    lazy_count_##variable, LAZY_UNTRIED, {0}};                         \
    LIST(LAZY_STUB_FUNCTION, LAZY_STUB_VOID, LAZY_STUB_MANUAL)

extern struct lazy_library lazy_curl, lazy_gnutls, lazy_ngtcp2, lazy_ngtcp2_crypto_gnutls, lazy_microhttpd, lazy_crypto,
    lazy_secp256k1, lazy_z, lazy_pq;

#endif
