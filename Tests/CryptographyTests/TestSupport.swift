@testable import Cryptography

/// Bytes from a hex literal in a test vector; a malformed literal is a bug in the test itself.
func hex(_ text: String) -> [UInt8] {
    try! Hex.decode(text.filter { !$0.isWhitespace })
}

/// ASCII/UTF-8 bytes of a string literal.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A copy of `bytes` with one bit flipped at `index`.
func flippingBit(_ bytes: [UInt8], at index: Int) -> [UInt8] {
    var copy = bytes
    copy[index] ^= 0x01
    return copy
}
