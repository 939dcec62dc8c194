/// A small, strict XML reader for Syncthing's config.xml: elements, attributes, text, comments, CDATA and the five
/// predefined entities plus character references — what Syncthing writes, and nothing that needs a DTD.
///
/// It replaces Foundation's XMLParser, which on Linux leaks memory on every parse and traps on some malformed
/// input (found by `job-bench fuzz`). It works on the bytes it is given, allocates in proportion to them, and
/// returns nil for anything it does not understand (a DOCTYPE, an unknown entity, mismatched tags).
struct ConfigXMLReader {
    /// Receives the document's events; `path` is the stack of open element names, outermost first.
    struct Events {
        var start: (_ path: [String], _ attributes: [String: String]) -> Void
        var text: (_ path: [String], _ text: String) -> Void
    }

    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Reads the whole document; false when it is not well-formed (as far as this reader checks).
    mutating func read(_ events: Events) -> Bool {
        var path: [String] = []
        var sawRoot = false
        while index < bytes.count {
            if bytes[index] != UInt8(ascii: "<") {
                let start = index
                while index < bytes.count && bytes[index] != UInt8(ascii: "<") { index += 1 }
                guard let text = Self.decode(bytes[start..<index]) else { return false }
                if path.isEmpty {
                    guard text.allSatisfy({ $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }) else { return false }
                } else {
                    events.text(path, text)
                }
                continue
            }
            if starts(with: "<?") {
                guard let end = find("?>", from: index + 2) else { return false }
                index = end + 2
            } else if starts(with: "<!--") {
                guard let end = find("-->", from: index + 4) else { return false }
                index = end + 3
            } else if starts(with: "<![CDATA[") {
                guard !path.isEmpty, let end = find("]]>", from: index + 9) else { return false }
                guard let text = String(validating: bytes[(index + 9)..<end], as: UTF8.self) else { return false }
                events.text(path, text)
                index = end + 3
            } else if starts(with: "<!") {
                return false  // DOCTYPE and other declarations: Syncthing writes none, and entities are not expanded.
            } else if starts(with: "</") {
                index += 2
                guard let name = readName() else { return false }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ">"), path.last == name else { return false }
                index += 1
                path.removeLast()
            } else {
                index += 1
                guard let name = readName(), path.isEmpty ? !sawRoot : true else { return false }
                var attributes: [String: String] = [:]
                var selfClosing = false
                while true {
                    let hadSpace = skipSpace()
                    guard index < bytes.count else { return false }
                    if bytes[index] == UInt8(ascii: ">") { index += 1; break }
                    if starts(with: "/>") { index += 2; selfClosing = true; break }
                    guard hadSpace, let attribute = readName() else { return false }
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return false }
                    index += 1
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else { return false }
                    let quote = bytes[index]
                    index += 1
                    let start = index
                    while index < bytes.count && bytes[index] != quote && bytes[index] != UInt8(ascii: "<") { index += 1 }
                    guard index < bytes.count, bytes[index] == quote, let value = Self.decode(bytes[start..<index]),
                          attributes[attribute] == nil else { return false }
                    attributes[attribute] = value
                    index += 1
                }
                sawRoot = true
                path.append(name)
                events.start(path, attributes)
                if selfClosing { path.removeLast() }
            }
        }
        return sawRoot && path.isEmpty
    }

    private func starts(with prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return prefix.withUTF8Buffer { Array($0) == Array(bytes[index..<(index + count)]) }
    }

    private func find(_ needle: StaticString, from start: Int) -> Int? {
        let pattern = needle.withUTF8Buffer { Array($0) }
        var position = start
        while position + pattern.count <= bytes.count {
            if bytes[position] == pattern[0] && Array(bytes[position..<(position + pattern.count)]) == pattern { return position }
            position += 1
        }
        return nil
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while index < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[index]) { index += 1 }
        return index > start
    }

    /// An XML name: a letter, `_` or `:` (or any non-ASCII byte), then also digits, `-` and `.`.
    private mutating func readName() -> String? {
        let start = index
        func isStart(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x5f || b == 0x3a || b >= 0x80 }
        func isPart(_ b: UInt8) -> Bool { isStart(b) || (b >= 0x30 && b <= 0x39) || b == 0x2d || b == 0x2e }
        guard index < bytes.count, isStart(bytes[index]) else { return nil }
        while index < bytes.count, isPart(bytes[index]) { index += 1 }
        return String(validating: bytes[start..<index], as: UTF8.self)
    }

    /// Text with `&lt; &gt; &amp; &quot; &apos; &#N; &#xH;` decoded; nil for another entity or invalid UTF-8.
    static func decode(_ slice: ArraySlice<UInt8>) -> String? {
        guard let raw = String(validating: slice, as: UTF8.self) else { return nil }
        guard raw.contains("&") else { return raw }
        var out = ""
        var rest = Substring(raw)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { return nil }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "lt": out += "<"
            case "gt": out += ">"
            case "amp": out += "&"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                guard entity.hasPrefix("#") else { return nil }
                let digits = entity.dropFirst()
                let value = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                guard let value, let scalar = Unicode.Scalar(value), value != 0 else { return nil }
                out.unicodeScalars.append(scalar)
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }
}
