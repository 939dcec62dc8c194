import Cryptography
import Foundation
import HTTPClient
import Testing
import TestSupport

/// `POST /api/v2/trigger` on `job serve-relay` (docs/protocols/trigger-v2.md): each key type accepted through nginx,
/// each forgery refused with its code storing nothing but the rate-limit count, replays refused across hosts, the
/// v1 pin and its lifting, and the authenticated flag in `/status`.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct TriggerV2RelayTests {
    func cli(_ front: RelayFront, _ arguments: [String], now: String? = nil) throws -> JobProcess.Result {
        try JobProcess.run(["--store", front.store] + (now.map { ["--now", $0] } ?? []) + arguments, environment: front.environment)
    }

    func register(_ front: RelayFront, _ device: String, _ n: Int, now: String? = nil) throws {
        let registered = try cli(front, ["relay", "register", "--device-id", device, "--apns-token", Fixture.token(n)], now: now)
        #expect(registered.exitCode == 0, "\(registered.stderr)")
    }

    func show(_ front: RelayFront) throws -> [String: Any] { try cli(front, ["--json", "relay", "show"]).jsonObject() }

    func post(_ front: RelayFront, _ body: [UInt8], base: String? = nil) throws -> (status: Int, word: String?) {
        let answer = try front.send("POST", "/api/v2/trigger", raw: body, base: base)
        return (answer.status, answer.json["error"] as? String)
    }

    @Test(arguments: StoreKind.allCases) func eachKeyTypesTriggerIsAcceptedThroughNginxAndPinsOnlyItsDeviceID(_ kind: StoreKind) throws {
        try #require(RelayFront.isNginxInstalled, "Debian's nginx package is required")
        let front = try RelayFront(kind, chain: nil)
        let keys = try TriggerV2Keys.names.map(TriggerV2Keys.key)
        for (n, key) in keys.enumerated() { try register(front, key.deviceID, 200 + n) }
        let unpinned = Fixture.deviceID(210)
        try register(front, unpinned, 210)
        try front.startServer(["--no-push"])
        try front.startNginx()
        defer { front.stop() }

        for key in keys {
            let answer = try front.send("POST", "/api/v2/trigger", raw: TriggerV2Keys.body(key))
            #expect(answer.status == 202 && answer.json["devices_notified"] as? Int == 1, "\(key.certificate.keyType): \(answer.json)")
        }
        var shown = try show(front)
        #expect(shown["devices_pinned_to_v2"] as? Int == 3 && shown["trigger_nonces_held"] as? Int == 3, "\(shown)")

        // The pin: v1 for a pinned Device ID is 401 with its documented body; an unpinned one still gets through.
        let refused = try front.send("POST", "/api/v1/trigger", ["device_id": keys[0].deviceID])
        #expect(refused.status == 401 && refused.json["error"] as? String == "authenticated-trigger-required")
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": unpinned]).status == 202)
        shown = try show(front)
        #expect(shown["v1_triggers_refused_by_pin"] as? Int == 1 && shown["devices_pinned_to_v2"] as? Int == 3)

        // Lifting the pin restores v1 for that Device ID only.
        let unpin = try cli(front, ["--json", "relay", "unpin", "--device-id", keys[0].deviceID])
        #expect(unpin.exitCode == 0, "\(unpin.stderr)")
        #expect(try unpin.jsonObject()["status"] as? String == "unpinned")
        #expect(try cli(front, ["relay", "unpin", "--device-id", unpinned]).stdout.contains("not pinned"))
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": keys[0].deviceID]).status == 202)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": keys[1].deviceID]).status == 401)
        #expect(try show(front)["devices_pinned_to_v2"] as? Int == 2)
        #expect(try cli(front, ["relay", "unpin", "--device-id", "not-an-id"]).exitCode == 65)

        // Privacy: no certificate, Device ID or nonce in what serve-relay wrote or in the store.
        let stored = try front.testStore.storedBytes()
        for key in keys {
            let certText = StrictBase64.encode(key.certificateDER)
            for canary in [key.deviceID, String(certText.prefix(40))] {
                #expect(!front.serverOutput.contains(canary))
                #expect(stored.range(of: Data(canary.utf8)) == nil)
            }
            #expect(stored.range(of: Data(key.certificateDER.prefix(64))) == nil)
        }
    }

    @Test(arguments: StoreKind.allCases) func eachForgeryIsRefusedWithItsCodeAndStoresNothingButTheRateLimitCount(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        let victim = try TriggerV2Keys.key("syncthing-p384"), p256 = try TriggerV2Keys.key("openssl-p256")
        let rsa = try TriggerV2Keys.key("openssl-rsa3072")
        try register(front, victim.deviceID, 220)
        let trailing = victim.certificateDER + [0], truncated = Array(victim.certificateDER.dropLast(10))
        let garbage = [UInt8](repeating: 0x30, count: 300)
        for (n, der) in [trailing, truncated, garbage].enumerated() { try register(front, DeviceIDEncoding.of(certificateDER: der), 221 + n) }
        let port = try front.startServer(["--no-push"])
        defer { front.stop() }
        let base = "http://127.0.0.1:\(port)"
        let now = Date()
        let ts = String(Int64(now.timeIntervalSince1970))
        func nonce() throws -> [UInt8] { try SecureRandom.bytes(count: 16) }
        func signed(_ key: DeviceSigningKey, route: String = TriggerV2.signedRoute, deviceID: String, ts: String, nonce: [UInt8]) throws -> [UInt8] {
            try key.signature(for: TriggerV2.message(route: route, deviceID: deviceID, timestamp: ts, nonce: nonce))
        }
        var cases: [(String, [UInt8], Int, String)] = []
        var n = try nonce()
        cases.append(("another key's certificate naming the victim", TriggerV2Keys.body(deviceID: victim.deviceID, certificate: p256.certificateDER, ts: ts, nonce: n,
                      signature: try signed(p256, deviceID: victim.deviceID, ts: ts, nonce: n)), 401, "certificate-mismatch"))
        n = try nonce()
        let other = try makeP384Certificate()
        let otherP384 = try DeviceSigningKey(certificatePEM: Array(other.cert.utf8), privateKeyPEM: Array(other.key.utf8))
        cases.append(("the victim's certificate signed by another key", TriggerV2Keys.body(deviceID: victim.deviceID, certificate: victim.certificateDER, ts: ts,
                      nonce: n, signature: try signed(otherP384, deviceID: victim.deviceID, ts: ts, nonce: n)), 401, "bad-signature"))
        n = try nonce()
        cases.append(("a signature over another Device ID", TriggerV2Keys.body(deviceID: victim.deviceID, certificate: victim.certificateDER, ts: ts, nonce: n,
                      signature: try signed(victim, deviceID: rsa.deviceID, ts: ts, nonce: n)), 401, "bad-signature"))
        n = try nonce()
        cases.append(("a signature over another route", TriggerV2Keys.body(deviceID: victim.deviceID, certificate: victim.certificateDER, ts: ts, nonce: n,
                      signature: try signed(victim, route: "POST /api/v1/trigger", deviceID: victim.deviceID, ts: ts, nonce: n)), 401, "bad-signature"))
        cases.append(("five minutes old", try TriggerV2Keys.body(victim, at: now.addingTimeInterval(-300)), 401, "timestamp-out-of-window"))
        cases.append(("five minutes ahead", try TriggerV2Keys.body(victim, at: now.addingTimeInterval(300)), 401, "timestamp-out-of-window"))
        for (name, der) in [("trailing bytes", trailing), ("a truncated certificate", truncated), ("not a certificate", garbage)] {
            n = try nonce()
            let device = DeviceIDEncoding.of(certificateDER: der)
            cases.append((name, TriggerV2Keys.body(deviceID: device, certificate: der, ts: ts, nonce: n,
                                                   signature: try signed(victim, deviceID: device, ts: ts, nonce: n)), 400, "bad-certificate"))
        }
        let large = [0x30, 0x82, 0x13, 0x84] + [UInt8](repeating: 0, count: 5000)
        n = try nonce()
        cases.append(("an absurdly large certificate", TriggerV2Keys.body(deviceID: DeviceIDEncoding.of(certificateDER: large), certificate: large, ts: ts, nonce: n,
                                                                           signature: try signed(victim, deviceID: victim.deviceID, ts: ts, nonce: n)), 413, "certificate-too-large"))
        cases.append(("an unsigned v1 body", Array("{\"device_id\":\"\(victim.deviceID)\"}".utf8), 400, "missing-member"))
        for (name, body, status, word) in cases {
            let answer = try post(front, body, base: base)
            #expect(answer.status == status && answer.word == word, "\(name): \(answer)")
        }
        var shown = try show(front)
        #expect(shown["devices_awaiting_push"] as? Int == 0 && shown["devices_pinned_to_v2"] as? Int == 0 && shown["trigger_nonces_held"] as? Int == 0,
                "a refusal stored something: \(shown)")

        // The genuine request is accepted once; the same bytes again are a replay.
        let genuine = try TriggerV2Keys.body(victim)
        #expect(try post(front, genuine, base: base).status == 202)
        let replay = try post(front, genuine, base: base)
        #expect(replay.status == 409 && replay.word == "replayed-nonce")
        shown = try show(front)
        #expect(shown["trigger_nonces_held"] as? Int == 1 && shown["devices_pinned_to_v2"] as? Int == 1)

        // The forgeries that passed the cheap checks counted: 4 + 1 + 1 = 6 of the victim's 10 a minute; four more
        // forgeries fill the window, then even the genuine helper waits.
        for _ in 0..<4 {
            n = try nonce()
            let forged = TriggerV2Keys.body(deviceID: victim.deviceID, certificate: victim.certificateDER, ts: ts, nonce: n,
                                            signature: try signed(otherP384, deviceID: victim.deviceID, ts: ts, nonce: n))
            #expect(try post(front, forged, base: base).status == 401)
        }
        let limited = try front.send("POST", "/api/v2/trigger", raw: TriggerV2Keys.body(victim), base: base)
        #expect(limited.status == 429 && limited.response.header("Retry-After") != nil)
    }

    @Test func aReplayToASecondServeRelayOnTheSamePostgreSQLStoreIsRefused() throws {
        let front = try RelayFront(.postgresql, chain: nil)
        let key = try TriggerV2Keys.key("openssl-rsa3072")
        try register(front, key.deviceID, 230)
        let first = try front.startServer(["--no-push"]), second = try front.startServer(["--no-push"])
        defer { front.stop() }
        let body = try TriggerV2Keys.body(key)
        #expect(try post(front, body, base: "http://127.0.0.1:\(first)").status == 202)
        let replay = try post(front, body, base: "http://127.0.0.1:\(second)")
        #expect(replay.status == 409 && replay.word == "replayed-nonce")
        // A fresh request to the second host is fine: the pin and the nonce table are shared, nothing else is.
        #expect(try post(front, TriggerV2Keys.body(key), base: "http://127.0.0.1:\(second)").status == 202)
    }

    @Test func theFixtureVectorsAreAcceptedOrRefusedAsTheySay() throws {
        let front = try RelayFront(.sqlite, chain: nil)
        let (now, vectors) = try TriggerV2Keys.vectors()
        let at = "@\(now)"
        for (n, device) in Set(vectors.map(\.deviceID)).sorted().enumerated() { try register(front, device, 240 + n, now: at) }
        let port = try front.startServer(["--no-push"], now: at)
        defer { front.stop() }
        let words = Dictionary(uniqueKeysWithValues: TriggerV2.Refusal.allCases.map { ($0.word, $0.status) })
        for vector in vectors {
            let answer = try post(front, vector.body, base: "http://127.0.0.1:\(port)")
            if vector.valid {
                #expect(answer.status == 202, "\(vector.name): \(answer)")
            } else {
                #expect(answer.word == vector.refusal && answer.status == words[vector.refusal ?? ""], "\(vector.name): \(answer)")
            }
        }
    }

    @Test func statusReportsWhetherTheLastTriggerWasAuthenticatedAndAPinnedV1TriggerObservesNothing() throws {
        let chain = try StoreKitChain()
        let front = try RelayFront(.sqlite, chain: chain)
        let key = try TriggerV2Keys.key("syncthing-p384")
        let port = try front.startServer(["--no-push"])
        defer { front.stop() }
        let base = "http://127.0.0.1:\(port)"
        let jws = try chain.jws(StoreKitChain.payload(now: Date()))
        #expect(try front.send("POST", "/api/v1/provision", ["device_id": key.deviceID, "apns_token": Fixture.token(250), "transaction_id": jws],
                               base: base).status == 200)
        func status() throws -> [String: Any] {
            let answer = try front.send("POST", "/api/v1/status", ["device_id": key.deviceID, "signed_transaction": jws], base: base)
            #expect(answer.status == 200)
            return answer.json
        }
        var json = try status()
        #expect(json["last_trigger_authenticated"] as? Bool == false && json["v1_trigger_observed"] as? Bool == false)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": key.deviceID], base: base).status == 202)
        json = try status()
        #expect(json["last_trigger_authenticated"] as? Bool == false && json["v1_trigger_observed"] as? Bool == true)
        #expect(Set(json.keys) == ["v1_trigger_observed", "last_trigger_observed_at", "last_trigger_authenticated", "checked_at"])

        Thread.sleep(forTimeInterval: 1.1)
        #expect(try post(front, TriggerV2Keys.body(key), base: base).status == 202)
        json = try status()
        #expect(json["last_trigger_authenticated"] as? Bool == true)
        let observed = try #require(json["last_trigger_observed_at"] as? String)

        // Pinned: a v1 trigger is refused and observes nothing (the time and the flag stay).
        Thread.sleep(forTimeInterval: 1.1)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": key.deviceID], base: base).status == 401)
        json = try status()
        #expect(json["last_trigger_observed_at"] as? String == observed && json["last_trigger_authenticated"] as? Bool == true)

        #expect(try cli(front, ["relay", "unpin", "--device-id", key.deviceID]).exitCode == 0)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": key.deviceID], base: base).status == 202)
        json = try status()
        #expect(json["last_trigger_authenticated"] as? Bool == false && json["last_trigger_observed_at"] as? String != observed)
    }

    /// A fresh P-384 certificate and key (PEM), made with openssl as Syncthing would.
    func makeP384Certificate() throws -> (cert: String, key: String) {
        let directory = TemporaryDirectory("p384")
        let made = try ExternalTool.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384", "-nodes",
                                                             "-subj", "/CN=syncthing", "-keyout", directory.file("key.pem"), "-out", directory.file("cert.pem")])
        guard made.status == 0 else { throw TestFailure("openssl req failed") }
        return (try String(contentsOfFile: directory.file("cert.pem"), encoding: .utf8), try String(contentsOfFile: directory.file("key.pem"), encoding: .utf8))
    }
}
