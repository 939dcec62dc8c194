import Foundation
import Testing
import TestSupport

/// Every job and command runs the same with each lazily loaded library it does not declare made unloadable: a
/// command that reached libcurl, libmicrohttpd, GnuTLS/ngtcp2 or libpq without declaring it would stop mid-way with
/// exit 69 from the stub instead of before it opened the store. What a command declares is read from the binary
/// (`job reference`'s "Loads:" line); each runs once normally and once in a mount namespace with the others hidden,
/// on a copy of the same seeded store, and the two must end alike.
///
/// libcrypto, libsecp256k1 and zlib are never declared (a command's first call loads them, and stops with the line
/// and 69 when it cannot; `LazyLibraryTests` covers that), so they stay visible here.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct UndeclaredLibraryTests {
    /// The libraries a job or command declares, by SONAME.
    static let declarable = ["libcurl.so.4", "libmicrohttpd.so.12", "libgnutls.so.30", "libngtcp2.so.9", "libngtcp2_crypto_gnutls.so.2", "libpq.so.5"]
    static let did = "did:ethr:0x" + String(repeating: "11", count: 20)
    static let deviceID = "CANARYD-EVICEAA-BBBBBBB-CCCCCCC-DDDDDDD-EEEEEEE-FFFFFFF-GGGGGGG"
    static let token = String(repeating: "ab", count: 32)

    /// One invocation per job and command (after `--store`), chosen to do its work on the seeded store.
    static let invocations: [String: [String]] = [
        "maintain-store": ["maintain-store"], "mint-pool": ["mint-pool"], "prefetch": ["prefetch"], "send-wakeups": ["send-wakeups"],
        "clean-tokens": ["clean-tokens"], "retrigger-stale": ["retrigger-stale"], "media-outbox": ["media-outbox"],
        "media-inbox": ["media-inbox"], "media-alias-check": ["media-alias-check"], "sweep-grants": ["sweep-grants"],
        "pull-offers": ["pull-offers", "--check-now"],
        "list": ["list"], "status": ["status"], "migrate": ["migrate"], "help": ["help", "send-wakeups"], "deployment": ["deployment"],
        "version": ["version"], "completions": ["completions", "bash"], "manpage": ["manpage"], "reference": ["reference"],
        "settings list": ["settings", "list"], "settings get": ["settings", "get", "pull-offers.enabled"],
        "settings set": ["settings", "set", "pull-offers.enabled", "true"], "settings unset": ["settings", "unset", "pull-offers.enabled"],
        "identity import": ["identity", "import"], "identity new": ["identity", "new"], "identity add-peer": ["identity", "add-peer", did],
        "identity list": ["identity", "list"], "identity use": ["identity", "use", "--none"], "identity remove": ["identity", "remove", did],
        "identity export": ["identity", "export"], "pool show": ["pool", "show"], "pool export": ["pool", "export"],
        "pool verify": ["pool", "verify"], "pool clear": ["pool", "clear"], "activity list": ["activity", "list"],
        "relay register": ["relay", "register", "--device-id", deviceID, "--apns-token", token],
        "relay unregister": ["relay", "unregister", "--device-id", deviceID, "--apns-token", token],
        "relay trigger": ["relay", "trigger", "--device-id", deviceID], "relay show": ["relay", "show"],
        "relay unpin": ["relay", "unpin", "--device-id", deviceID],
        "serve-relay": ["serve-relay", "--listen", "127.0.0.1:0", "--no-push"], "watch-syncthing": ["watch-syncthing"],
        "homeserver status": ["homeserver", "status"], "mesh init": ["mesh", "init", "--nickname", "second"],
        "mesh announce": ["mesh", "announce"], "mesh peers": ["mesh", "peers"], "mesh exchange": ["mesh", "exchange", "--to", "/nonexistent/peer.sqlite"],
        "mesh send-file": ["mesh", "send-file", "--to", "nobody", "/etc/hostname"], "mesh sends": ["mesh", "sends"],
        "mesh panic-wipe": ["mesh", "panic-wipe"], "mesh files list": ["mesh", "files", "list"],
        "mesh files export": ["mesh", "files", "export", "--to", "/tmp/undeclared-library-export", "1"],
        "mesh files delete": ["mesh", "files", "delete", "1"], "mesh show": ["mesh", "show"], "mesh sends cancel": ["mesh", "sends", "cancel", "1"],
        "mesh sends retry": ["mesh", "sends", "retry", "1"], "mesh sends withdraw-consent": ["mesh", "sends", "withdraw-consent", "1"],
        "mesh builds add": ["mesh", "builds", "add", "--platform", "ios", "--version", "1.2.3", "--channel", "stable"],
        "mesh builds list": ["mesh", "builds", "list"], "mesh policy set": ["mesh", "policy", "set", "--platform", "ios", "--min-version", "1.0.0"],
        "node show": ["node", "show"], "grants issue": ["grants", "issue", "--to", String(repeating: "ab", count: 32), "--label", "phone"],
        "grants accept": ["grants", "accept", "--label", "laptop", "--addr", "127.0.0.1:9"], "grants list": ["grants", "list"],
        "grants revoke": ["grants", "revoke", "nobody"], "block": ["block", "nobody"], "block list": ["block", "list"],
        "unblock": ["unblock", "nobody"], "contacts list": ["contacts", "list"], "contacts rename": ["contacts", "rename", "nobody", "x"],
        "contacts delete": ["contacts", "delete", "nobody"], "contacts delete-all": ["contacts", "delete-all"],
        "serve-link": ["serve-link", "--listen", "127.0.0.1:0", "--idle-exit", "1"],
        "offers send": ["offers", "send", "--to", String(repeating: "ab", count: 32), "--ticket-file", "/nonexistent", "--files", "1", "--bytes", "1"],
        "offers list": ["offers", "list"], "offers cancel": ["offers", "cancel", "1"], "offers accept": ["offers", "accept", "1"],
        "offers decline": ["offers", "decline", "1"], "offers notifications": ["offers", "notifications"], "doctor": ["doctor"],
    ]

    /// `job reference`: every job and command section with the SONAMEs its "Loads:" line names, and the built-ins.
    static let reference: [String: Set<String>] = {
        let text = (try? JobProcess.run(["reference"], environment: JobProcess.environment(home: NSTemporaryDirectory())).stdout) ?? ""
        var table: [String: Set<String>] = [:]
        var current: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("### ") {
                current = String(line.dropFirst(4))
                table[current!] = []
            } else if line.hasPrefix("Loads: "), let name = current {
                table[name] = Set(line.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element).filter { $0.contains(".so.") }.map(String.init))
            } else if line.hasPrefix("| `job "), let end = line.dropFirst(7).firstIndex(where: { $0 == " " || $0 == "`" }) {
                table[String(line.dropFirst(7)[..<end])] = []
            } else if line.hasPrefix("## Settings") {
                current = nil
            }
        }
        return table
    }()

    /// Every service a command may call, on a loopback port nothing listens on (the discard port): the commands
    /// get as far as their first network call, which fails with "cannot be reached" on both runs alike.
    static func environment(home: String) -> [String: String] {
        let closed = "127.0.0.1:9"
        return JobProcess.environment(home: home, ["RELAY_URL": "https://\(closed)", "SYNCTHING_API_URL": "http://\(closed)", "SYNCTHING_API_KEY": "key",
                                                   "ENDORSER_URL": "http://\(closed)", "APNS_URL": "https://\(closed)"])
    }

    /// A home with a migrated store holding an identity, a mesh node, a registration and a grant.
    static let seedPath = NSTemporaryDirectory() + "undeclared-seed-\(getpid())"
    static let seeded: String = {
        let home = seedPath
        try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        // Removed when the test process exits (a static has no teardown).
        atexit { try? FileManager.default.removeItem(atPath: UndeclaredLibraryTests.seedPath) }
        let env = JobProcess.environment(home: home)
        for command in [["migrate"], ["identity", "new"], ["mesh", "init", "--nickname", "first"],
                        ["relay", "register", "--device-id", deviceID, "--apns-token", token],
                        ["grants", "issue", "--to", String(repeating: "cd", count: 32), "--label", "tablet"],
                        ["settings", "set", "prefetch.after-id", "01JDXKQ0RN4B9Q4Z9W0Y2M3N5P"]] {
            _ = try? JobProcess.run(["--store", home + "/store.sqlite", "--now", "2026-12-01T10:00:00Z"] + command, environment: env)
        }
        return home
    }()

    /// The SONAMEs `soname` loads with it, directly or not (`ldd`).
    static func dependencies(of soname: String) throws -> Set<String> {
        let path = try #require(try HiddenLibraries.path(of: soname), "\(soname) is not in the loader cache")
        let listing = try ExternalTool.run("/usr/bin/ldd", [path], separateStderr: true).output
        return Set(listing.split(separator: "\n").compactMap { $0.split(separator: " ").first.map { $0.trimmingCharacters(in: .whitespaces) } })
    }

    @Test func everyJobAndCommandInTheReferenceHasAnInvocationHereAndSomeDeclareLibraries() throws {
        let names = Set(Self.reference.keys)
        #expect(names.count > 60, "the reference was read: \(names.sorted())")
        #expect(names.subtracting(Self.invocations.keys).isEmpty, "give these an invocation: \(names.subtracting(Self.invocations.keys).sorted())")
        #expect(Set(Self.invocations.keys).subtracting(names).isEmpty, "no longer commands: \(Set(Self.invocations.keys).subtracting(names).sorted())")
        // The "Loads:" lines are read (else every library would be hidden for every command, and servers would fail alike).
        #expect(Self.reference["prefetch"] == ["libcurl.so.4"])
        #expect(Self.reference["serve-relay"] == ["libmicrohttpd.so.12"])
        #expect(Self.reference["serve-link"]?.contains("libngtcp2.so.9") == true)
    }

    @Test(arguments: invocations.keys.sorted())
    func aCommandEndsAlikeWithEveryLibraryItDoesNotDeclareHidden(name: String) throws {
        let arguments = try #require(Self.invocations[name])
        let declared = try #require(Self.reference[name], "\(name) is not in the reference")
        // What a declared library itself needs stays visible (libcurl and libmicrohttpd link GnuTLS).
        let needed = try declared.reduce(into: declared) { $0.formUnion(try Self.dependencies(of: $1)) }
        let hidden = Self.declarable.filter { !needed.contains($0) }
        let normal = TemporaryDirectory("undeclared"), stripped = TemporaryDirectory("undeclared")
        for home in [normal, stripped] {
            let copy = try ExternalTool.run("/bin/cp", ["-a", Self.seeded + "/.", home.path])
            #expect(copy.status == 0, "\(copy.output)")
        }
        // Servers are stopped with SIGTERM after a while; both runs are stopped the same way.
        let server = ["serve-relay", "watch-syncthing"].contains(name)
        func run(_ home: TemporaryDirectory, hiding: [String]) throws -> ExternalTool.Result {
            return try HiddenLibraries.run(hiding, JobProcess.executablePath, ["--store", home.file("store.sqlite"), "--now", "2026-12-01T11:00:00Z"] + arguments,
                                           environment: Self.environment(home: home.path), timeout: server ? 2 : 30)
        }
        let expected = try run(normal, hiding: [])
        let result = try run(stripped, hiding: hidden)
        #expect(!result.stderr.contains("cannot load"), "\(name) reached a library it does not declare: \(result.stderr)")
        #expect(result.status == expected.status, "\(name): \(result.status) with \(hidden) hidden, \(expected.status) without: \(result.stderr)")
        // 124 is timeout(1)'s own status: a server it stopped; anything else that needed it hung.
        #expect(server || result.status != 124, "\(name) did not stop within its time")
    }

    @Test func aCommandThatReachesAnUndeclaredLibraryIsCaught() throws {
        // The positive control: prefetch declares libcurl; hidden anyway, its run differs and names the library.
        let home = TemporaryDirectory("undeclared")
        _ = try ExternalTool.run("/bin/cp", ["-a", Self.seeded + "/.", home.path])
        let result = try HiddenLibraries.run(["libcurl.so.4"], JobProcess.executablePath, ["--store", home.file("store.sqlite"), "prefetch"],
                                             environment: Self.environment(home: home.path))
        #expect(result.status == 69 && result.stderr.contains("cannot load libcurl.so.4"), "\(result.stderr)")
    }
}
