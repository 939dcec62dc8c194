/// A small strict JSON (RFC 8259) reader for JOSE headers: validates a whole document and returns
/// the string-valued members of its top-level object.
///
/// Only what verification needs: no numbers or nested values are returned, but every value is
/// checked for well-formedness, input must be valid UTF-8, nesting is capped, and duplicate
/// top-level member names are refused (so `{"alg":"ES256K","alg":"none"}` cannot mean two things).
enum StrictJSON {
    private static let maximumDepth = 32

    /// Whether the top-level object has a member called `name`, whatever its value.
    static func hasMember(_ name: String, _ bytes: [UInt8]) throws -> Bool {
        var found = false
        try walkTopLevel(bytes) { member, _ in if member == name { found = true } }
        return found
    }

    /// The names of all the top-level object's members.
    static func memberNames(_ bytes: [UInt8]) throws -> Set<String> {
        var names: Set<String> = []
        try walkTopLevel(bytes) { name, _ in names.insert(name) }
        return names
    }

    /// The top-level object's members whose values are strings.
    static func topLevelStrings(_ bytes: [UInt8]) throws -> [String: String] {
        var strings: [String: String] = [:]
        try walkTopLevel(bytes) { name, stringValue in
            if let stringValue { strings[name] = stringValue }
        }
        return strings
    }

    /// Validates the document and calls `member` for each top-level member (string value or nil).
    private static func walkTopLevel(_ bytes: [UInt8], member: (String, String?) throws -> Void) throws {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw CryptoError.malformedInput("JSON is not valid UTF-8") }
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        guard parser.peek() == UInt8(ascii: "{") else { throw CryptoError.malformedInput("JSON is not an object") }
        var names: Set<String> = []
        try parser.parseObject(depth: 1) { name, stringValue in
            guard names.insert(name).inserted else { throw CryptoError.malformedInput("JSON object has a duplicate member name") }
            try member(name, stringValue)
        }
        parser.skipWhitespace()
        guard parser.atEnd else { throw CryptoError.malformedInput("JSON has trailing content") }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }
        func peek() -> UInt8? { atEnd ? nil : bytes[index] }

        mutating func skipWhitespace() {
            while let c = peek(), c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d { index += 1 }
        }

        mutating func expect(_ c: UInt8) throws {
            guard peek() == c else { throw CryptoError.malformedInput("JSON syntax error") }
            index += 1
        }

        /// Parses `{ … }`, calling `member(name, stringValueOrNil)` for each member.
        mutating func parseObject(depth: Int, member: (String, String?) throws -> Void) throws {
            guard depth <= maximumDepth else { throw CryptoError.malformedInput("JSON nests too deeply") }
            try expect(UInt8(ascii: "{"))
            skipWhitespace()
            if peek() == UInt8(ascii: "}") { index += 1; return }
            while true {
                skipWhitespace()
                let name = try parseString()
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                let value = try parseValue(depth: depth)
                try member(name, value)
                skipWhitespace()
                if peek() == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "}"))
                return
            }
        }

        /// Parses any value; returns its contents only when it is a string.
        mutating func parseValue(depth: Int) throws -> String? {
            switch peek() {
            case UInt8(ascii: "\""):
                return try parseString()
            case UInt8(ascii: "{"):
                try parseObject(depth: depth + 1) { _, _ in }
            case UInt8(ascii: "["):
                try parseArray(depth: depth + 1)
            case UInt8(ascii: "t"):
                try parseLiteral("true")
            case UInt8(ascii: "f"):
                try parseLiteral("false")
            case UInt8(ascii: "n"):
                try parseLiteral("null")
            default:
                try parseNumber()
            }
            return nil
        }

        mutating func parseArray(depth: Int) throws {
            guard depth <= maximumDepth else { throw CryptoError.malformedInput("JSON nests too deeply") }
            try expect(UInt8(ascii: "["))
            skipWhitespace()
            if peek() == UInt8(ascii: "]") { index += 1; return }
            while true {
                skipWhitespace()
                _ = try parseValue(depth: depth)
                skipWhitespace()
                if peek() == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "]"))
                return
            }
        }

        mutating func parseLiteral(_ word: String) throws {
            for c in word.utf8 { try expect(c) }
        }

        /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func parseNumber() throws {
            if peek() == UInt8(ascii: "-") { index += 1 }
            if peek() == UInt8(ascii: "0") {
                index += 1
            } else {
                guard let c = peek(), c >= UInt8(ascii: "1"), c <= UInt8(ascii: "9") else { throw CryptoError.malformedInput("JSON syntax error") }
                skipDigits()
            }
            if peek() == UInt8(ascii: ".") {
                index += 1
                guard isDigit(peek()) else { throw CryptoError.malformedInput("JSON syntax error") }
                skipDigits()
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                index += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
                guard isDigit(peek()) else { throw CryptoError.malformedInput("JSON syntax error") }
                skipDigits()
            }
        }

        func isDigit(_ c: UInt8?) -> Bool { c.map { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ?? false }
        mutating func skipDigits() { while isDigit(peek()) { index += 1 } }

        mutating func parseString() throws -> String {
            try expect(UInt8(ascii: "\""))
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []  // unescaped UTF-8 bytes not yet appended
            func flush() {
                scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
                run.removeAll(keepingCapacity: true)
            }
            while true {
                guard let c = peek() else { throw CryptoError.malformedInput("JSON string is not terminated") }
                index += 1
                switch c {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush()
                    guard let e = peek() else { throw CryptoError.malformedInput("JSON string is not terminated") }
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"): scalars.append(try parseUnicodeEscape())
                    default: throw CryptoError.malformedInput("JSON string has an invalid escape")
                    }
                case 0x00..<0x20:
                    throw CryptoError.malformedInput("JSON string has an unescaped control character")
                default:
                    run.append(c)
                }
            }
        }

        /// After `\u`: four hex digits, combining a surrogate pair; lone surrogates are refused.
        mutating func parseUnicodeEscape() throws -> Unicode.Scalar {
            let high = try parseHex4()
            if (0xD800...0xDBFF).contains(high) {
                try expect(UInt8(ascii: "\\"))
                try expect(UInt8(ascii: "u"))
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw CryptoError.malformedInput("JSON string has a lone surrogate") }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(high) else { throw CryptoError.malformedInput("JSON string has a lone surrogate") }
            return scalar
        }

        mutating func parseHex4() throws -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let c = peek(), let digit = Hex.value(c) else { throw CryptoError.malformedInput("JSON string has an invalid escape") }
                index += 1
                value = value << 4 | UInt32(digit)
            }
            return value
        }
    }
}
