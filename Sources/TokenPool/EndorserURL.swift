import Foundation
import Runner

/// Checks `ENDORSER_URL` before a Bearer token is sent to it.
///
/// It must be an http(s) URL with a host, and plain `http://` is accepted only to a loopback host
/// (`localhost`, `127.0.0.0/8`, `::1`): anywhere else the day's token would cross the network in clear.
enum EndorserURL {
    /// Why `text` may not carry the Bearer token, or nil when it may.
    static func problem(_ text: String) -> JobError? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty else {
            return TokenPoolErrors.endorserURLInvalid
        }
        if scheme == "http" && !isLoopback(host) { return TokenPoolErrors.endorserURLInsecure }
        return nil
    }

    /// Whether `host` names this machine: `localhost`, an IPv4 address in 127.0.0.0/8, or `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if name == "localhost" || name == "::1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ part in UInt8(part).map { _ in part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } } ?? false }) else {
            return false
        }
        return parts[0] == "127"
    }
}
