import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct Base64URLTests {
    /// RFC 4648 §10 vectors without padding (these use no '+' or '/', so the url alphabet is identical).
    static let rfc4648: [(String, String)] = [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ]

    @Test func rfc4648VectorsEncodeWithoutPadding() {
        for (plain, encoded) in Self.rfc4648 { #expect(Base64URL.encode(bytes(plain)) == encoded) }
    }

    @Test func rfc4648VectorsDecode() throws {
        for (plain, encoded) in Self.rfc4648 { #expect(try Base64URL.decode(encoded) == bytes(plain)) }
    }

    @Test func theUrlAlphabetUsesDashAndUnderscore() throws {
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(try Base64URL.decode("-_8") == [0xfb, 0xff])
        #expect(Base64URL.encode([0xfb, 0xef, 0xbe]) == "----")
        #expect(Base64URL.encode([0xff, 0xff, 0xff]) == "____")
    }

    @Test func everyByteValueRoundTrips() throws {
        let all = (0...255).map { UInt8($0) }
        for length in [0, 1, 2, 3, 100, 256] {
            #expect(try Base64URL.decode(Base64URL.encode(Array(all.prefix(length)))) == Array(all.prefix(length)))
        }
    }

    @Test func paddingIsRejected() {
        #expect(throws: CryptoError.self) { try Base64URL.decode("Zg==") }
        #expect(throws: CryptoError.self) { try Base64URL.decode("Zm8=") }
    }

    @Test func whitespaceIsRejected() {
        for text in ["Zm9v Yg", "Zm9v\nYg", " Zm9v", "Zm9v\t"] {
            #expect(throws: CryptoError.self) { try Base64URL.decode(text) }
        }
    }

    @Test func theStandardAlphabetsPlusAndSlashAreRejected() {
        #expect(throws: CryptoError.self) { try Base64URL.decode("+/8") }
        #expect(throws: CryptoError.self) { try Base64URL.decode("ab+c") }
        #expect(throws: CryptoError.self) { try Base64URL.decode("ab/c") }
    }

    @Test func charactersOutsideTheAlphabetAreRejected() {
        for text in ["Zm9v.", "Zm*v", "Zmé9", "Zm9\u{0}"] {
            #expect(throws: CryptoError.self) { try Base64URL.decode(text) }
        }
    }

    @Test func impossibleLengthsAreRejected() {
        for text in ["Z", "Zm9vY", "Zm9vYmFyZ"] {
            #expect(throws: CryptoError.malformedInput("base64url length is impossible")) { try Base64URL.decode(text) }
        }
    }

    @Test func nonCanonicalTrailingBitsAreRejected() {
        // "Zg" is the canonical encoding of "f"; "Zh" carries the same byte with a non-zero leftover bit.
        #expect(throws: CryptoError.malformedInput("base64url has non-zero trailing bits")) { try Base64URL.decode("Zh") }
        #expect(throws: CryptoError.malformedInput("base64url has non-zero trailing bits")) { try Base64URL.decode("Zm9") }
    }
}
