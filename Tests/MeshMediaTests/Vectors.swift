import Cryptography
import Foundation

/// Hex helpers and the fixtures under Fixtures/ (their origin: Fixtures/README.md).
enum V {
    static func h(_ text: String) -> [UInt8] {
        try! Hex.decode(text.replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "\n", with: ""))
    }
    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }
    static func rep(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }

    /// A file beside this source file.
    static func fixture(_ name: String) -> Data {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent(name)
        return try! Data(contentsOf: url)
    }
}
