/// BitchatFilePacket: the file TLV shared by the iOS and Android clients (reference: mesh-media.md).
///
/// Tags: 0x01 file name (2-byte length), 0x02 file size (2-byte length, value 4 bytes; 8 accepted;
/// a value of any other length is ignored, as iOS ignores it),
/// 0x03 MIME type (2-byte length), 0x04 content (4-byte length, falling back to 2 bytes when the 4-byte one
/// overruns, as iOS does), anything else skipped with a 2-byte length. Decoding is lenient (repeated content
/// TLVs concatenate, a missing size means the content length); encoding is canonical (name, size, MIME,
/// one content TLV).
package struct FilePacket: Equatable, Sendable {
    /// Largest file content either client accepts (1 MiB).
    package static let maxContentBytes = 1_048_576

    package var fileName: String?
    package var fileSize: UInt64
    package var mimeType: String?
    package var content: [UInt8]

    package init(fileName: String?, fileSize: UInt64? = nil, mimeType: String?, content: [UInt8]) {
        self.fileName = fileName
        self.fileSize = fileSize ?? UInt64(content.count)
        self.mimeType = mimeType
        self.content = content
    }

    enum Tag: UInt8 { case fileName = 0x01, fileSize = 0x02, mimeType = 0x03, content = 0x04 }

    /// The canonical encoding. Throws `unencodable` for a name or MIME type over 65,535 bytes and
    /// `tooLarge` for content above 1 MiB.
    package func encoded() throws -> [UInt8] {
        guard !content.isEmpty else { throw WireError.missingField }
        guard content.count <= Self.maxContentBytes, fileSize <= UInt64(Self.maxContentBytes) else { throw WireError.tooLarge }
        var out: [UInt8] = []
        out.reserveCapacity(content.count + 32 + (fileName?.utf8.count ?? 0) + (mimeType?.utf8.count ?? 0))
        if let fileName {
            let bytes = Array(fileName.utf8)
            guard bytes.count <= 0xffff else { throw WireError.unencodable }
            out.append(Tag.fileName.rawValue); out.appendBigEndian(UInt16(bytes.count)); out += bytes
        }
        out.append(Tag.fileSize.rawValue); out.appendBigEndian(UInt16(4)); out.appendBigEndian(UInt32(fileSize))
        if let mimeType {
            let bytes = Array(mimeType.utf8)
            guard bytes.count <= 0xffff else { throw WireError.unencodable }
            out.append(Tag.mimeType.rawValue); out.appendBigEndian(UInt16(bytes.count)); out += bytes
        }
        out.append(Tag.content.rawValue); out.appendBigEndian(UInt32(content.count)); out += content
        return out
    }

    /// Decodes leniently. Any input yields a packet or a `WireError`; nothing larger than the input is allocated.
    package static func decode<C: Collection>(_ input: C) throws -> FilePacket where C.Element == UInt8 {
        let bytes = Array(input)
        var reader = ByteReader(bytes)
        var name: String?
        var mime: String?
        var size: UInt64?
        var content: [UInt8] = []
        while !reader.isAtEnd {
            let tag = try reader.byte()
            if tag == Tag.content.rawValue {
                let chunk = try contentValue(&reader)
                guard content.count + chunk.count <= maxContentBytes else { throw WireError.tooLarge }
                content += chunk
                continue
            }
            let length = Int(try reader.uint16())
            let value = try reader.take(length)
            switch Tag(rawValue: tag) {
            case .fileName: name = String(validating: value, as: UTF8.self)
            case .mimeType: mime = String(validating: value, as: UTF8.self)
            case .fileSize:
                switch length {
                case 4: size = UInt64(value.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                case 8: size = value.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                default: break   // iOS ignores a size of any other length (the content length stands in)
                }
            case .content, nil: continue
            }
        }
        guard !content.isEmpty else { throw WireError.missingField }
        let declared = size ?? UInt64(content.count)
        guard declared <= UInt64(maxContentBytes) else { throw WireError.tooLarge }
        return FilePacket(fileName: name, fileSize: declared, mimeType: mime, content: content)
    }

    /// A content value: a 4-byte length when it fits in what remains, else iOS's 2-byte fallback.
    private static func contentValue(_ reader: inout ByteReader) throws -> ArraySlice<UInt8> {
        if let header = reader.peek(4) {
            let length = header.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if length <= UInt64(reader.remaining - 4) {
                _ = try reader.take(4)
                return try reader.take(Int(length))
            }
        }
        let length = Int(try reader.uint16())
        return try reader.take(length)
    }
}
