import Cryptography
import Runner

/// The one-line grant bundle `grants issue` prints and `grants accept` reads — the only way a secret leaves the store:
/// `vnidrop-grant-v1.<issuer endpoint>.<holder endpoint>.<grant id>.<secret>.<expires ms|never>` (lowercase hex).
package struct GrantBundle: Sendable {
    package static let prefix = "vnidrop-grant-v1"
    package let issuer: EndpointID
    package let holder: EndpointID
    package let grantID: [UInt8]
    package let secret: SecretBytes
    /// Advisory copy of the issuer's idle deadline at issue time.
    package let expiresAt: Int64?

    package init(issuer: EndpointID, holder: EndpointID, grantID: [UInt8], secret: SecretBytes, expiresAt: Int64?) {
        self.issuer = issuer
        self.holder = holder
        self.grantID = grantID
        self.secret = secret
        self.expiresAt = expiresAt
    }

    /// The line to hand to the holder.
    package var line: String {
        [GrantBundle.prefix, issuer.hex, holder.hex, Hex.encode(grantID), Hex.encode(secret.copyBytes()),
         expiresAt.map(String.init) ?? "never"].joined(separator: ".")
    }

    /// Parses a bundle (surrounding whitespace allowed). Errors never echo the input.
    package init(parsing text: String) throws {
        let bad = JobError.badInput("grant-bundle-malformed", "the grant bundle is malformed; copy the whole line printed by 'job grants issue'")
        let fields = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 6, fields[0] == GrantBundle.prefix,
              fields[1].utf8.count == 64, fields[2].utf8.count == 64, fields[3].utf8.count == 32, fields[4].utf8.count == 64,
              let issuerBytes = try? Hex.decode(fields[1]), let holderBytes = try? Hex.decode(fields[2]),
              let grantBytes = try? Hex.decode(fields[3]), let secretBytes = try? Hex.decode(fields[4]) else { throw bad }
        if fields[5] == "never" { expiresAt = nil }
        else {
            guard let value = Int64(fields[5]), value > 0, fields[5].allSatisfy(\.isNumber) else { throw bad }
            expiresAt = value
        }
        issuer = try EndpointID(bytes: issuerBytes)
        holder = try EndpointID(bytes: holderBytes)
        grantID = grantBytes
        secret = SecretBytes(secretBytes)
    }
}

import Foundation
