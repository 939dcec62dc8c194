import Cryptography
import Foundation
import Testing
@testable import MeshMedia

/// Noise_XX_25519_ChaChaPoly_SHA256 against the published vectors (snow / cacophony), and bitchat's transport framing.
@Suite(.timeLimit(.minutes(15))) struct NoiseVectorTests {
    struct Vector {
        let prologue: [UInt8]
        let initStatic, initEphemeral, respStatic, respEphemeral: [UInt8]
        let handshakeHash: [UInt8]?
        let messages: [(payload: [UInt8], ciphertext: [UInt8])]
    }

    static func vectors() throws -> [Vector] {
        let root = try JSONSerialization.jsonObject(with: V.fixture("noise-xx-25519-chachapoly-sha256.vectors.json")) as! [String: Any]
        return (root["vectors"] as! [[String: Any]]).map { v in
            Vector(prologue: V.h(v["init_prologue"] as! String),
                   initStatic: V.h(v["init_static"] as! String), initEphemeral: V.h(v["init_ephemeral"] as! String),
                   respStatic: V.h(v["resp_static"] as! String), respEphemeral: V.h(v["resp_ephemeral"] as! String),
                   handshakeHash: (v["handshake_hash"] as? String).map(V.h),
                   messages: (v["messages"] as! [[String: String]]).map { (V.h($0["payload"]!), V.h($0["ciphertext"]!)) })
        }
    }

    @Test func everyPublishedVectorMatchesByteForByte() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count == 2)
        for vector in vectors {
            let key = { (bytes: [UInt8]) in try X25519KeyPair(privateKey: SecretBytes(bytes)) }
            var initiator = NoiseHandshake(role: .initiator, localStatic: try key(vector.initStatic), prologue: vector.prologue,
                                           presetEphemeral: try key(vector.initEphemeral))
            var responder = NoiseHandshake(role: .responder, localStatic: try key(vector.respStatic), prologue: vector.prologue,
                                           presetEphemeral: try key(vector.respEphemeral))
            for index in 0..<3 {
                let (payload, ciphertext) = vector.messages[index]
                if index % 2 == 0 {
                    #expect(try initiator.writeMessage(payload: payload) == ciphertext)
                    #expect(try responder.readMessage(ciphertext) == payload)
                } else {
                    #expect(try responder.writeMessage(payload: payload) == ciphertext)
                    #expect(try initiator.readMessage(ciphertext) == payload)
                }
            }
            #expect(initiator.isComplete && responder.isComplete)
            #expect(initiator.handshakeHash == responder.handshakeHash)
            if let hash = vector.handshakeHash { #expect(initiator.handshakeHash == hash) }
            #expect(initiator.remoteStatic == (try key(vector.respStatic)).publicKey)
            #expect(responder.remoteStatic == (try key(vector.initStatic)).publicKey)

            // Transport messages in the vectors are plain Noise (no bitchat nonce prefix): check the split keys with them.
            let (k1, k2) = initiator.symmetric.split()
            var toResponder = CipherState(key: k1), toInitiator = CipherState(key: k2)
            for index in 3..<vector.messages.count {
                let (payload, ciphertext) = vector.messages[index]
                if index % 2 == 0 { #expect(try toResponder.encryptWithAd([], payload) == ciphertext) }
                else { #expect(try toInitiator.encryptWithAd([], payload) == ciphertext) }
            }
            // And the framed transport built on the same keys decrypts what the peer's framed transport sends.
            var initTransport = try initiator.transport(), respTransport = try responder.transport()
            let framed = try initTransport.encrypt(vector.messages[3].payload)
            #expect(Array(framed.prefix(4)) == [0, 0, 0, 0])
            var again = CipherState(key: k1)
            #expect(Array(framed.dropFirst(4)) == (try again.encryptWithAd([], vector.messages[3].payload)))
            #expect(try respTransport.decrypt(framed) == vector.messages[3].payload)
        }
    }

    @Test func tamperedHandshakeMessagesFailAuthentication() throws {
        var initiator = NoiseHandshake(role: .initiator, localStatic: try .generate())
        var responder = NoiseHandshake(role: .responder, localStatic: try .generate())
        let m1 = try initiator.writeMessage()
        _ = try responder.readMessage(m1)
        var m2 = try responder.writeMessage()
        m2[40] ^= 1
        #expect(throws: NoiseError.authenticationFailed) { _ = try initiator.readMessage(m2) }
        #expect(throws: NoiseError.unexpectedMessage) { _ = try responder.writeMessage() }
        var fresh = NoiseHandshake(role: .responder, localStatic: try .generate())
        #expect(throws: NoiseError.truncated) { _ = try fresh.readMessage(V.rep(1, 31)) }
        #expect(throws: NoiseError.badKey) { _ = try X25519KeyPair.generate().sharedSecret(with: V.rep(0, 32)) }
    }

    static func session() throws -> (NoiseTransport, NoiseTransport) {
        var initiator = NoiseHandshake(role: .initiator, localStatic: try .generate())
        var responder = NoiseHandshake(role: .responder, localStatic: try .generate())
        _ = try responder.readMessage(try initiator.writeMessage())
        _ = try initiator.readMessage(try responder.writeMessage())
        _ = try responder.readMessage(try initiator.writeMessage())
        return (try initiator.transport(), try responder.transport())
    }

    @Test func transportFramingCarriesABigEndianNonceAndRejectsReplays() throws {
        var (a, b) = try Self.session()
        var frames: [[UInt8]] = []
        for i in 0..<5 { frames.append(try a.encrypt([0x01, UInt8(i)])) }
        #expect(frames[3].prefix(4).elementsEqual([0, 0, 0, 3]))
        #expect(frames[0].count == 2 + NoiseTransport.overhead)
        #expect(try b.decrypt(frames[2]) == [0x01, 2])
        #expect(try b.decrypt(frames[0]) == [0x01, 0])   // out of order within the window
        #expect(throws: NoiseError.replayed) { _ = try b.decrypt(frames[2]) }
        var tampered = frames[4]; tampered[4] ^= 0x80
        #expect(throws: NoiseError.authenticationFailed) { _ = try b.decrypt(tampered) }
        #expect(try b.decrypt(frames[4]) == [0x01, 4])   // a failed attempt marks nothing
        #expect(throws: NoiseError.truncated) { _ = try b.decrypt(V.rep(0, 19)) }
    }

    @Test func replayWindowIs1024Messages() {
        var window = ReplayWindow()
        #expect(window.accepts(0))
        window.mark(0)
        #expect(!window.accepts(0))
        window.mark(2000)
        #expect(!window.accepts(976))     // 2000 - 976 = 1024: outside
        #expect(window.accepts(977))      // inside, unseen
        window.mark(977)
        #expect(!window.accepts(977))
        window.mark(2070)                 // shift by 70 keeps 2000 and 977+? (2070-977 = 1093 → dropped)
        #expect(!window.accepts(2000))
        #expect(!window.accepts(977))
        #expect(window.accepts(2069))
        for n in stride(from: UInt64(2071), through: 3100, by: 1) { window.mark(n) }
        #expect(!window.accepts(3100 - 1023))
        #expect(!window.accepts(2070))    // 1030 behind: outside
    }

    @Test func largeMessagesAreAcceptedOnlyWhenTheyAuthenticateToAPrivateFile() throws {
        var (a, b) = try Self.session()
        let ordinaryMax = [0x01] + V.rep(7, NoiseTransport.maxOrdinaryPlaintext - 1)
        #expect(try b.decrypt(try a.encrypt(ordinaryMax)).count == NoiseTransport.maxOrdinaryPlaintext)
        #expect(throws: NoiseError.messageTooLarge) { _ = try a.encrypt(ordinaryMax + [0]) }
        let file = [0x20] + V.rep(7, 200_000)
        #expect(try b.decrypt(try a.encrypt(file)) == file)
        let alias = [0x09] + V.rep(7, 200_000)
        #expect(try b.decrypt(try a.encrypt(alias)) == alias)
        // A large ciphertext that authenticates to an ordinary message is refused: forge one with raw keys.
        let big = [0x01] + V.rep(7, 70_000)
        let forged = try a.sealUnchecked(big)
        #expect(throws: NoiseError.messageTooLarge) { _ = try b.decrypt(forged) }
        #expect(throws: NoiseError.messageTooLarge) { _ = try b.decrypt(V.rep(0, NoiseTransport.maxPrivateFileMessage + 1)) }
    }

    @Test func sessionStateSurvivesSerialization() throws {
        var initiator = NoiseHandshake(role: .initiator, localStatic: try .generate())
        var responder = NoiseHandshake(role: .responder, localStatic: try .generate())
        let m1 = try initiator.writeMessage()
        initiator = try NoiseHandshake(serialized: initiator.serialized())
        _ = try responder.readMessage(m1)
        responder = try NoiseHandshake(serialized: responder.serialized())
        _ = try initiator.readMessage(try responder.writeMessage())
        initiator = try NoiseHandshake(serialized: initiator.serialized())
        _ = try responder.readMessage(try initiator.writeMessage())
        var a = try NoiseTransport(serialized: try initiator.transport().serialized())
        var b = try responder.transport()
        let m = try a.encrypt([0x01, 9])
        _ = try b.decrypt(m)
        b = try NoiseTransport(serialized: b.serialized())
        #expect(throws: NoiseError.replayed) { _ = try b.decrypt(m) }
        a = try NoiseTransport(serialized: a.serialized())
        #expect(try b.decrypt(try a.encrypt([0x01, 10])) == [0x01, 10])
        #expect(throws: NoiseError.badState) { _ = try NoiseTransport(serialized: [2, 1, 2]) }
        #expect(throws: NoiseError.badState) { _ = try NoiseHandshake(serialized: [1, 9]) }
    }
}

extension NoiseTransport {
    /// Encrypts without the sender-side size check, to build hostile frames in tests.
    mutating func sealUnchecked(_ plaintext: [UInt8]) throws -> [UInt8] {
        let counter = send.nonce
        send.nonce += 1
        var out: [UInt8] = []
        out.appendBigEndian(UInt32(counter))
        return out + (try ChaChaPoly.seal(key: send.key!, counter: counter, associatedData: [], plaintext: plaintext))
    }
}
