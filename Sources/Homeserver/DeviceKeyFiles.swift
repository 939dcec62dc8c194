import Cryptography
import Foundation
import Runner

/// This Syncthing device's own certificate and key (`cert.pem`, `key.pem` in the folder of its `config.xml`), which
/// sign authenticated (v2) triggers (docs/protocols/trigger-v2.md).
enum DeviceKeyFiles {
    /// Why the key could not be used; the helper then sends v1 triggers and `job doctor` warns with the fix.
    enum Unusable: Error, Equatable {
        /// No config.xml was found, so there is no folder to look in.
        case noConfigFolder
        /// A file is missing or cannot be read (often: key.pem is readable by Syncthing's user only).
        case unreadable(String)
        /// The files do not hold a certificate and its key of an accepted kind.
        case malformed
        /// The certificate is another device's (its Device ID is not this Syncthing's).
        case otherDevice

        /// One line for logs and doctor: what is wrong and the fix (paths are the operator's, never identifiers).
        var explanation: String {
            switch self {
            case .noConfigFolder: "no config.xml was found, so cert.pem and key.pem cannot be located (set SYNCTHING_CONFIG)"
            case .unreadable(let file): "\(file) beside config.xml cannot be read: give the helper's user read access (e.g. run it as Syncthing's user)"
            case .malformed: "cert.pem and key.pem beside config.xml are not a certificate and its unencrypted key of P-384, P-256 or RSA"
            case .otherDevice: "cert.pem beside config.xml is not this Syncthing's certificate (its Device ID differs)"
            }
        }

        /// Why v1 is sent instead, as a log word.
        var fallback: TriggerFallback {
            switch self {
            case .noConfigFolder: .noConfigFolder
            case .unreadable: .keyUnreadable
            case .malformed: .keyMalformed
            case .otherDevice: .keyOfOtherDevice
            }
        }
    }

    /// The signing key beside `configPath`, checked to be the device `myID` (when given).
    static func load(configPath: String?, myID: String?) -> Result<DeviceSigningKey, Unusable> {
        guard let configPath else { return .failure(.noConfigFolder) }
        let folder = URL(fileURLWithPath: configPath).deletingLastPathComponent()
        var files: [[UInt8]] = []
        for name in ["cert.pem", "key.pem"] {
            guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else { return .failure(.unreadable(name)) }
            files.append(Array(data))
        }
        defer { files[1].withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        guard let key = try? DeviceSigningKey(certificatePEM: files[0], privateKeyPEM: files[1]) else { return .failure(.malformed) }
        if let myID, key.deviceID != myID { return .failure(.otherDevice) }
        return .success(key)
    }
}
