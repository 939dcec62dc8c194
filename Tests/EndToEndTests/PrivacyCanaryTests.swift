import Foundation
import Store
import Testing
import TestSupport

/// docs/design.md §5: logs never carry an identifier or a secret. Every job and every command runs with canary values in
/// every identifier and secret; stderr (text and JSON logs, error messages), the metrics files and the ledger must
/// hold none of them. A command added without a case here fails `everyJobAndCommandHasACanaryCase`.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct PrivacyCanaryTests {
    // Values chosen so a leak is unmistakable; each is also valid input for its option.
    static let deviceID = "CANARYD-EVICEAA-BBBBBBB-CCCCCCC-DDDDDDD-EEEEEEE-FFFFFFF-GGGGGGG"
    static let otherDeviceID = "CANARYO-THERAAA-BBBBBBB-CCCCCCC-DDDDDDD-EEEEEEE-FFFFFFF-GGGGGGG"
    static let apnsToken = String(repeating: "c0ffee11", count: 8)
    static let relayHost = "canary-relay-host.invalid"
    static let apnsHost = "canary-apns-host.invalid"
    static let syncthingHost = "canary-syncthing-host.invalid"
    static let apiKey = "CANARY-API-KEY-9f8e7d"
    static let keyID = "CANARYKEY1"
    static let teamID = "CANARYTEAM"
    static let topic = "org.canary.topic"
    static let nickname = "CanaryNickname"
    static let fileName = "CANARY-file-name.txt"
    static let fileContent = "CANARY-file-content-5a5a"
    static let folderName = "canary-folder-zz"
    static let identityKey = String(repeating: "2a11ce00", count: 8)
    static let peerDID = "did:peer:2.CANARYpeerDIDvalue"
    static let endorserHost = "canary-endorser-host.invalid"
    static let planID = "CANARYPLAN1"
    static let afterID = "01CANARYAFTER0000000000000"
    static let label = "CanaryContactLabel"
    static let offerName = "CANARY-offer-name"
    static let ticket = "CANARY-ticket-blob-77aa"

    /// One run of the binary: what it printed on stderr.
    struct Run { let arguments: [String]; let stderr: String; let stdout: String; let exitCode: Int32 }

    // @unchecked: mutated only by `exercise()` before `session` publishes it once; the tests only read it.
    final class Session: @unchecked Sendable {
        let home = TemporaryDirectory("canary")
        var runs: [Run] = []
        var extraCanaries: [String] = []
        /// Files node B had received when the mesh part ended (before its panic wipe).
        var deliveredToB: [String] = []
        lazy var metrics = home.file("metrics")
        lazy var env: [String: String] = JobProcess.environment(home: home.path, [
            "RELAY_URL": "http://\(PrivacyCanaryTests.relayHost):9",
            "SYNCTHING_API_URL": "http://\(PrivacyCanaryTests.syncthingHost):8384",
            "SYNCTHING_API_KEY": PrivacyCanaryTests.apiKey,
            "WATCHED_FOLDERS": PrivacyCanaryTests.folderName,
            "APNS_KEY_FILE": home.file("CANARY-apns-key-file.p8"),
            "APNS_KEY_ID": PrivacyCanaryTests.keyID,
            "APNS_TEAM_ID": PrivacyCanaryTests.teamID,
            "APNS_TOPIC": PrivacyCanaryTests.topic,
            "APNS_URL": "https://\(PrivacyCanaryTests.apnsHost):9",
            "APNS_SANDBOX_URL": "https://\(PrivacyCanaryTests.apnsHost):9",
            "ENDORSER_URL": "https://\(PrivacyCanaryTests.endorserHost):9",
            "JOB_METRICS_DIR": metrics,
            "JOB_LOG_LEVEL": "debug",
        ])

        func store(_ name: String) -> String { home.file("\(name).sqlite") }

        /// Starts `serve-link --listen 127.0.0.1:0` for `store`; its stderr is scanned like every run's.
        func listen(_ store: String) throws -> Listener {
            let process = try JobProcess.start(["--store", store, "serve-link", "--listen", "127.0.0.1:0", "--idle-exit", "120"], environment: env)
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                let text = process.stdoutSoFar
                if let range = text.range(of: "listening on 127.0.0.1:"),
                   let port = text[range.upperBound...].split(separator: "\n").first.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) {
                    return Listener(process: process, port: port) { [weak self] result in
                        self?.runs.append(Run(arguments: ["serve-link"], stderr: result.stderr, stdout: result.stdout, exitCode: result.exitCode))
                    }
                }
                usleep(20_000)
            }
            process.signal(SIGKILL)
            throw TestFailure("serve-link did not start")
        }

        @discardableResult
        func job(_ store: String, _ arguments: [String], json: Bool = false, logJSON: Bool = false, stdin: String? = nil) throws -> Run {
            var full = ["--store", store]
            if json { full.append("--json") }
            if logJSON { full += ["--log-format", "json"] }
            full += arguments
            let result = try JobProcess.run(full, environment: env, stdin: stdin, timeout: 120)
            let run = Run(arguments: arguments, stderr: result.stderr, stdout: result.stdout, exitCode: result.exitCode)
            runs.append(run)
            return run
        }
    }

    /// A running `serve-link --listen`.
    final class Listener {
        let process: JobProcess.Running
        let port: Int
        let record: (JobProcess.Result) -> Void
        init(process: JobProcess.Running, port: Int, record: @escaping (JobProcess.Result) -> Void) {
            self.process = process
            self.port = port
            self.record = record
        }
        func stop() {
            process.signal(SIGTERM)
            if let result = try? process.wait(timeout: 20) { record(result) }
        }
    }

    static func canaries(_ session: Session) -> [String] {
        [deviceID, deviceID.replacingOccurrences(of: "-", with: ""), otherDeviceID, apnsToken, apnsToken.uppercased(), relayHost, apnsHost,
         syncthingHost, apiKey, keyID, teamID, topic, nickname, fileName, fileContent, folderName, identityKey, peerDID, endorserHost,
         planID, afterID, label, offerName, ticket, "CANARY"] + session.extraCanaries
    }

    /// Runs every job and command; returns the session for scanning.
    static func exercise() throws -> Session {
        let s = Session()
        try P256PEM.write(to: s.env["APNS_KEY_FILE"]!)

        // Runner built-ins and settings.
        let main = s.store("main")
        try s.job(main, ["migrate"])
        try s.job(main, ["list"])
        try s.job(main, ["status"])
        try s.job(main, ["status"], json: true)
        try s.job(main, ["settings", "list"])
        try s.job(main, ["settings", "set", "runs.retention-days", "7"])
        try s.job(main, ["settings", "get", "runs.retention-days"])
        try s.job(main, ["settings", "unset", "runs.retention-days"])
        try s.job(main, ["deployment", "--write", s.home.file("deploy")])
        try s.job(main, ["help", "--json"])
        try s.job(main, ["maintain-store"])
        try s.job(main, ["maintain-store"], logJSON: true)

        // Relay: registrations with canary ids, wake-ups toward a canary APNs host, the helper against canary URLs.
        try s.job(main, ["relay", "register", "--device-id", deviceID, "--apns-token", apnsToken, "--environment", "sandbox"])
        try s.job(main, ["relay", "register", "--device-id", otherDeviceID, "--apns-token", String(apnsToken.reversed())])
        s.extraCanaries.append(String(apnsToken.reversed()))
        try s.job(main, ["relay", "trigger", "--device-id", deviceID])
        try s.job(main, ["relay", "trigger", "--device-id", "CANARYN-OSUCHAA-BBBBBBB-CCCCCCC-DDDDDDD-EEEEEEE-FFFFFFF-GGGGGGG"])
        try s.job(main, ["relay", "show"], json: true)
        try s.job(main, ["relay", "register", "--device-id", "not-a-CANARY-device", "--apns-token", apnsToken])
        try s.job(main, ["send-wakeups"])
        try s.job(main, ["send-wakeups"], logJSON: true)
        try s.job(main, ["clean-tokens", "--dry-run"])
        try s.job(main, ["clean-tokens"])
        try s.job(main, ["retrigger-stale"])
        try s.job(main, ["retrigger-stale"], logJSON: true)
        // The change watcher against the canary Syncthing host: it retries with back-off until SIGTERM.
        let watcher = try JobProcess.start(["--store", main, "watch-syncthing"], environment: s.env)
        usleep(2_000_000)
        watcher.signal(SIGTERM)
        let watched = try watcher.wait(timeout: 30)
        s.runs.append(Run(arguments: ["watch-syncthing"], stderr: watched.stderr, stdout: watched.stdout, exitCode: watched.exitCode))
        try s.job(main, ["homeserver", "status"])
        try s.job(main, ["homeserver", "status"], json: true)
        try s.job(main, ["doctor"])
        try s.job(main, ["doctor", "--send-trigger"], json: true)
        try s.job(main, ["relay", "unpin", "--device-id", deviceID])
        try s.job(main, ["relay", "unregister", "--device-id", deviceID, "--apns-token", apnsToken])
        // The relay's HTTP API with canary requests: provision with a canary token and JWS, triggers (one starts a
        // send-wakeups pass toward the canary APNs host), status; its stderr (and the pass's) is scanned.
        let fakeJWS = "Q0FOQVJZaGVhZGVy.eyJDQU5BUllwYXlsb2FkIn0.CANARYsignature"  // not "eyJ…": those count the minted JWTs below
        s.extraCanaries += [fakeJWS, "4000000CANARY7"]
        let relayEnvironment = s.env.merging(["STOREKIT_BUNDLE_ID": "org.canary.bundle", "STOREKIT_PRODUCT_IDS": "org.canary.product"]) { $1 }
        let relay = try JobProcess.start(["--store", s.store("main"), "serve-relay", "--listen", "127.0.0.1:0"], environment: relayEnvironment)
        var relayPort: Int?
        let relayDeadline = Date().addingTimeInterval(20)
        while relayPort == nil && Date() < relayDeadline {
            relayPort = relay.stdoutSoFar.split(separator: "\n").first { $0.hasPrefix("listening on 127.0.0.1:") }.flatMap { Int($0.split(separator: ":").last ?? "") }
            if relayPort == nil { usleep(20_000) }
        }
        if let relayPort {
            let base = "http://127.0.0.1:\(relayPort)/api/v1"
            for (path, body) in [("provision", "{\"device_id\":\"\(deviceID)\",\"apns_token\":\"\(apnsToken)\",\"transaction_id\":\"\(fakeJWS)\"}"),
                                 ("provision", "{\"device_id\":\"\(deviceID)\",\"apns_token\":\"\(apnsToken)\",\"transaction_id\":\"4000000CANARY7\"}"),
                                 ("trigger", "{\"device_id\":\"\(otherDeviceID)\"}"), ("trigger", "{\"device_id\":\"\(deviceID)\"}"),
                                 ("status", "{\"device_id\":\"\(otherDeviceID)\",\"signed_transaction\":\"\(fakeJWS)\"}")] {
                try ExternalTool.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-X", "POST", "-H", "Content-Type: application/json", "--data", body, "\(base)/\(path)"])
            }
            usleep(1_500_000)  // the send-wakeups pass it started reaches for the canary APNs host and fails
        }
        relay.signal(SIGTERM)
        let served = try relay.wait(timeout: 30)
        s.runs.append(Run(arguments: ["serve-relay"], stderr: served.stderr, stdout: served.stdout, exitCode: served.exitCode))

        // Token pool: an imported canary key, its DID, a passkey DID, minted JWTs, plan ids and an after-id.
        let pool = s.store("pool")
        try s.job(pool, ["identity", "import"], stdin: identityKey + "\n")
        try s.job(pool, ["identity", "new"])
        try s.job(pool, ["identity", "add-peer", peerDID])
        let identities = try s.job(pool, ["identity", "list"], json: true)
        let dids = identities.stdout.components(separatedBy: "\"").filter { $0.hasPrefix("did:ethr:0x") }
        for did in dids { s.extraCanaries += [did, String(did.dropFirst("did:ethr:".count)), String(did.dropFirst("did:ethr:0x".count)).lowercased()] }
        if let imported = dids.first { try s.job(pool, ["identity", "use", imported]) }
        try s.job(pool, ["settings", "set", "pool.size", "5"])
        try s.job(pool, ["settings", "set", "prefetch.plan-ids", planID + ",CANARYPLAN2"])
        try s.job(pool, ["settings", "set", "prefetch.after-id", afterID])
        try s.job(pool, ["mint-pool", "--dry-run"])
        try s.job(pool, ["mint-pool"])
        try s.job(pool, ["pool", "show"], json: true)
        let exported = try s.job(pool, ["pool", "export"], json: true)
        for token in exported.stdout.components(separatedBy: "\"") where token.hasPrefix("eyJ") {
            s.extraCanaries += [token, String(token.split(separator: ".").last ?? "")]
        }
        try s.job(pool, ["pool", "verify"])
        try s.job(pool, ["prefetch", "--dry-run"])
        try s.job(pool, ["prefetch"])
        try s.job(pool, ["prefetch"], logJSON: true)
        try s.job(pool, ["activity", "list"])
        try s.job(pool, ["activity", "list"], json: true)
        try s.job(pool, ["identity", "export"])
        try s.job(pool, ["identity", "use", peerDID])
        try s.job(pool, ["mint-pool"])
        try s.job(pool, ["pool", "clear"])
        try s.job(pool, ["identity", "use", "did:ethr:0xCANARY0000000000000000000000000000000000"])
        if let imported = dids.first { try s.job(pool, ["identity", "use", imported.lowercased()]) }
        if let generated = dids.last { try s.job(pool, ["identity", "remove", generated]) }
        if let imported = dids.first { try s.job(pool, ["identity", "remove", imported]) }
        if let imported = dids.first { try s.job(pool, ["identity", "remove", "--force", imported]) }
        try s.job(pool, ["identity", "use", "--none"])
        try s.job(pool, ["mint-pool"])

        // Grants: two nodes with serve-link listeners; grants both ways, a live offer, a held offer pulled later,
        // a cancelled one, block, revoke and the contact commands.
        let alice = s.store("alice"), bob = s.store("bob")
        var endpoints: [String] = []
        for node in [alice, bob] {
            let shown = try s.job(node, ["node", "show"], json: true)
            let object = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any] ?? [:]
            if let id = object["endpoint_id"] as? String { endpoints.append(id); s.extraCanaries.append(id) }
            if let fingerprint = object["fingerprint"] as? String { s.extraCanaries.append(fingerprint) }
        }
        guard endpoints.count == 2 else { throw TestFailure("node show printed no endpoint ids") }
        let aliceLink = try s.listen(alice)
        var bobLink: Listener? = try s.listen(bob)
        let aliceToBob = try s.job(alice, ["grants", "issue", "--to", endpoints[1], "--lifetime", "30d", "--label", label + "Issued"])
        let bobToAlice = try s.job(bob, ["grants", "issue", "--to", endpoints[0]])
        for bundle in [aliceToBob.stdout, bobToAlice.stdout] {
            let line = bundle.trimmingCharacters(in: .whitespacesAndNewlines)
            s.extraCanaries.append(line)
            s.extraCanaries += line.split(separator: ".").map(String.init).filter { $0.count >= 24 }
        }
        try s.job(bob, ["grants", "accept", "--label", label, "--addr", "127.0.0.1:\(aliceLink.port)"], stdin: aliceToBob.stdout)
        try s.job(alice, ["grants", "accept", "--label", label + "B", "--addr", "127.0.0.1:\(bobLink!.port)"], stdin: bobToAlice.stdout)
        try s.job(alice, ["grants", "list"], json: true)
        try s.job(bob, ["contacts", "list"], json: true)
        try s.job(bob, ["contacts", "rename", label, label + "Renamed"])
        let ticketFile = s.home.file("CANARY-ticket-file.txt")
        try ticket.write(toFile: ticketFile, atomically: true, encoding: .utf8)
        try s.job(bob, ["offers", "send", "--to", endpoints[0], "--ticket-file", ticketFile, "--files", "2", "--bytes", "1024", "--name", offerName])
        let incoming = try s.job(alice, ["offers", "list"], json: true)
        let offerIDs = incoming.stdout.components(separatedBy: "\"").filter { $0.count >= 16 && $0.allSatisfy(\.isHexDigit) && !endpoints.contains($0) }
        s.extraCanaries += offerIDs
        if let first = offerIDs.first { try s.job(alice, ["offers", "accept", first]) }
        try s.job(alice, ["offers", "notifications"])
        try s.job(alice, ["offers", "notifications", "--mark-seen"], json: true)
        // Bob goes offline: Alice's offers to him are held on her side until he pulls.
        bobLink?.stop()
        bobLink = nil
        try s.job(alice, ["offers", "send", "--to", endpoints[1], "--ticket-file", ticketFile, "--files", "1", "--bytes", "10", "--name", offerName])
        try s.job(alice, ["offers", "send", "--to", endpoints[1], "--ticket-file", ticketFile, "--files", "1", "--bytes", "11"])
        let outgoing = try s.job(alice, ["offers", "list"], json: true)
        let held = outgoing.stdout.components(separatedBy: "\"").filter { $0.count >= 16 && $0.allSatisfy(\.isHexDigit) && !endpoints.contains($0) && !offerIDs.contains($0) }
        s.extraCanaries += held
        if let last = held.last { try s.job(alice, ["offers", "cancel", last]) }
        try s.job(bob, ["pull-offers"])
        try s.job(bob, ["pull-offers", "--check-now"])
        try s.job(bob, ["pull-offers", "--check-now"], logJSON: true)
        let pulled = try s.job(bob, ["offers", "list"], json: true)
        if let id = pulled.stdout.components(separatedBy: "\"").first(where: { held.contains($0) }) { try s.job(bob, ["offers", "decline", id]) }
        try s.job(alice, ["block", label + "B"])
        try s.job(alice, ["block", "list"])
        try s.job(alice, ["block", "list"], json: true)
        try s.job(alice, ["block", "CANARYnotAKnownLabel"])
        try s.job(bob, ["pull-offers", "--check-now"], json: true)
        try s.job(alice, ["unblock", endpoints[1]])
        try s.job(alice, ["grants", "revoke", label + "Issued"])
        try s.job(alice, ["grants", "revoke", "--peer", endpoints[1]])
        try s.job(alice, ["sweep-grants", "--dry-run"])
        try s.job(alice, ["sweep-grants"])
        try s.job(bob, ["sweep-grants"], logJSON: true)
        // serve-link on stdin (socket activation) fed bytes that are not TLS.
        try s.job(alice, ["serve-link"], stdin: "CANARY not a TLS ClientHello \(endpoints[1])")
        try s.job(bob, ["contacts", "delete", endpoints[0]])
        try s.job(alice, ["contacts", "delete-all"])
        aliceLink.stop()

        // Mesh: two nodes with canary nicknames exchange an announce and a file with a canary name and content.
        let a = s.store("mesh-a"), b = s.store("mesh-b")
        let initA = try s.job(a, ["mesh", "init", "--nickname", nickname], json: true)
        let initB = try s.job(b, ["mesh", "init", "--nickname", nickname + "B"], json: true)
        for output in [initA.stdout, initB.stdout] {
            if let object = try? JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] {
                for key in ["peer_id", "fingerprint"] { if let value = object[key] as? String { s.extraCanaries.append(value) } }
            }
        }
        try s.job(a, ["mesh", "announce"])
        try s.job(b, ["mesh", "announce"])
        try s.job(a, ["mesh", "exchange", "--to", b])
        try s.job(b, ["mesh", "exchange", "--to", a])
        try s.job(a, ["media-inbox"])
        try s.job(b, ["media-inbox"])
        try s.job(a, ["mesh", "peers"], json: true)
        let file = s.home.file(fileName)
        try fileContent.write(toFile: file, atomically: true, encoding: .utf8)
        let peerB = s.extraCanaries.count >= 3 ? s.extraCanaries[s.extraCanaries.count - 2] : "00"
        try s.job(a, ["mesh", "send-file", "--to", peerB, file])
        try s.job(a, ["mesh", "send-file", "--to", peerB, "--accept-unencrypted", file])
        for _ in 0..<3 {
            try s.job(a, ["media-outbox"])
            try s.job(a, ["mesh", "exchange", "--to", b])
            try s.job(b, ["media-inbox"])
            try s.job(b, ["media-outbox"])
            try s.job(b, ["mesh", "exchange", "--to", a])
            try s.job(a, ["media-inbox"])
        }
        try s.job(a, ["mesh", "sends"], json: true)
        try s.job(a, ["mesh", "show"])
        try s.job(a, ["mesh", "show"], json: true)
        try s.job(a, ["mesh", "send-file", "--to", peerB, "--accept-unencrypted", file])   // send 3: controlled by hand
        try s.job(a, ["mesh", "sends", "withdraw-consent", "3"])
        try s.job(a, ["mesh", "sends", "cancel", "3"])
        try s.job(a, ["mesh", "sends", "retry", "3"])   // refused: a cancelled send keeps no content
        s.deliveredToB = (try? FileManager.default.contentsOfDirectory(atPath: b + ".media")) ?? []
        // Received files: listed (name, sender), exported and deleted — identifiers on stdout only, never in the logs.
        try s.job(b, ["mesh", "files", "list"])
        let received = try s.job(b, ["mesh", "files", "list"], json: true)
        let receivedIDs = (try JSONSerialization.jsonObject(with: Data(received.stdout.utf8)) as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        let id = try #require(receivedIDs.first, "the canary file was received, so export and delete run")
        try s.job(b, ["mesh", "files", "export", id, "--to", s.home.file("CANARY-export.bin")])
        try s.job(b, ["mesh", "files", "delete", id])
        try s.job(a, ["mesh", "builds", "add", "--platform", "ios", "--version", "1.2.3", "--channel", "canary-channel", "--emitted-alias", "--expires", "2027-01-01T00:00:00Z"])
        s.extraCanaries.append("canary-channel")
        try s.job(a, ["mesh", "builds", "list"])
        try s.job(a, ["mesh", "policy", "set", "--platform", "ios", "--min-version", "2.0.0"])
        try s.job(a, ["media-alias-check"])
        try s.job(a, ["mesh", "send-file", "--to", "c0ffee11c0ffee11", s.home.file("CANARY-missing-file.bin")])
        try s.job(b, ["mesh", "panic-wipe"])
        return s
    }

    static let session: Result<Session, Error> = Result { try exercise() }

    @Test func noCanaryReachesStderrTheMetricsOrTheLedger() throws {
        let s = try PrivacyCanaryTests.session.get()
        let canaries = PrivacyCanaryTests.canaries(s).filter { $0.count >= 6 }
        for run in s.runs {
            for canary in canaries {
                #expect(!run.stderr.contains(canary), "stderr of \(run.arguments.prefix(2)) carries a canary:\n\(run.stderr)")
            }
        }
        let metrics = (try? FileManager.default.contentsOfDirectory(atPath: s.metrics)) ?? []
        #expect(!metrics.isEmpty, "the passes wrote metrics")
        for name in metrics {
            let text = try String(contentsOfFile: s.metrics + "/" + name, encoding: .utf8)
            for canary in canaries { #expect(!text.contains(canary), "\(name) carries a canary") }
        }
        for store in ["main", "mesh-a", "mesh-b", "pool", "alice", "bob"] {
            let db = try Database(path: s.store(store))
            var ledger = ""
            try db.forEachRow("SELECT job, outcome, counts, coalesce(reason, '') FROM job_runs") { row in
                ledger += row.values.map { "\($0)" }.joined(separator: " ") + "\n"
            }
            // mesh-b ran `mesh panic-wipe`, which also clears the mesh jobs' ledger rows.
            #expect(!ledger.isEmpty || store == "mesh-b")
            for canary in canaries { #expect(!ledger.contains(canary), "the \(store) ledger carries a canary") }
        }
    }

    @Test func everyJobAndCommandHasACanaryCase() throws {
        let s = try PrivacyCanaryTests.session.get()
        let listing = try JobProcess.run(["help", "--json"], environment: JobProcess.environment(home: s.home.path))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [String: Any])
        let names = ((object["jobs"] as? [[String: Any]] ?? []) + (object["commands"] as? [[String: Any]] ?? [])).compactMap { $0["name"] as? String }
        #expect(names.count > 10)
        let exercised = Set(s.runs.map { run -> String in
            let words = run.arguments.prefix { !$0.hasPrefix("-") }
            return names.filter { words.joined(separator: " ").hasPrefix($0) }.max { $0.count < $1.count } ?? ""
        })
        for name in names { #expect(exercised.contains(name), "no canary case runs '\(name)': add one to PrivacyCanaryTests.exercise") }
    }

    @Test func theCanaryRunsReallyExercisedFailurePathsToo() throws {
        let s = try PrivacyCanaryTests.session.get()
        // Unreachable canary hosts and malformed canary input must have produced failures with messages on stderr.
        #expect(s.runs.contains { $0.arguments.first == "send-wakeups" && $0.exitCode == 75 })
        #expect(s.runs.contains { $0.arguments == ["prefetch"] && $0.exitCode == 75 }, "prefetch reached for the canary Endorser host")
        #expect(s.runs.contains { $0.arguments == ["mint-pool"] && $0.exitCode == 0 && $0.stdout.contains("unsupported-identity") }, "the passkey identity made mint-pool skip")
        #expect(s.runs.contains { $0.arguments.starts(with: ["identity", "remove"]) && $0.exitCode == 65 }, "removing the active identity without --force was refused")
        #expect(s.extraCanaries.filter { $0.hasPrefix("eyJ") }.count == 5, "the minted JWTs are canaries too")
        #expect(s.extraCanaries.filter { $0.hasPrefix("did:ethr:0x") }.count == 2, "both identities' DIDs are canaries")
        #expect(s.runs.contains { $0.arguments.starts(with: ["offers", "accept"]) && $0.stdout.contains(PrivacyCanaryTests.ticket) }, "the live offer arrived and its ticket was handed over on stdout")
        #expect(s.runs.contains { $0.arguments.starts(with: ["offers", "decline"]) && $0.exitCode == 0 }, "a held offer was pulled and declined")
        #expect(s.runs.filter { $0.arguments == ["serve-link"] }.count >= 2, "the listeners' own stderr was scanned")
        #expect(s.runs.contains { $0.arguments == ["serve-relay"] && $0.exitCode == 0 && $0.stderr.contains("relay-api.pass_finished") },
                "serve-relay answered the canary requests and started a send-wakeups pass")
        #expect(s.runs.contains { $0.arguments.first == "retrigger-stale" && $0.exitCode != 0 })
        #expect(s.runs.contains { $0.arguments == ["watch-syncthing"] && $0.exitCode == 0 && $0.stderr.contains("syncthing.not_ready") },
                "the watcher retried for the canary Syncthing's Device ID and stopped cleanly on SIGTERM")
        #expect(s.runs.contains { $0.arguments.starts(with: ["relay", "register"]) && $0.exitCode == 65 })
        #expect(s.runs.contains { $0.stderr.contains(" level=info ") })
        #expect(s.runs.contains { $0.stderr.contains(#""level":"info""#) }, "JSON logs were scanned too")
        // The scan is not vacuous: the program did handle the canaries (stdout may show them to their owner).
        let peerIDs = s.extraCanaries.filter { $0.count == 16 }
        #expect(!peerIDs.isEmpty)
        #expect(s.runs.contains { run in peerIDs.contains { run.stdout.contains($0) } }, "the generated peer ids are real values the commands print on stdout")
        #expect(s.runs.contains { $0.stdout.contains("\"devices\"") || $0.stdout.contains("devices") }, "relay show ran over the canary registrations")
        #expect(s.deliveredToB.count == 1, "the canary file crossed the emulated mesh once, encrypted")
    }
}

/// A throwaway P-256 key in PKCS#8 PEM, as Apple issues `.p8` files.
enum P256PEM {
    static func write(to path: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("openssl genpkey failed") }
    }
}
