import Cryptography
import Foundation

/// The authenticated-trigger half of `relay-api` (docs/protocols/trigger-v2.md): signed request bodies for many
/// Device IDs, and the serve-relay CPU a request costs.
///
/// Many Device IDs are needed (each takes at most 10 triggers a minute), and one key serves them all: the relay never
/// checks a device certificate's own signature, only that its SHA-256 is the Device ID, so copies of the Syncthing
/// fixture certificate (Tests/Fixtures/trigger-v2/syncthing-p384) with different serial numbers are different
/// devices with the same P-384 key. Every request is still a full v2 check: hash, strict parse, P-384 verify, nonce.
enum TriggerV2Load {
    /// The fixture key and certificate.
    static func key() throws -> DeviceSigningKey {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Fixtures/trigger-v2/syncthing-p384")
        let cert = try Data(contentsOf: root.appendingPathComponent("cert.pem")), pem = try Data(contentsOf: root.appendingPathComponent("key.pem"))
        return try DeviceSigningKey(certificatePEM: Array(cert), privateKeyPEM: Array(pem))
    }

    /// Certificate `n`: the fixture certificate with the last four bytes of its serial number set to `n`.
    static func certificate(_ base: [UInt8], _ n: Int) throws -> [UInt8] {
        // TBSCertificate starts with [0] { INTEGER 2 } then the serial INTEGER: A0 03 02 01 02 02 LL …
        let marker: [UInt8] = [0xa0, 0x03, 0x02, 0x01, 0x02, 0x02]
        guard let start = (0..<(base.count - marker.count)).first(where: { Array(base[$0..<($0 + marker.count)]) == marker }) else {
            throw BenchFailure("the fixture certificate has no v3 serial number where expected")
        }
        let length = Int(base[start + marker.count])
        guard length >= 6 else { throw BenchFailure("the fixture certificate's serial number is too short") }
        var copy = base
        let end = start + marker.count + 1 + length
        for i in 0..<4 { copy[end - 1 - i] = UInt8(truncatingIfNeeded: n >> (8 * i)) }
        return copy
    }

    /// A signed body for certificate `cert` at `ts` (Unix seconds), the signature made by `key`, or forged (`forge`:
    /// the signature bytes flipped) — escaped for a curl config file's quoted `data = "…"`.
    static func body(key: DeviceSigningKey, cert: [UInt8], ts: Int64, forge: Bool = false) throws -> String {
        let device = DeviceIDEncoding.of(certificateDER: cert)
        let nonce = try SecureRandom.bytes(count: TriggerV2.nonceCount)
        var signature = try key.signature(for: TriggerV2.message(deviceID: device, timestamp: String(ts), nonce: nonce))
        if forge { signature[signature.count / 2] ^= 0x55 }
        let json = "{\"device_id\":\"\(device)\",\"cert\":\"\(StrictBase64.encode(cert))\",\"ts\":\"\(ts)\",\"nonce\":\"\(StrictBase64.encode(nonce))\",\"sig\":\"\(StrictBase64.encode(signature))\"}"
        return json.replacingOccurrences(of: "\"", with: "\\\"")
    }

    /// User plus system CPU seconds `pid` has used so far (from /proc/PID/stat).
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14, stime 15 (1-based over the whole line).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The median time of `TriggerV2.authenticate` (hash, parse, verify) for one request of `key`, in this process.
    static func verifySeconds(key: DeviceSigningKey, samples: Int = 300) throws -> Double {
        let ts = Int64(Date().timeIntervalSince1970)
        let request = try TriggerV2.parse(Array(TriggerV2.body(key: key, nowSeconds: ts, nonce: SecureRandom.bytes(count: 16))))
        var times: [Double] = []
        for _ in 0..<samples {
            let start = DispatchTime.now()
            try TriggerV2.authenticate(request)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
        }
        times.sort()
        return times[times.count / 2]
    }
}
