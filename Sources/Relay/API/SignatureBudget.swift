import Foundation
import Runner
import Synchronization

/// How many signature checks one client address may make this process do (docs/roles/relay.md, "Limits per client
/// address"): a token bucket per address holding `perMinute` checks, refilled evenly over a minute.
///
/// Device IDs are the client's choice, so per-Device-ID limits cannot bound the CPU a client spends on StoreKit
/// chains and v2 signatures; this does. The bucket is in memory, one per `serve-relay` process (it is CPU, which
/// is per process, that it protects), so it writes nothing to the store. IPv6 clients are counted by their /64,
/// which one host usually holds whole. The client address is the connection's peer, or the `X-Real-IP` that a
/// peer listed in `RELAY_TRUSTED_PROXIES` (default `127.0.0.1,::1`: nginx on the same host; `none`: no peer) sets.
package final class SignatureBudget: Sendable {
    static let perMinuteKey = (name: "RELAY_SIGNATURE_CHECKS_PER_MINUTE",
                               help: "signature checks (StoreKit chains, v2 signatures) one client address may cause per minute, 1–100000 (default 120); beyond it 429")
    static let trustedProxiesKey = (name: "RELAY_TRUSTED_PROXIES",
                                    help: "comma-separated peer addresses whose X-Real-IP header names the client (default 127.0.0.1,::1; none: trust no header)")
    /// The highest `RELAY_SIGNATURE_CHECKS_PER_MINUTE` taken.
    package static let maxPerMinute = 100_000
    /// Buckets kept at most; past it, full ones are forgotten (a full bucket is the same as none).
    static let maxTracked = 100_000

    let perMinute: Int
    let trustedProxies: Set<String>
    /// Per address, checks left and when they were last counted (Unix ms).
    private let buckets = Mutex<[String: Bucket]>([:])
    private struct Bucket { var left: Double; var at: Int64 }

    /// The budget from the environment; a bad value is a configuration error (78).
    init(_ env: (String) -> String?) throws {
        if let text = env(Self.perMinuteKey.name) {
            guard let value = Int(text), (1...Self.maxPerMinute).contains(value) else {
                throw JobError.configuration("signature-budget", "\(Self.perMinuteKey.name) must be a whole number from 1 to \(Self.maxPerMinute)")
            }
            perMinute = value
        } else {
            perMinute = 120
        }
        let proxies = env(Self.trustedProxiesKey.name) ?? "127.0.0.1,::1"
        var trusted: Set<String> = []
        for item in proxies == "none" ? [] : proxies.split(separator: ",", omittingEmptySubsequences: true) {
            let address = item.trimmingCharacters(in: .whitespaces)
            guard let canonical = Self.canonical(address) else {
                throw JobError.configuration("trusted-proxies", "\(Self.trustedProxiesKey.name) must list IP addresses, separated by commas")
            }
            trusted.insert(canonical)
        }
        trustedProxies = trusted
    }

    /// The client a request is counted against: its peer, or the `X-Real-IP` a trusted peer set; IPv6 by its /64.
    func client(peer: String, realIP: String?) -> String {
        var address = Self.canonical(peer) ?? peer
        if trustedProxies.contains(address), let realIP, let forwarded = Self.canonical(realIP.trimmingCharacters(in: .whitespaces)) {
            address = forwarded
        }
        return Self.counted(address)
    }

    /// Takes one check for `client` at `now` (Unix ms): nil when allowed, else the seconds until one is free.
    func take(_ client: String, now: Int64) -> Int? {
        let rate = Double(perMinute) / 60_000  // checks per millisecond
        return buckets.withLock { buckets in
            var bucket = buckets[client] ?? Bucket(left: Double(perMinute), at: now)
            bucket.left = min(Double(perMinute), bucket.left + Double(max(0, now - bucket.at)) * rate)
            bucket.at = now
            guard bucket.left >= 1 else {
                buckets[client] = bucket
                return max(1, Int(((1 - bucket.left) / rate / 1000).rounded(.up)))
            }
            bucket.left -= 1
            buckets[client] = bucket
            if buckets.count > Self.maxTracked {
                buckets = buckets.filter { $0.value.left + Double(now - $0.value.at) * rate < Double(perMinute) }
            }
            return nil
        }
    }

    /// The address in its canonical text form (`inet_pton` then `inet_ntop`), or nil when it is none.
    static func canonical(_ text: String) -> String? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            guard inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // An IPv4 client on a dual-stack socket (`::ffff:192.0.2.1`) is that IPv4 client.
            if text.hasPrefix("::ffff:"), text.contains(".") { return String(text.dropFirst(7)) }
            return text
        }
        return nil
    }

    /// An IPv6 address as its /64 (`2001:db8:1:2::/64`); an IPv4 address as itself.
    static func counted(_ address: String) -> String {
        var v6 = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        withUnsafeMutableBytes(of: &v6) { bytes in for index in 8..<16 { bytes[index] = 0 } }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count)) != nil else { return address }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
    }
}
