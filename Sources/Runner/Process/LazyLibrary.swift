import CLazyLibs

/// A system library `job` loads only when a command needs it (CLazyLibs): the network stacks.
///
/// A job or command that uses one lists it in `libraries`; the runner loads them before it opens the store, so
/// a missing library is a clean exit 69 naming the file and the Debian package, with nothing touched. (Code that
/// reaches a library nobody declared still stops with that line and 69, from the stub, never a crash.)
package enum LazyLibrary: Sendable, CaseIterable {
    /// libcurl: every HTTP client (Endorser, the relay, Syncthing, APNs).
    case curl
    /// libmicrohttpd: `serve-relay`'s HTTP server.
    case microhttpd
    /// ngtcp2 with its GnuTLS crypto helpers, and GnuTLS: the QUIC links of grants and offers.
    case quic
    /// libpq: a PostgreSQL store (the relay role's, `--store postgresql://…`).
    case postgresql

    /// The CLazyLibs tables behind this library, in load order.
    var tables: [CLazyLibrary] {
        switch self {
        case .curl: [CLazyLibraryCurl]
        case .microhttpd: [CLazyLibraryMicroHTTPD]
        case .quic: [CLazyLibraryGnuTLS, CLazyLibraryNgtcp2, CLazyLibraryNgtcp2CryptoGnuTLS]
        case .postgresql: [CLazyLibraryPQ]
        }
    }

    /// The files this library is loaded from, with the Debian package of each (`libcurl.so.4`, `libcurl4`).
    package var files: [(soname: String, package: String)] {
        tables.map { (String(cString: clazy_library_soname($0)), String(cString: clazy_library_package($0))) }
    }

    /// Loads the library now (once per process), or throws exit 69 with the loader's one-line reason.
    package func require() throws(JobError) {
        for table in tables {
            if let failure = clazy_library_load(table) {
                throw JobError.unavailable("library-unavailable", String(cString: failure))
            }
        }
    }
}
