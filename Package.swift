// swift-tools-version:6.0
import PackageDescription

/// BackgroundJobs: one executable, `job`, running one-pass background jobs over a shared SQLite store (or, for
/// the relay role, a PostgreSQL database).
///
/// Dependencies are the Debian system libraries only (no outside SwiftPM package can be fetched):
/// libsqlite3-dev, libssl-dev, libcurl4-openssl-dev, libsecp256k1-dev, zlib1g-dev, libngtcp2-dev,
/// libngtcp2-crypto-gnutls-dev, libgnutls28-dev, libmicrohttpd-dev, libpq-dev. Only SQLite is linked: the network libraries
/// (libcurl, GnuTLS, ngtcp2, libmicrohttpd), OpenSSL's libcrypto, libsecp256k1 and zlib are loaded by CLazyLibs
/// when a command first calls into them.
let package = Package(
    name: "BackgroundJobs",
    products: [
        .executable(name: "job", targets: ["job"]),
        .executable(name: "job-bench", targets: ["job-bench"]),
    ],
    targets: [
        // System libraries: module maps over the Debian -dev packages.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Loaded only when a command first uses them (CLazyLibs): these module maps give the headers and link nothing.
        // COpenSSL is libcrypto only (no TLS here: libcurl and GnuTLS bring their own).
        .systemLibrary(name: "COpenSSL"),
        .systemLibrary(name: "CSecp256k1"),
        .systemLibrary(name: "CZlib"),
        .systemLibrary(name: "CCurl"),
        .systemLibrary(name: "CNgtcp2"),
        .systemLibrary(name: "CGnuTLS"),
        .systemLibrary(name: "CMicroHTTPD"),
        // The relay role's PostgreSQL store (a `postgresql://` --store).
        .systemLibrary(name: "CPostgreSQL"),
        // Stubs with the lazily loaded libraries' own names: the first call dlopens the library by its SONAME.
        .target(name: "CLazyLibs"),
        // C wrappers for what Swift cannot call: variadic and macro APIs.
        .target(name: "CShims", dependencies: ["COpenSSL", "CCurl", "CSecp256k1", "CSQLite", "CLazyLibs"]),

        // ngtcp2 + GnuTLS glue for one QUIC connection: the callbacks and versioned macros Swift cannot call.
        .target(name: "CQUIC", dependencies: ["CNgtcp2", "CGnuTLS", "CLazyLibs"]),

        // Foundations.
        .target(name: "CivilDate"),
        // The monotonic clock every deadline, duration and interval reads, and a test clock that moves when told.
        .target(name: "Elapsed"),
        // `HOST:PORT` / `[IPv6]:PORT`: the one socket-address text form of every command.
        .target(name: "NetAddress"),
        .target(name: "QUIC", dependencies: ["CQUIC", "Elapsed"]),
        .target(name: "Store", dependencies: ["Elapsed", "CSQLite", "CPostgreSQL", "CShims", "CLazyLibs", "Cryptography"]),
        .target(name: "Cryptography", dependencies: ["COpenSSL", "CSecp256k1", "CShims"]),
        .target(name: "HTTPClient", dependencies: ["CivilDate", "CCurl", "CShims", "CLazyLibs"]),
        .target(name: "HTTPServer", dependencies: ["Elapsed", "NetAddress", "CMicroHTTPD", "CLazyLibs"]),
        .target(name: "Runner", dependencies: ["CivilDate", "Elapsed", "Store", "Cryptography", "CShims", "CLazyLibs"]),

        // One module per seed.
        .target(name: "Grants", dependencies: ["Elapsed", "NetAddress", "Runner", "Cryptography", "QUIC", "CShims"]),
        .target(name: "TokenPool", dependencies: ["CivilDate", "Runner", "Store", "Cryptography", "HTTPClient"]),
        // The relay API's wire types, shared by the relay server and the homeserver helper (and nothing else).
        .target(name: "RelayWire"),
        .target(name: "Relay", dependencies: ["Elapsed", "NetAddress", "RelayWire", "Runner", "Store", "Cryptography", "HTTPClient", "HTTPServer", "COpenSSL", "CShims"]),
        // The homeserver helper, beside Syncthing: it never imports the relay server.
        .target(name: "Homeserver", dependencies: ["Elapsed", "NetAddress", "RelayWire", "Runner", "Store", "HTTPClient", "Cryptography"]),
        .target(name: "MeshMedia", dependencies: ["Runner", "Store", "Cryptography", "COpenSSL", "CZlib"]),

        // Fault-proof harness: kill loops with independent models, contention, fuzzing (job-bench and tests).
        .target(name: "Chaos", dependencies: ["Runner", "Store", "Cryptography", "HTTPClient", "Grants", "Relay"]),

        // The executables.
        .target(name: "JobCLI", dependencies: ["Runner", "Store"]),
        // SIGTERM handlers installed by a constructor, before the Swift runtime starts (the `job` executable only).
        .target(name: "CJobStart", dependencies: ["CShims"]),
        .executableTarget(name: "job", dependencies: ["CJobStart", "JobCLI", "Runner", "Grants", "TokenPool", "Homeserver", "Relay", "MeshMedia"]),
        .executableTarget(name: "job-bench", dependencies: ["Cryptography", "CSecp256k1", "CShims", "CQUIC", "Runner", "Store", "HTTPClient", "Grants", "TokenPool", "Homeserver", "Relay", "MeshMedia", "Chaos", "HTTPServer"]),

        // Tests: one target per module, plus end-to-end tests that run the built `job`.
        .target(name: "TestSupport", dependencies: ["Runner", "HTTPClient"], path: "Tests/TestSupport"),
        .testTarget(name: "StoreTests", dependencies: ["Elapsed", "Store", "TestSupport", "Chaos"]),
        .testTarget(name: "CryptographyTests", dependencies: ["Cryptography", "TestSupport"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "TestSupport"]),
        .testTarget(name: "NetAddressTests", dependencies: ["NetAddress", "TestSupport"]),
        .testTarget(name: "ElapsedTests", dependencies: ["Elapsed", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["Elapsed", "HTTPServer", "HTTPClient"]),
        .testTarget(name: "RunnerTests", dependencies: ["Elapsed", "Runner", "Store", "TestSupport", "Chaos"]),
        .testTarget(name: "JobCLITests", dependencies: ["JobCLI", "Runner", "TestSupport", "job", "Chaos"]),
        .testTarget(name: "GrantsTests", dependencies: ["Elapsed", "Grants", "QUIC", "CQUIC", "Cryptography", "TestSupport", "job"]),
        .testTarget(name: "TokenPoolTests", dependencies: ["TokenPool", "TestSupport", "job", "Runner", "Store", "Cryptography", "HTTPClient"]),
        .testTarget(name: "RelayTests", dependencies: ["Elapsed", "Relay", "Homeserver", "TestSupport", "job", "Runner", "Store", "Cryptography", "HTTPClient", "Chaos"]),
        .testTarget(name: "HomeserverTests", dependencies: ["Elapsed", "Homeserver", "TestSupport", "job", "Runner", "Store", "HTTPClient"]),
        .testTarget(name: "MeshMediaTests", dependencies: ["MeshMedia", "TestSupport", "job"], exclude: ["Fixtures"]),
        .testTarget(name: "ChaosTests", dependencies: ["Chaos", "TestSupport", "job", "Homeserver", "Relay", "Grants", "TokenPool", "HTTPClient"]),
        .testTarget(name: "EndToEndTests", dependencies: ["job", "TestSupport", "Store", "Chaos"]),
    ],
    swiftLanguageModes: [.v6]
)
