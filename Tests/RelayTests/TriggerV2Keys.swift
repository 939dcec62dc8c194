import Cryptography
import Foundation

/// The authenticated-trigger fixtures (Tests/Fixtures/trigger-v2: keys from `syncthing generate` and openssl,
/// vectors.json from scripts/trigger-v2-vectors.py), and signed request bodies made from them.
enum TriggerV2Keys {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent("trigger-v2")
    static let names = ["syncthing-p384", "openssl-p256", "openssl-rsa3072"]

    static func file(_ name: String, _ file: String) throws -> [UInt8] {
        Array(try Data(contentsOf: folder.appendingPathComponent(name).appendingPathComponent(file)))
    }

    static func key(_ name: String) throws -> DeviceSigningKey {
        try DeviceSigningKey(certificatePEM: file(name, "cert.pem"), privateKeyPEM: file(name, "key.pem"))
    }

    /// A freshly signed body for `key` at `at` (default: now) with a random nonce.
    static func body(_ key: DeviceSigningKey, at: Date = Date(), nonce: [UInt8]? = nil) throws -> [UInt8] {
        try TriggerV2.body(key: key, nowSeconds: Int64(at.timeIntervalSince1970), nonce: nonce ?? SecureRandom.bytes(count: 16))
    }

    /// A body with every member given (for forgeries: any certificate, signature and Device ID).
    static func body(deviceID: String, certificate: [UInt8], ts: String, nonce: [UInt8], signature: [UInt8]) -> [UInt8] {
        Array(("{\"device_id\":\"\(deviceID)\",\"cert\":\"\(StrictBase64.encode(certificate))\",\"ts\":\"\(ts)\","
            + "\"nonce\":\"\(StrictBase64.encode(nonce))\",\"sig\":\"\(StrictBase64.encode(signature))\"}").utf8)
    }

    /// The vectors of vectors.json: name, body, whether valid, and the refusal word.
    static func vectors() throws -> (nowSeconds: Int64, entries: [(name: String, body: [UInt8], valid: Bool, refusal: String?, deviceID: String)]) {
        let data = try Data(contentsOf: folder.appendingPathComponent("vectors.json"))
        let document = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        let entries = (document["vectors"] as! [[String: Any]]).map { entry in
            (name: entry["name"] as! String, body: Array((entry["body"] as! String).utf8), valid: entry["valid"] as! Bool,
             refusal: entry["refusal"] as? String, deviceID: entry["device_id"] as! String)
        }
        return ((document["relay_now_unix_seconds"] as! NSNumber).int64Value, entries)
    }
}
