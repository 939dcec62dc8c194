import Foundation
@testable import Cryptography

/// The authenticated-trigger fixtures in Tests/Fixtures/trigger-v2 (keys from `syncthing generate` and openssl,
/// vectors.json from scripts/trigger-v2-vectors.py).
enum TriggerV2Fixtures {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent("trigger-v2")
    static let keyNames = ["syncthing-p384", "openssl-p256", "openssl-rsa3072"]

    static func file(_ name: String, _ file: String) throws -> [UInt8] {
        Array(try Data(contentsOf: folder.appendingPathComponent(name).appendingPathComponent(file)))
    }

    static func signingKey(_ name: String) throws -> DeviceSigningKey {
        try DeviceSigningKey(certificatePEM: file(name, "cert.pem"), privateKeyPEM: file(name, "key.pem"))
    }

    /// One entry of vectors.json.
    struct Vector {
        let name: String
        let valid: Bool
        let refusal: String?
        let deviceID: String
        let messageHex: String
        let body: [UInt8]
    }

    static func vectors() throws -> (nowSeconds: Int64, deviceIDs: [String: String], vectors: [Vector]) {
        let data = try Data(contentsOf: folder.appendingPathComponent("vectors.json"))
        let document = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        let list = (document["vectors"] as! [[String: Any]]).map { entry in
            Vector(name: entry["name"] as! String, valid: entry["valid"] as! Bool, refusal: entry["refusal"] as? String,
                   deviceID: entry["device_id"] as! String, messageHex: entry["message_hex"] as! String,
                   body: Array((entry["body"] as! String).utf8))
        }
        return ((document["relay_now_unix_seconds"] as! NSNumber).int64Value, document["device_ids"] as! [String: String], list)
    }
}
