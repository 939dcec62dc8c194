import RelayWire
import Runner

/// Parses and normalizes the two identifiers the relay receives: Syncthing Device IDs and APNs tokens.
///
/// Errors never echo the value (docs/design.md §5): they say which option was malformed, not what it held.
package enum RelayIdentifiers {
    /// A Syncthing Device ID in its canonical upper-case, dashed form, or nil (the format both ends of the relay
    /// API share, `SyncthingDeviceID`).
    package static func deviceID(_ text: String) -> String? { SyncthingDeviceID.canonical(text) }

    /// An APNs device token: an even number of hex digits, 16 to 200 bytes (Apple's tokens are 32 bytes
    /// today but are documented as variable length). Returns the lower-case form, or nil.
    package static func apnsToken(_ text: String) -> String? {
        let lower = text.lowercased()
        guard lower.count % 2 == 0, (32...400).contains(lower.count),
              lower.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) }) else { return nil }
        return lower
    }

    /// The `--device-id` option, validated, or a usage error.
    static func requireDeviceID(_ arguments: Arguments) throws -> String {
        guard let id = deviceID(try arguments.required("--device-id")) else {
            throw JobError.badInput("bad-device-id", "--device-id is not a Syncthing Device ID (eight groups of seven base32 characters)")
        }
        return id
    }

    /// The `--apns-token` option, validated, or a usage error.
    static func requireToken(_ arguments: Arguments) throws -> String {
        guard let token = apnsToken(try arguments.required("--apns-token")) else {
            throw JobError.badInput("bad-apns-token", "--apns-token is not an APNs device token (16 to 200 bytes as hex)")
        }
        return token
    }
}

/// The APNs environment a token was issued for; pushes go to the matching endpoint.
package enum APNsEnvironment: String, Sendable, CaseIterable, LogWord {
    case production, sandbox
}
