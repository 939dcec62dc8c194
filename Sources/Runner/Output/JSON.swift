import Foundation

/// A JSON value for command output, built in code and rendered with stable key order.
package indirect enum JSON: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    /// Keys keep the order given.
    case object([(String, JSON)])

    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int64) { self = .int(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: JSON...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, JSON)...) { self = .object(elements) }

    /// An integer of any width.
    package static func number<I: BinaryInteger>(_ value: I) -> JSON { .int(Int64(value)) }
    /// A string, or null.
    package static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }
    /// An integer, or null.
    package static func optional<I: BinaryInteger>(_ value: I?) -> JSON { value.map { .int(Int64($0)) } ?? .null }

    package static func == (a: JSON, b: JSON) -> Bool { a.rendered() == b.rendered() }

    /// Compact rendering.
    package func rendered() -> String {
        switch self {
        case .null: return "null"
        case .bool(let v): return v ? "true" : "false"
        case .int(let v): return String(v)
        case .double(let v): return v.isFinite ? String(v) : "null"
        case .string(let v): return JSON.quote(v)
        case .array(let items): return "[" + items.map { $0.rendered() }.joined(separator: ",") + "]"
        case .object(let pairs): return "{" + pairs.map { JSON.quote($0.0) + ":" + $0.1.rendered() }.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal for `text`, escaping what RFC 8259 requires.
    package static func quote(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Looks up `key` in an object.
    package subscript(key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }
}
