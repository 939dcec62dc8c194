import Cryptography
import Foundation
import TestSupport

/// Test StoreKit signing chains made with the openssl CLI: a root, an intermediate carrying Apple's WWDR OID
/// (`1.2.840.113635.100.6.2.1`) and a leaf carrying the receipt-signing OID (`1.2.840.113635.100.6.11.1`),
/// plus the forgeries a relay must refuse. Signed transactions are compact JWS made with the leaf's key.
final class StoreKitChain {
    static let openssl = "/usr/bin/openssl"
    static let bundleID = "eu.vaultsync.app"
    static let productID = "eu.vaultsync.relay.monthly"

    let directory = TemporaryDirectory("storekit")
    /// The root the relay is configured with (`STOREKIT_ROOT_CA_FILE`).
    var rootFile: String { directory.file("root.pem") }

    /// One certificate (PEM file) and its key (PKCS#8 PEM file).
    struct Issued {
        let certificate: String
        let key: String
        var der: [UInt8] {
            let pem = (try? String(contentsOfFile: certificate, encoding: .utf8)) ?? ""
            let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            return Array(Data(base64Encoded: body) ?? Data())
        }
    }

    let root: Issued
    let intermediate: Issued
    let leaf: Issued

    init() throws {
        root = try Self.makeRoot(directory, "root")
        intermediate = try Self.issue(directory, "intermediate", by: root, ca: true, oid: "1.2.840.113635.100.6.2.1")
        leaf = try Self.issue(directory, "leaf", by: intermediate, ca: false, oid: "1.2.840.113635.100.6.11.1")
    }

    static func run(_ arguments: [String]) throws {
        let result = try ExternalTool.run(openssl, arguments)
        guard result.status == 0 else { throw TestFailure("openssl \(arguments.first ?? "") failed: \(result.output)") }
    }

    /// A self-signed P-256 root named like Apple's.
    static func makeRoot(_ directory: TemporaryDirectory, _ name: String) throws -> Issued {
        let issued = Issued(certificate: directory.file("\(name).pem"), key: directory.file("\(name).key"))
        try run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", issued.key, "-out", issued.certificate,
                 "-days", "3650", "-subj", "/CN=Apple Root CA - G3/OU=Apple Certification Authority/O=Apple Inc./C=US",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        return issued
    }

    /// A certificate signed by `issuer`, valid `days` from now, with the Apple marker extension `oid` when given.
    /// `extensions` replaces the usual basicConstraints and keyUsage lines (openssl extfile syntax), for the forgeries.
    static func issue(_ directory: TemporaryDirectory, _ name: String, by issuer: Issued, ca: Bool, oid: String?, days: Int = 3650,
                      extensions replaced: String? = nil) throws -> Issued {
        let issued = Issued(certificate: directory.file("\(name).pem"), key: directory.file("\(name).key"))
        let csr = directory.file("\(name).csr"), ext = directory.file("\(name).ext")
        var extensions = replaced ?? (ca ? "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n"
                                         : "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n")
        if let oid { extensions += "\(oid)=ASN1:NULL\n" }
        try extensions.write(toFile: ext, atomically: true, encoding: .utf8)
        try run(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", issued.key, "-out", csr,
                 "-subj", ca ? "/CN=Apple Worldwide Developer Relations Certification Authority/OU=G6/O=Apple Inc./C=US"
                             : "/CN=Prod ECC Mac App Store and iTunes Store Receipt Signing/O=Apple Inc./C=US"])
        try run(["x509", "-req", "-in", csr, "-CA", issuer.certificate, "-CAkey", issuer.key, "-CAcreateserial", "-out", issued.certificate,
                 "-days", String(days), "-extfile", ext, "-sha256"])
        return issued
    }

    /// The payload of an active subscription transaction (dates in Unix ms), with `changes` applied (NSNull removes a member).
    static func payload(now: Date, original: String = "2000000123456789", _ changes: [String: Any] = [:]) -> [String: Any] {
        let ms = Int64(now.timeIntervalSince1970 * 1000)
        var payload: [String: Any] = [
            "transactionId": original, "originalTransactionId": original, "bundleId": bundleID, "productId": productID,
            "type": "Auto-Renewable Subscription", "purchaseDate": ms - 86_400_000, "expiresDate": ms + 30 * 86_400_000,
            "signedDate": ms, "environment": "Production", "transactionReason": "PURCHASE", "inAppOwnershipType": "PURCHASED",
        ]
        for (key, value) in changes { payload[key] = value is NSNull ? nil : value }
        return payload
    }

    /// A compact JWS over `payload` with `x5c` = [leaf, intermediate, root] (any of them swapped), signed by `signer`'s key;
    /// `headerAdditions` are further JOSE header members.
    func jws(_ payload: [String: Any], leaf: Issued? = nil, intermediate: Issued? = nil, root: Issued? = nil, signer: Issued? = nil,
             headerAdditions: [String: Any] = [:]) throws -> String {
        let chain = [leaf ?? self.leaf, intermediate ?? self.intermediate, root ?? self.root].map { Data($0.der).base64EncodedString() }
        var members: [String: Any] = ["alg": "ES256", "x5c": chain]
        for (key, value) in headerAdditions { members[key] = value }
        let header = try JSONSerialization.data(withJSONObject: members)
        let body = try JSONSerialization.data(withJSONObject: payload)
        let input = Base64URL.encode(Array(header)) + "." + Base64URL.encode(Array(body))
        let key = try P256PrivateKey(pkcs8PEM: try String(contentsOfFile: (signer ?? leaf ?? self.leaf).key, encoding: .utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
    }
}
