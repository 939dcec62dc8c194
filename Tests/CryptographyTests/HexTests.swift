import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct HexTests {
    @Test func encodingIsLowercaseTwoDigitsPerByte() {
        #expect(Hex.encode([0x00, 0x0f, 0xab, 0xff]) == "000fabff")
        #expect(Hex.encode([]) == "")
    }

    @Test func decodingAcceptsEitherCase() throws {
        #expect(try Hex.decode("000FabFF") == [0x00, 0x0f, 0xab, 0xff])
        #expect(try Hex.decode("") == [])
    }

    @Test func oddLengthsAreRejected() {
        #expect(throws: CryptoError.malformedInput("hex has an odd number of digits")) { try Hex.decode("abc") }
    }

    @Test func theByteDecoderReadsAnyCollectionOfDigitsAndRefusesWhatDecodeRefuses() {
        #expect(Hex.bytes(Array("000FabFF".utf8)) == [0x00, 0x0f, 0xab, 0xff])
        #expect(Hex.bytes(Array("\\x0aff".utf8).dropFirst(2)) == [0x0a, 0xff], "a slice, as PostgreSQL's bytea output after its \\x")
        #expect(Hex.bytes("".utf8) == [])
        for text in ["abc", "0x00", "zz", "ab cd", "ab\n", "éé", "-1"] {
            #expect(Hex.bytes(text.utf8) == nil, "\(text)")
        }
    }

    @Test func nonHexCharactersPrefixesAndWhitespaceAreRejected() {
        for text in ["0x00", "zz", "ab cd", "ab\n", "éé", "-1"] {
            #expect(throws: CryptoError.self) { try Hex.decode(text) }
        }
    }
}
