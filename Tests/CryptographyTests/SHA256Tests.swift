import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct SHA256Tests {
    @Test func abcHashesToTheFIPS180Digest() {
        #expect(SHA256.hash(bytes("abc")) == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func theEmptyMessageHashesToTheFIPS180Digest() {
        #expect(SHA256.hash([]) == hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }

    @Test func twoBlockMessageHashesToTheFIPS180Digest() {
        let message = bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
        #expect(SHA256.hash(message) == hex("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"))
    }
}
