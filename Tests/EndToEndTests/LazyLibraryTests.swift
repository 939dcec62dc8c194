import Foundation
import Testing
import TestSupport

/// The network libraries (libcurl, GnuTLS, ngtcp2, libmicrohttpd), OpenSSL's libcrypto, libsecp256k1 and zlib are
/// loaded only by the commands that use them, observed from outside: the dynamic loader's own trace (`LD_DEBUG=files`) of the real `job`, and, for a missing
/// library, a private mount namespace in which the library's file is unreadable (`/dev/null` bound over it).
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct LazyLibraryTests {
    let home = TemporaryDirectory("lazylibs")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    static let lazyLibraries = ["libcurl", "libgnutls", "libngtcp2", "libmicrohttpd", "libcrypto", "libssl", "libsecp256k1", "libz.", "libpq"]

    /// Runs `job arguments…` with the loader tracing and returns the result and every shared object it mapped.
    func traced(_ arguments: [String]) throws -> (result: JobProcess.Result, loaded: Set<String>) {
        let result = try JobProcess.run(arguments, environment: env.merging(["LD_DEBUG": "files"]) { $1 })
        // Lines read "   1234:\tfile=libsqlite3.so.0 [0];  needed by …" or "…;  dynamically loaded by …".
        let names = result.stderr.split(separator: "\n").compactMap { line -> String? in
            guard let start = line.range(of: "file=") else { return nil }
            return line[start.upperBound...].split(separator: " ").first.map(String.init)
        }
        return (result, Set(names))
    }

    func lazyLibraries(in loaded: Set<String>) -> [String] {
        loaded.filter { name in Self.lazyLibraries.contains { name.hasPrefix($0) } }.sorted()
    }

    @Test func helpAndStatusOnAMigratedStoreLoadNoLibraryButSQLiteAndTheSwiftRuntime() throws {
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        for arguments in [["--help"], ["--store", store, "status"]] {
            let (result, loaded) = try traced(arguments)
            #expect(result.exitCode == 0, "\(arguments): \(result.stderr.suffix(500))")
            // The trace works: it names what `job` does link (else an empty set would pass for the wrong reason).
            #expect(loaded.contains("libsqlite3.so.0"), "\(arguments): \(loaded.sorted())")
            #expect(lazyLibraries(in: loaded).isEmpty, "\(arguments) loaded \(lazyLibraries(in: loaded))")
        }
    }

    @Test func versionLoadsLibcurlWhenItAsksForCurlsVersion() throws {
        let (result, loaded) = try traced(["version"])
        #expect(result.exitCode == 0)
        // libcurl brings its own dependencies (librtmp needs GnuTLS); what matters is that it was loaded on demand.
        #expect(loaded.contains("libcurl.so.4"), "\(lazyLibraries(in: loaded))")
        #expect(result.stdout.range(of: #"curl [0-9]+\.[0-9]+"#, options: .regularExpression) != nil, "\(result.stdout)")
    }

    /// Runs `job arguments…` in a private mount namespace where `soname` resolves to an empty file.
    func withoutLibrary(_ soname: String, _ arguments: [String]) throws -> ExternalTool.Result {
        try HiddenLibraries.run([soname], JobProcess.executablePath, arguments, environment: env)
    }

    @Test(arguments: [
        ("libcurl.so.4", "libcurl4", ["prefetch"]),
        ("libmicrohttpd.so.12", "libmicrohttpd12", ["serve-relay", "--listen", "127.0.0.1:0"]),
        ("libgnutls.so.30", "libgnutls30", ["serve-link"]),
    ])
    func aCommandWhoseLibraryCannotBeLoadedExits69NamingItsPackageAndLeavesNoStore(soname: String, package: String, command: [String]) throws {
        let result = try withoutLibrary(soname, ["--store", store] + command)
        #expect(result.status == 69, "\(command): \(result.stderr)")
        // One failure line (a pass also logs `pass.failed` with the category, which is not a message).
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("job: ") }
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.contains("cannot load \(soname), which this command needs (install the Debian package \(package))") == true,
                "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store), "the store was not created")
    }

    @Test func aPostgreSQLStoreWithoutLibpqExits69NamingItsPackageBeforeAnyConnection() throws {
        // No server is needed: the library is loaded before the location is even read.
        for command in [["status"], ["migrate"], ["send-wakeups"]] {
            let result = try withoutLibrary("libpq.so.5", ["--store", "postgresql:///relay?host=/nonexistent"] + command)
            #expect(result.status == 69, "\(command): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("job: ") }
            #expect(lines.count == 1 && lines[0].contains("cannot load libpq.so.5, which this command needs (install the Debian package libpq5)"),
                    "\(command): \(result.stderr)")
        }
    }

    @Test func aJSONPassWhoseLibraryCannotBeLoadedReportsItInTheJSONError() throws {
        let result = try withoutLibrary("libcurl.so.4", ["--store", store, "--json", "prefetch"])
        #expect(result.status == 69, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
        let error = try #require(object["error"] as? [String: Any], "\(object)")
        #expect(error["category"] as? String == "library-unavailable")
        #expect((error["message"] as? String)?.contains("libcurl4") == true)
        #expect(object["exit_code"] as? Int == 69)
    }

    /// libcrypto is not declared by each command that uses it: its first call stops the process with the line and 69.
    @Test func aCommandWhoseFirstLibcryptoCallCannotLoadItStopsWith69AndTheLineNotACrash() throws {
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        let result = try withoutLibrary("libcrypto.so.3", ["--store", store, "grants", "list"])
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("job: cannot load libcrypto.so.3, which this command needs (install the Debian package libssl3): "),
                "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        // The same command works where libcrypto can be loaded (so 69 above came from the missing library).
        #expect(try JobProcess.run(["--store", store, "grants", "list"], environment: env).exitCode == 0)
    }

    @Test func doctorReportsAMissingLibcurlAsOneFailedRowOfTheGroupThatNeedsItAndStillRunsTheOthers() throws {
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        let helper = ["RELAY_URL": "https://127.0.0.1:9", "SYNCTHING_API_URL": "http://127.0.0.1:9", "SYNCTHING_API_KEY": "key"]
        let result = try HiddenLibraries.run(["libcurl.so.4"], JobProcess.executablePath, ["--store", store, "doctor"],
                                             environment: env.merging(helper) { $1 })
        #expect(result.status == 69, "\(result.stderr)")
        let rows = result.output.split(separator: "\n")
        #expect(rows.contains { $0.hasPrefix("FAIL  retrigger-stale: cannot load libcurl.so.4, which this command needs (install the Debian package libcurl4)") },
                "\(result.output)")
        // The report goes on past the group: the store's checks and the other groups are all there.
        #expect(rows.contains { $0.hasPrefix("ok    store-integrity") } && rows.contains { $0.contains("send-wakeups") }, "\(result.output)")
        #expect(result.stderr.contains("checks failed"), "\(result.stderr)")
        #expect(!result.stderr.contains("cannot load"), "the stub did not stop the process: \(result.stderr)")
    }

    @Test func versionSaysCurlIsUnavailableWhenLibcurlCannotBeLoaded() throws {
        let result = try withoutLibrary("libcurl.so.4", ["version"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output.contains("curl unavailable"), "\(result.output)")
    }
}
