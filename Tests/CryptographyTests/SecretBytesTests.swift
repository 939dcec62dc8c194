import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct SecretBytesTests {
    @Test func aSecretRedactsItselfWhenPrinted() throws {
        let secret = SecretBytes([0xde, 0xad, 0xbe, 0xef])
        #expect("\(secret)" == "<redacted 4 bytes>")
        #expect(String(reflecting: secret) == "<redacted 4 bytes>")
        #expect(!"\(secret)".contains("de"))
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.lowercased().contains("222"))  // 0xde as a decimal element would show as 222
    }

    @Test func randomSecretsDifferAndHaveTheAskedLength() throws {
        let a = try SecretBytes.random(count: 32)
        let b = try SecretBytes.random(count: 32)
        #expect(a.count == 32)
        #expect(!a.constantTimeEquals(b))
        #expect(a.constantTimeEquals(SecretBytes(a.copyBytes())))
    }

    @Test func constantTimeEqualityRejectsDifferentLengths() {
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equals([], []))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
    }

    @Test func uniformStaysBelowItsBound() throws {
        for _ in 0..<200 { #expect(try SecureRandom.uniform(below: 7) < 7) }
    }
}
