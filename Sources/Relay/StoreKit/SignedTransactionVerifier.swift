import COpenSSL
import Cryptography
import Foundation

/// Offline verification of a StoreKit 2 signed transaction (compact JWS), as Apple's App Store Server Library
/// does it: the `x5c` chain ends in the configured root byte for byte, the intermediate carries
/// `1.2.840.113635.100.6.2.1` and the leaf `1.2.840.113635.100.6.11.1`, every certificate holds at the
/// transaction's `signedDate`, the ES256 signature is the leaf's; then the payload's bundle, product, type,
/// environment and reason are the expected ones. Never looser than Apple's strict checks: a header carrying `crit`
/// is refused (RFC 7515 §4.1.11: no extension is understood here), and so is an intermediate without keyUsage
/// keyCertSign or without an authority key identifier. Whether it is still active (`Verified.lapse(now:)`: neither
/// revoked nor expired) is the caller's next check.
///
/// Pure apart from OpenSSL: the caller passes the configuration.
enum SignedTransactionVerifier {
    static let intermediateOID = "1.2.840.113635.100.6.2.1"
    static let leafOID = "1.2.840.113635.100.6.11.1"
    static let subscriptionType = "Auto-Renewable Subscription"
    static let acceptedReasons: Set<String> = ["PURCHASE", "RENEWAL"]
    /// Longest JWS looked at (Apple's are about 4 KB).
    static let maxLength = 12 << 10

    /// Why a signed transaction was refused. Each maps to one answer code (`RelayAPI` documents them).
    enum Refusal: Error, Equatable, Sendable {
        /// Not a compact JWS with the expected header and payload shapes.
        case malformed
        /// The chain, an OID, a validity period or the signature does not hold.
        case unverified
        /// Verified, but for another app, product, type, environment or transaction reason.
        case foreign
        /// Verified and ours, but refunded or revoked.
        case revoked
        /// Verified and ours, but `expiresDate` is not after now.
        case expired
    }

    /// The limited record kept from a verified transaction (never the JWS).
    struct Verified: Equatable, Sendable {
        let originalTransactionID: String
        let productID: String
        let environment: String
        let expiresAt: Int64
        let signedAt: Int64
        /// `revocationDate`, when Apple refunded or revoked it.
        let revokedAt: Int64?

        /// Pure: `.revoked` or `.expired` when the verified subscription is not active at `now`, else nil.
        func lapse(now: Int64) -> Refusal? {
            if revokedAt != nil { return .revoked }
            return expiresAt > now ? nil : .expired
        }
    }

    static func verify(_ jws: String, configuration: StoreKitConfiguration) throws(Refusal) -> Verified {
        guard jws.utf8.count <= maxLength else { throw .malformed }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = try? Base64URL.decode(String(parts[0])),
              let payloadBytes = try? Base64URL.decode(String(parts[1])),
              let signature = try? Base64URL.decode(String(parts[2])) else { throw .malformed }
        guard let headerStrings = try? StrictJSONObject.strings(headerBytes), headerStrings["alg"] == "ES256",
              let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
              let x5c = header["x5c"] as? [String], x5c.count == 3 else { throw .malformed }
        // A critical header extension this verifier cannot honour (and it honours none): not a valid signature.
        guard header["crit"] == nil else { throw .unverified }
        let certificates = x5c.map { Data(base64Encoded: $0).map { Array($0) } }
        guard let leafDER = certificates[0], let intermediateDER = certificates[1], let rootDER = certificates[2] else { throw .malformed }
        guard (try? StrictJSONObject.strings(payloadBytes)) != nil,
              let payload = try? JSONSerialization.jsonObject(with: Data(payloadBytes)) as? [String: Any] else { throw .malformed }
        guard let signedAt = milliseconds(payload["signedDate"]) else { throw .malformed }

        // The chain: the presented root is the configured one byte for byte, and verification trusts only it.
        guard rootDER == configuration.rootDER else { throw .unverified }
        guard let leaf = X509Chain.parse(leafDER) else { throw .unverified }
        defer { X509_free(leaf) }
        guard let intermediate = X509Chain.parse(intermediateDER) else { throw .unverified }
        defer { X509_free(intermediate) }
        guard let root = X509Chain.parse(configuration.rootDER) else { throw .unverified }
        defer { X509_free(root) }
        guard X509Chain.hasExtension(intermediate, oid: intermediateOID), X509Chain.hasExtension(leaf, oid: leafOID) else { throw .unverified }
        guard X509Chain.mayIssueCertificates(intermediate), X509Chain.hasAuthorityKeyIdentifier(intermediate) else { throw .unverified }
        guard X509Chain.verify(leaf: leaf, intermediate: intermediate, root: root, at: signedAt / 1000) else { throw .unverified }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard X509Chain.verifyES256(signature, message: signingInput, certificate: leaf) else { throw .unverified }

        // The payload: ours, then alive.
        guard let original = payload["originalTransactionId"] as? String, !original.isEmpty, original.utf8.count <= 64,
              let product = payload["productId"] as? String, let environment = payload["environment"] as? String,
              let bundle = payload["bundleId"] as? String, let type = payload["type"] as? String else { throw .malformed }
        guard bundle == configuration.bundleID, configuration.productIDs.contains(product), type == subscriptionType,
              configuration.environments.contains(environment) else { throw .foreign }
        if let reason = payload["transactionReason"] {
            guard let reason = reason as? String, acceptedReasons.contains(reason) else { throw .foreign }
        }
        var revokedAt: Int64?
        if let revocation = payload["revocationDate"], !(revocation is NSNull) { revokedAt = milliseconds(revocation) ?? signedAt }
        guard let expiresAt = milliseconds(payload["expiresDate"]) else { throw .malformed }
        return Verified(originalTransactionID: original, productID: product, environment: environment, expiresAt: expiresAt, signedAt: signedAt,
                        revokedAt: revokedAt)
    }

    /// A JSON number of Unix milliseconds (whole, non-negative), or nil.
    private static func milliseconds(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        guard double.isFinite, double >= 0, double < 1e15, double == double.rounded() else { return nil }
        return Int64(double)
    }
}
