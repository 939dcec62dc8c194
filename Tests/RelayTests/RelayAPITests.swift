import Cryptography
import Foundation
import HTTPClient
import Runner
import Testing
import TestSupport

/// `job serve-relay` behind a real nginx: the endpoints and answer codes of docs/protocols/relay-api.md, StoreKit verification of
/// signed transactions (and every forgery refused with its code), gating, observation and rate limits.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct RelayAPITests {
    let device = Fixture.deviceID(41)
    let token = Fixture.token(41)

    func provisionBody(_ jws: String, device: String? = nil, token: String? = nil) -> [String: Any] {
        ["device_id": device ?? self.device, "apns_token": token ?? self.token, "transaction_id": jws]
    }

    @Test(arguments: StoreKind.allCases) func theAppProvisionsTheHomeserverTriggersAndStatusReportsTheObservationThroughNginx(_ kind: StoreKind) throws {
        try #require(RelayFront.isNginxInstalled, "Debian's nginx package is required")
        let chain = try StoreKitChain()
        let front = try RelayFront(kind, chain: chain)
        try front.startServer(["--no-push"])
        try front.startNginx()
        defer { front.stop() }

        let health = try front.send("GET", "/api/v1/health")
        #expect(health.status == 200 && health.json["status"] as? String == "ok" && health.json["version"] as? String == BuildInfo.version,
                "the project's version, as job --version reports it")
        #expect(health.response.header("Strict-Transport-Security") != nil)

        let jws = try chain.jws(StoreKitChain.payload(now: Date()))
        // Before provisioning: a trigger is refused as "no active subscription" (403), and nothing is observed.
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device]).status == 403)
        #expect(try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": jws]).status == 403)

        let provisioned = try front.send("POST", "/api/v1/provision", provisionBody(jws))
        #expect(provisioned.status == 200 && provisioned.json["status"] as? String == "provisioned", "\(provisioned.json)")
        // iPad + iPhone: a second token on the same Device ID.
        #expect(try front.send("POST", "/api/v1/provision", provisionBody(jws, token: Fixture.token(42))).status == 200)

        let before = try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": jws])
        #expect(before.status == 200 && before.json["v1_trigger_observed"] as? Bool == false && before.json["checked_at"] is String)
        #expect(before.json["last_trigger_observed_at"] == nil)

        let trigger = try front.send("POST", "/api/v1/trigger", ["device_id": device])
        #expect(trigger.status == 202 && trigger.json["status"] as? String == "accepted" && trigger.json["devices_notified"] as? Int == 2, "\(trigger.json)")
        let after = try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": jws])
        #expect(after.status == 200 && after.json["v1_trigger_observed"] as? Bool == true && after.json["last_trigger_observed_at"] is String)
        #expect(Set(after.json.keys) == ["v1_trigger_observed", "last_trigger_observed_at", "last_trigger_authenticated", "checked_at"],
                "status says nothing else")
        #expect(after.json["last_trigger_authenticated"] as? Bool == false, "a v1 trigger is never authenticated")

        // Another homeserver's status with this subscription's JWS: refused, nothing about this one leaks.
        #expect(try front.send("POST", "/api/v1/status", ["device_id": Fixture.deviceID(43), "signed_transaction": jws]).status == 403)

        // DELETE /provision removes one token; the other still gets woken.
        let removed = try front.send("DELETE", "/api/v1/provision", ["device_id": device, "apns_token": Fixture.token(42)])
        #expect(removed.status == 200 && removed.json["status"] as? String == "deprovisioned")
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device]).json["devices_notified"] as? Int == 1)

        // Privacy: nothing identifying in anything serve-relay wrote.
        let output = front.serverOutput
        for canary in [device, token, Fixture.token(42), jws, "2000000123456789"] { #expect(!output.contains(canary)) }
        // The store keeps the limited verification record only: no JWS (nor any part of it), no plain transaction id,
        // Device ID or token in the database or its WAL (on PostgreSQL: in a dump of the database).
        let stored = try front.testStore.storedBytes()
        #expect(stored.count > 0)
        for part in jws.split(separator: ".").map(String.init) + [device, device.replacingOccurrences(of: "-", with: ""), token, "2000000123456789"] {
            #expect(stored.range(of: Data(part.utf8)) == nil, "the store holds \(part.prefix(12))…")
        }
    }

    @Test(arguments: StoreKind.allCases) func forgedOrForeignSignedTransactionsAreRefusedWithTheirCodesAndStoreNothing(_ kind: StoreKind) throws {
        try #require(RelayFront.isNginxInstalled, "Debian's nginx package is required")
        let chain = try StoreKitChain()
        let forgery = TemporaryDirectory("forgery")
        let foreignRoot = try StoreKitChain.makeRoot(forgery, "foreign-root")
        let foreignIntermediate = try StoreKitChain.issue(forgery, "foreign-intermediate", by: foreignRoot, ca: true, oid: "1.2.840.113635.100.6.2.1")
        let foreignLeaf = try StoreKitChain.issue(forgery, "foreign-leaf", by: foreignIntermediate, ca: false, oid: "1.2.840.113635.100.6.11.1")
        let noIntermediateOID = try StoreKitChain.issue(forgery, "plain-intermediate", by: chain.root, ca: true, oid: nil)
        let leafUnderPlain = try StoreKitChain.issue(forgery, "leaf-under-plain", by: noIntermediateOID, ca: false, oid: "1.2.840.113635.100.6.11.1")
        let noLeafOID = try StoreKitChain.issue(forgery, "plain-leaf", by: chain.intermediate, ca: false, oid: nil)
        let shortLeaf = try StoreKitChain.issue(forgery, "short-leaf", by: chain.intermediate, ca: false, oid: "1.2.840.113635.100.6.11.1", days: 1)
        let front = try RelayFront(kind, chain: chain)
        try front.startServer(["--no-push"])
        try front.startNginx()
        defer { front.stop() }

        let now = Date()
        let ok = StoreKitChain.payload(now: now)
        let cases: [(String, String, Int)] = [
            ("foreign root presented", try chain.jws(ok, leaf: foreignLeaf, intermediate: foreignIntermediate, root: foreignRoot), 401),
            ("foreign chain under the configured root's bytes", try chain.jws(ok, leaf: foreignLeaf, intermediate: foreignIntermediate), 401),
            ("intermediate without the WWDR OID", try chain.jws(ok, leaf: leafUnderPlain, intermediate: noIntermediateOID), 401),
            ("leaf without the receipt-signing OID", try chain.jws(ok, leaf: noLeafOID), 401),
            ("leaf not valid at signedDate", try chain.jws(StoreKitChain.payload(now: now.addingTimeInterval(3 * 86_400)), leaf: shortLeaf), 401),
            ("signature by another key", try chain.jws(ok, signer: noLeafOID), 401),
            ("wrong bundle", try chain.jws(StoreKitChain.payload(now: now, ["bundleId": "com.example.other"])), 403),
            ("wrong product", try chain.jws(StoreKitChain.payload(now: now, ["productId": "eu.vaultsync.tip"])), 403),
            ("not a subscription", try chain.jws(StoreKitChain.payload(now: now, ["type": "Non-Consumable"])), 403),
            ("sandbox where only Production is accepted", try chain.jws(StoreKitChain.payload(now: now, ["environment": "Sandbox"])), 403),
            ("revoked", try chain.jws(StoreKitChain.payload(now: now, ["revocationDate": Int64(now.timeIntervalSince1970 * 1000) - 1000, "revocationReason": 1])), 403),
            ("expired", try chain.jws(StoreKitChain.payload(now: now, ["expiresDate": Int64(now.timeIntervalSince1970 * 1000) - 60_000])), 402),
            ("not a JWS", "eyJhbGciOiJFUzI1NiJ9.e30", 400),
            // Today is past 2026-10-31: the legacy numeric id is retired (its window is tested under --now in RelayLegacyAndGatingTests).
            ("legacy numeric id after the cutoff", "2000000123456789", 403),
        ]
        for (what, jws, code) in cases {
            let answer = try front.send("POST", "/api/v1/provision", provisionBody(jws))
            #expect(answer.status == code, "\(what): \(answer.status) \(answer.json)")
        }
        // Nothing was registered by any of them: triggers stay refused and the store holds no device.
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device]).status == 403)
        let shown = try JobProcess.run(["--store", front.store, "--json", "relay", "show"], environment: front.environment)
        #expect(try shown.jsonObject()["devices"] as? Int == 0, "\(shown.stdout)")
        // And the good one passes: the cases were refused for their flaw, not for the chain itself.
        #expect(try front.send("POST", "/api/v1/provision", provisionBody(try chain.jws(ok))).status == 200)
    }

    @Test(arguments: StoreKind.allCases) func theBuiltInRootIsApplesG3ByteForByteAndRefusesATestChain(_ kind: StoreKind) throws {
        let chain = try StoreKitChain()
        // The built-in root: SHA-256 of the DER equals Apple's published fingerprint for Apple Root CA - G3.
        let pem = try String(contentsOfFile: RelayFront.repositoryRoot + "/Sources/Relay/StoreKit/AppleRootCAG3.swift", encoding: .utf8)
        let base64 = pem.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasSuffix("\\") || $0.hasSuffix("==") }
            .map { $0.replacingOccurrences(of: "\\", with: "") }.joined()
        let der = Array(Data(base64Encoded: base64) ?? Data())
        #expect(der.count == 583)
        #expect(Hex.encode(SHA256.hash(der)) == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")

        // Without STOREKIT_ROOT_CA_FILE the relay trusts only Apple's root: a perfectly signed test chain is refused.
        let front = try RelayFront(kind, chain: nil)
        try front.startServer(["--no-push"])
        defer { front.stop() }
        let answer = try front.send("POST", "/api/v1/provision", provisionBody(try chain.jws(StoreKitChain.payload(now: Date()))), base: front.directURL)
        #expect(answer.status == 401, "\(answer.json)")
        #expect(!front.serverOutput.contains("storekit.root_replaced"))
        // With it, the replacement is logged at start.
        let replaced = try RelayFront(kind, chain: chain)
        try replaced.startServer(["--no-push"])
        defer { replaced.stop() }
        #expect(replaced.serverOutput.contains("storekit.root_replaced"))
    }

    @Test(arguments: StoreKind.allCases) func badConfigurationAtStartExits78WithAClearMessage(_ kind: StoreKind) throws {
        let home = TemporaryDirectory("relay-config")
        let testStore = try TestStore.make(kind, in: home, file: "relay.sqlite")
        let store = ["--store", testStore.location]
        let base = JobProcess.environment(home: home.path, testStore.environment)
        let noBundle = try JobProcess.run(store + ["serve-relay", "--listen", "127.0.0.1:0"], environment: base.merging(["STOREKIT_PRODUCT_IDS": "p"]) { $1 })
        #expect(noBundle.exitCode == 78 && noBundle.stderr.contains("STOREKIT_BUNDLE_ID is not set"), "\(noBundle.stderr)")
        let full = base.merging(["STOREKIT_BUNDLE_ID": "eu.vaultsync.app", "STOREKIT_PRODUCT_IDS": "p"]) { $1 }
        let unreadable = try JobProcess.run(store + ["serve-relay", "--listen", "127.0.0.1:0"],
                                            environment: full.merging(["STOREKIT_ROOT_CA_FILE": home.file("missing.pem")]) { $1 })
        #expect(unreadable.exitCode == 78 && unreadable.stderr.contains("STOREKIT_ROOT_CA_FILE cannot be read"), "\(unreadable.stderr)")
        try "not a certificate".write(toFile: home.file("junk.pem"), atomically: true, encoding: .utf8)
        let junk = try JobProcess.run(store + ["serve-relay", "--listen", "127.0.0.1:0"], environment: full.merging(["STOREKIT_ROOT_CA_FILE": home.file("junk.pem")]) { $1 })
        #expect(junk.exitCode == 78 && junk.stderr.contains("STOREKIT_ROOT_CA_FILE is not a PEM or DER certificate"))
        let badEnvironment = try JobProcess.run(store + ["serve-relay", "--listen", "127.0.0.1:0"], environment: full.merging(["STOREKIT_ENVIRONMENTS": "Staging"]) { $1 })
        #expect(badEnvironment.exitCode == 78)
        let noSocket = try JobProcess.run(store + ["serve-relay"], environment: full)
        #expect(noSocket.exitCode == 64 && noSocket.stderr.contains("--listen"))

        // job doctor says the same before anything is started, and which root is trusted.
        let doctor = try JobProcess.run(store + ["doctor"], environment: full)
        #expect(doctor.exitCode == 0 && doctor.stdout.contains("ok    storekit-config: bundle id set, 1 product id, environments Production; trusts the built-in Apple Root CA - G3"),
                "\(doctor.stdout)")
        let badDoctor = try JobProcess.run(store + ["doctor"], environment: full.merging(["STOREKIT_ROOT_CA_FILE": home.file("missing.pem")]) { $1 })
        #expect(badDoctor.exitCode == 78 && badDoctor.stdout.contains("FAIL  storekit-config: STOREKIT_ROOT_CA_FILE cannot be read"), "\(badDoctor.stdout)")
    }
}
