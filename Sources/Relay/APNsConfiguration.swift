import Cryptography
import Foundation
import Runner

/// The relay's APNs settings, read from the environment (`APNS_*`) and checked before any push.
///
/// `APNS_KEY_FILE` is the `.p8` provider key (PKCS#8 P-256), `APNS_KEY_ID` its 10-character key id,
/// `APNS_TEAM_ID` the developer team, `APNS_TOPIC` the app's bundle id. `APNS_URL` (default production)
/// and `APNS_SANDBOX_URL` (default Apple's sandbox) are the endpoints for each registration environment;
/// `APNS_CA_FILE` adds a CA bundle for a private test endpoint. Failures are configuration errors (78)
/// whose messages name the variable, never its value.
struct APNsConfiguration {
    static let productionURL = "https://api.push.apple.com"
    static let sandboxURL = "https://api.sandbox.push.apple.com"

    static let environmentKeys: [(name: String, help: String)] = [
        ("APNS_KEY_FILE", "the APNs provider key (.p8, PKCS#8 P-256); default: the systemd credential apns-key"),
        ("APNS_KEY_ID", "the provider key's key id"),
        ("APNS_TEAM_ID", "the Apple developer team id (JWT issuer)"),
        ("APNS_TOPIC", "the app's bundle id (apns-topic)"),
        ("APNS_URL", "APNs endpoint for production registrations (default \(productionURL))"),
        ("APNS_SANDBOX_URL", "APNs endpoint for sandbox registrations (default \(sandboxURL))"),
        ("APNS_CA_FILE", "extra CA bundle (PEM) for a private test endpoint"),
    ]

    let key: P256PrivateKey
    let keyID: String
    let teamID: String
    let topic: String
    let productionURL: String
    let sandboxURL: String
    let caFile: String?

    func baseURL(for environment: APNsEnvironment) -> String {
        environment == .production ? productionURL : sandboxURL
    }

    init(environment env: (String) -> String?) throws {
        func required(_ name: StaticString) throws -> String {
            guard let value = env("\(name)") else { throw JobError.configuration("apns-config", "\(name) is not set") }
            return value
        }
        // Under systemd the unit's `LoadCredential=apns-key:…` hands the key over where DynamicUser can read it.
        let credential = env("CREDENTIALS_DIRECTORY").map { $0 + "/apns-key" }
        let keyFile: String
        if let explicit = env("APNS_KEY_FILE") { keyFile = explicit }
        else if let credential, FileManager.default.fileExists(atPath: credential) { keyFile = credential }
        else { throw JobError.configuration("apns-config", "APNS_KEY_FILE is not set (nor a systemd credential apns-key)") }
        keyID = try required("APNS_KEY_ID")
        teamID = try required("APNS_TEAM_ID")
        topic = try required("APNS_TOPIC")
        for (name, value) in [("APNS_KEY_ID", keyID), ("APNS_TEAM_ID", teamID), ("APNS_TOPIC", topic)] {
            guard value.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0 != "\"" && $0 != "\\" }) else {
                throw JobError.configuration("apns-config", "\(name) holds characters a JWT or header cannot carry")
            }
        }
        guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
            throw JobError.configuration("apns-key", "APNS_KEY_FILE cannot be read")
        }
        do { key = try P256PrivateKey(pkcs8PEM: pem) } catch {
            throw JobError.configuration("apns-key", "APNS_KEY_FILE is not a PKCS#8 P-256 (.p8) key")
        }
        productionURL = try Self.endpoint(env("APNS_URL") ?? Self.productionURL, "APNS_URL")
        sandboxURL = try Self.endpoint(env("APNS_SANDBOX_URL") ?? Self.sandboxURL, "APNS_SANDBOX_URL")
        if let ca = env("APNS_CA_FILE") {
            guard FileManager.default.isReadableFile(atPath: ca) else { throw JobError.configuration("apns-config", "APNS_CA_FILE cannot be read") }
            caFile = ca
        } else {
            caFile = nil
        }
    }

    /// An `https://host[:port]` base without a trailing slash (APNs is HTTP/2 over TLS only).
    static func endpoint(_ text: String, _ name: StaticString) throws -> String {
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base), url.scheme?.lowercased() == "https", url.host != nil, url.path.isEmpty, url.query == nil else {
            throw JobError.configuration("apns-config", "\(name) must be an https:// base URL without a path")
        }
        return base
    }

    /// A fingerprint of the signing identity, so a changed key, key id or team forces a new provider token.
    func fingerprint(_ keyring: StoreKeyring) -> [UInt8] {
        keyring.blindIndex(Array("\(keyID)\u{1}\(teamID)\u{1}".utf8) + key.publicKey.rawRepresentation, purpose: "relay.apns-provider-key")
    }
}
