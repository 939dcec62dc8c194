import COpenSSL
import Foundation
import Runner

/// What a signed transaction must say to gate the relay: `STOREKIT_BUNDLE_ID`, `STOREKIT_PRODUCT_IDS`
/// (comma-separated), `STOREKIT_ENVIRONMENTS` (default `Production`), and the root it must chain to.
///
/// The root is the built-in Apple Root CA - G3 unless `STOREKIT_ROOT_CA_FILE` (PEM or DER) replaces it — for
/// tests and staging only; `serve-relay` logs that at start. Every failure is a configuration error (78)
/// naming the variable.
package struct StoreKitConfiguration: Sendable {
    static let environmentKeys: [(name: String, help: String)] = [
        ("STOREKIT_BUNDLE_ID", "the app's bundle id signed transactions must carry (required)"),
        ("STOREKIT_PRODUCT_IDS", "comma-separated subscription product ids that gate the relay (required)"),
        ("STOREKIT_ENVIRONMENTS", "comma-separated StoreKit environments accepted (default Production)"),
        ("STOREKIT_ROOT_CA_FILE", "replaces the built-in Apple Root CA - G3 (tests and staging only; logged at start)"),
    ]
    static let knownEnvironments: Set<String> = ["Production", "Sandbox", "Xcode", "LocalTesting"]

    let bundleID: String
    let productIDs: Set<String>
    let environments: Set<String>
    /// DER of the only root accepted.
    let rootDER: [UInt8]
    /// True when the root came from `STOREKIT_ROOT_CA_FILE`.
    let rootReplaced: Bool

    init(bundleID: String, productIDs: Set<String>, environments: Set<String>, rootDER: [UInt8], rootReplaced: Bool) {
        self.bundleID = bundleID
        self.productIDs = productIDs
        self.environments = environments
        self.rootDER = rootDER
        self.rootReplaced = rootReplaced
    }

    init(environment env: [String: String]) throws {
        func value(_ name: String) -> String? {
            guard let text = env[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        func list(_ text: String) -> Set<String> {
            Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        guard let bundle = value("STOREKIT_BUNDLE_ID") else {
            throw JobError.configuration("storekit-config", "STOREKIT_BUNDLE_ID is not set: the relay cannot verify subscriptions without the app's bundle id")
        }
        guard let products = value("STOREKIT_PRODUCT_IDS").map(list), !products.isEmpty else {
            throw JobError.configuration("storekit-config", "STOREKIT_PRODUCT_IDS is not set: name the subscription product ids, comma-separated")
        }
        let environments = value("STOREKIT_ENVIRONMENTS").map(list) ?? ["Production"]
        guard !environments.isEmpty, environments.isSubset(of: Self.knownEnvironments) else {
            throw JobError.configuration("storekit-config", "STOREKIT_ENVIRONMENTS must list Production, Sandbox, Xcode or LocalTesting")
        }
        var root = AppleRootCAG3.der
        var replaced = false
        if let path = value("STOREKIT_ROOT_CA_FILE") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw JobError.configuration("storekit-config", "STOREKIT_ROOT_CA_FILE cannot be read")
            }
            guard let der = Self.certificateDER(Array(data)) else {
                throw JobError.configuration("storekit-config", "STOREKIT_ROOT_CA_FILE is not a PEM or DER certificate")
            }
            root = der
            replaced = true
        }
        self.init(bundleID: bundle, productIDs: products, environments: environments, rootDER: root, rootReplaced: replaced)
    }

    /// The DER of the one certificate in `bytes` (PEM or DER), or nil.
    static func certificateDER(_ bytes: [UInt8]) -> [UInt8]? {
        var certificate: OpaquePointer?
        if bytes.starts(with: Array("-----BEGIN".utf8)) || String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") {
            let bio = bytes.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
            defer { BIO_free(bio) }
            certificate = PEM_read_bio_X509(bio, nil, nil, nil)
        } else {
            certificate = X509Chain.parse(bytes)
        }
        guard let certificate else { return nil }
        defer { X509_free(certificate) }
        return X509Chain.der(of: certificate)
    }
}
