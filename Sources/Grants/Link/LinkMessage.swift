import Cryptography
import Foundation
import Runner

/// One decoded link message: a JSON object with a `type`, read through typed, bounded accessors.
///
/// Every accessor throws `LinkFailure.malformed` for a missing field, a wrong type or an out-of-range value, so a
/// hostile peer's message is refused before anything is written.
package struct LinkMessage {
    package let type: String
    let fields: [String: Any]

    init(fields: [String: Any]) throws {
        guard let type = fields["type"] as? String else { throw LinkFailure.malformed }
        self.type = type
        self.fields = fields
    }

    /// Requires this message to be of `type`.
    package func expect(_ type: String) throws {
        guard self.type == type else { throw LinkFailure.outOfOrder }
    }

    package func string(_ key: String, maxBytes: Int) throws -> String {
        guard let value = fields[key] as? String, value.utf8.count <= maxBytes else { throw LinkFailure.malformed }
        return value
    }

    package func optionalString(_ key: String, maxBytes: Int) throws -> String? {
        guard let raw = fields[key], !(raw is NSNull) else { return nil }
        guard let value = raw as? String, value.utf8.count <= maxBytes else { throw LinkFailure.malformed }
        return value
    }

    /// Lowercase hex of exactly `count` bytes.
    package func hex(_ key: String, count: Int) throws -> [UInt8] {
        guard let text = fields[key] as? String, text.utf8.count == count * 2, text == text.lowercased(),
              let bytes = try? Hex.decode(text) else { throw LinkFailure.malformed }
        return bytes
    }

    /// A non-negative integer (JSON booleans and fractions are refused).
    package func count(_ key: String) throws -> Int64 {
        // JSONSerialization decodes integers as NSNumbers of an integer type; `true` decodes as type "c" (char).
        guard let number = fields[key] as? NSNumber, ["i", "l", "q", "s", "I", "L", "Q", "S"].contains(String(cString: number.objCType)),
              number.int64Value >= 0, number.int64Value <= Int64(1) << 53 else { throw LinkFailure.malformed }
        return number.int64Value
    }

    /// An array of objects, at most `maxCount` long.
    package func objects(_ key: String, maxCount: Int) throws -> [LinkMessage] {
        guard let items = fields[key] as? [Any], items.count <= maxCount else { throw LinkFailure.malformed }
        return try items.map { item in
            guard var object = item as? [String: Any] else { throw LinkFailure.malformed }
            if object["type"] == nil { object["type"] = "item" }
            return try LinkMessage(fields: object)
        }
    }

    /// An array of strings, at most `maxCount` long, each at most `maxBytes`.
    package func strings(_ key: String, maxCount: Int, maxBytes: Int) throws -> [String] {
        guard let items = fields[key] as? [Any], items.count <= maxCount else { throw LinkFailure.malformed }
        return try items.map { item in
            guard let text = item as? String, text.utf8.count <= maxBytes else { throw LinkFailure.malformed }
            return text
        }
    }
}
