import Foundation
import Runner

/// Renders `_at` milliseconds for output: RFC 3339 text, or JSON null / "never".
enum TimeText {
    static func json(_ milliseconds: Int64?) -> JSON {
        milliseconds.map { .string(Date(unixMilliseconds: $0).rfc3339) } ?? .null
    }

    static func text(_ milliseconds: Int64?, none: String = "never") -> String {
        milliseconds.map { Date(unixMilliseconds: $0).rfc3339 } ?? none
    }
}
