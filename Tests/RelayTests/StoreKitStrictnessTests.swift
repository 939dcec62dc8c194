import Foundation
import Runner
import Testing
import TestSupport

/// `job serve-relay` is never looser than Apple's own verifier: a JWS header with `crit` and an intermediate without
/// keyUsage keyCertSign or without an authority key identifier are refused (docs/roles/relay.md, StoreKit), while the
/// same chain made correctly passes.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct StoreKitStrictnessTests {
    let device = Fixture.deviceID(61)
    let token = Fixture.token(61)

    @Test(arguments: StoreKind.allCases) func aCritHeaderAndAnIntermediateWithoutKeyUsageOrAuthorityKeyIdAreRefused(_ kind: StoreKind) throws {
        let chain = try StoreKitChain()
        let forgery = TemporaryDirectory("storekit-strict")
        let wwdr = "1.2.840.113635.100.6.2.1", receipt = "1.2.840.113635.100.6.11.1"
        let noKeyUsage = try StoreKitChain.issue(forgery, "no-key-usage", by: chain.root, ca: true, oid: wwdr,
                                                 extensions: "basicConstraints=critical,CA:TRUE,pathlen:0\n")
        let signOnly = try StoreKitChain.issue(forgery, "sign-only", by: chain.root, ca: true, oid: wwdr,
                                               extensions: "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,digitalSignature,cRLSign\n")
        let noAuthorityKeyID = try StoreKitChain.issue(forgery, "no-akid", by: chain.root, ca: true, oid: wwdr,
                                                       extensions: "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nauthorityKeyIdentifier=none\n")
        let leaves = try [noKeyUsage, signOnly, noAuthorityKeyID].enumerated().map { index, intermediate in
            try StoreKitChain.issue(forgery, "leaf-\(index)", by: intermediate, ca: false, oid: receipt)
        }
        // The forgeries are what they claim to be, so the refusals below are for that flaw alone.
        let akid = try ExternalTool.run(StoreKitChain.openssl, ["x509", "-in", noAuthorityKeyID.certificate, "-noout", "-text"])
        #expect(akid.status == 0 && !akid.output.contains("Authority Key Identifier") && akid.output.contains("Certificate Sign"))
        let usage = try ExternalTool.run(StoreKitChain.openssl, ["x509", "-in", noKeyUsage.certificate, "-noout", "-text"])
        #expect(usage.status == 0 && !usage.output.contains("Key Usage") && usage.output.contains("Authority Key Identifier"))

        let front = try RelayFront(kind, chain: chain)
        try front.startServer(["--no-push"])
        defer { front.stop() }
        let ok = StoreKitChain.payload(now: Date())
        let cases: [(String, String)] = [
            ("crit naming an extension", try chain.jws(ok, headerAdditions: ["crit": ["exp"], "exp": "1"])),
            ("empty crit", try chain.jws(ok, headerAdditions: ["crit": [String]()])),
            ("intermediate without keyUsage", try chain.jws(ok, leaf: leaves[0], intermediate: noKeyUsage)),
            ("intermediate whose keyUsage lacks keyCertSign", try chain.jws(ok, leaf: leaves[1], intermediate: signOnly)),
            ("intermediate without an authority key identifier", try chain.jws(ok, leaf: leaves[2], intermediate: noAuthorityKeyID)),
        ]
        for (what, jws) in cases {
            let provision = try front.send("POST", "/api/v1/provision", ["device_id": device, "apns_token": token, "transaction_id": jws], base: front.directURL)
            #expect(provision.status == 401 && provision.json["error"] as? String == "unverified-transaction", "\(what): \(provision.status) \(provision.json)")
            let status = try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": jws], base: front.directURL)
            #expect(status.status == 401, "\(what) on /status: \(status.status) \(status.json)")
        }
        // Nothing was registered by any of them.
        let shown = try JobProcess.run(["--store", front.store, "--json", "relay", "show"], environment: front.environment)
        #expect(try shown.jsonObject()["devices"] as? Int == 0, "\(shown.stdout)")
        // The correct chain passes, with an unrelated header member that is not `crit` (e.g. `typ`).
        let good = try front.send("POST", "/api/v1/provision", ["device_id": device, "apns_token": token,
                                                                "transaction_id": try chain.jws(ok, headerAdditions: ["typ": "JWT"])], base: front.directURL)
        #expect(good.status == 200, "\(good.json)")
    }
}
