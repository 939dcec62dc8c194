import Cryptography

/// The Noise `XX` handshake over 25519, ChaChaPoly and SHA-256 — `Noise_XX_25519_ChaChaPoly_SHA256`.
///
///     -> e
///     <- e, ee, s, es
///     -> s, se
///
/// Each message is written by one side and read by the other; after the third both call `transport()`.
/// The state is a value: the node seals `serialized()` into the store between passes, so a handshake
/// completes over several exchanges.
package struct NoiseHandshake: Sendable {
    package static let protocolName = "Noise_XX_25519_ChaChaPoly_SHA256"
    /// Noise's maximum message length.
    package static let maxMessageCount = 65_535

    package enum Role: UInt8, Sendable { case initiator = 1, responder = 2 }

    package let role: Role
    var symmetric: SymmetricState
    let localStatic: X25519KeyPair
    var localEphemeral: X25519KeyPair?
    public private(set) var remoteStatic: [UInt8]?
    var remoteEphemeral: [UInt8]?
    /// Messages processed so far (0…3).
    public private(set) var messageIndex: Int
    /// Ephemeral to use instead of a random one (known-answer tests only).
    private var presetEphemeral: X25519KeyPair?

    package init(role: Role, localStatic: X25519KeyPair, prologue: [UInt8] = []) {
        self.init(role: role, localStatic: localStatic, prologue: prologue, presetEphemeral: nil)
    }

    /// With a fixed ephemeral key: for the published test vectors only, never for live sessions.
    init(role: Role, localStatic: X25519KeyPair, prologue: [UInt8], presetEphemeral: X25519KeyPair?) {
        self.role = role
        self.localStatic = localStatic
        self.presetEphemeral = presetEphemeral
        symmetric = SymmetricState(protocolName: Self.protocolName)
        symmetric.mixHash(prologue)
        messageIndex = 0
    }

    package var isComplete: Bool { messageIndex >= 3 }
    /// True when it is this side's turn to write.
    package var isMyTurnToWrite: Bool {
        guard !isComplete else { return false }
        return (messageIndex % 2 == 0) == (role == .initiator)
    }
    package var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// Writes the next handshake message carrying `payload`.
    package mutating func writeMessage(payload: [UInt8] = []) throws -> [UInt8] {
        guard isMyTurnToWrite else { throw NoiseError.unexpectedMessage }
        var out: [UInt8] = []
        switch messageIndex {
        case 0:
            let e = try presetEphemeral ?? X25519KeyPair.generate()
            localEphemeral = e
            out += e.publicKey
            symmetric.mixHash(e.publicKey)
        case 1:
            let e = try presetEphemeral ?? X25519KeyPair.generate()
            localEphemeral = e
            out += e.publicKey
            symmetric.mixHash(e.publicKey)
            symmetric.mixKey(try e.sharedSecret(with: try required(remoteEphemeral)))            // ee
            out += try symmetric.encryptAndHash(localStatic.publicKey)                          // s
            symmetric.mixKey(try localStatic.sharedSecret(with: try required(remoteEphemeral)))  // es
        default:
            out += try symmetric.encryptAndHash(localStatic.publicKey)                          // s
            symmetric.mixKey(try localStatic.sharedSecret(with: try required(remoteEphemeral)))  // se
        }
        out += try symmetric.encryptAndHash(payload)
        guard out.count <= Self.maxMessageCount else { throw NoiseError.messageTooLarge }
        messageIndex += 1
        return out
    }

    /// Reads the peer's next handshake message and returns its payload. After an error the state is spent:
    /// discard it and start a new handshake.
    package mutating func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        guard !isComplete, !isMyTurnToWrite else { throw NoiseError.unexpectedMessage }
        guard message.count <= Self.maxMessageCount else { throw NoiseError.messageTooLarge }
        var rest = message[...]
        func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard rest.count >= count else { throw NoiseError.truncated }
            defer { rest = rest.dropFirst(count) }
            return rest.prefix(count)
        }
        switch messageIndex {
        case 0:
            let re = Array(try take(32))
            remoteEphemeral = re
            symmetric.mixHash(re)
        case 1:
            let re = Array(try take(32))
            remoteEphemeral = re
            symmetric.mixHash(re)
            let e = try required(localEphemeral)
            symmetric.mixKey(try e.sharedSecret(with: re))                                    // ee
            let rs = try symmetric.decryptAndHash(try take(48))                               // s
            remoteStatic = rs
            symmetric.mixKey(try e.sharedSecret(with: rs))                                    // es
        default:
            let rs = try symmetric.decryptAndHash(try take(48))                               // s
            remoteStatic = rs
            symmetric.mixKey(try required(localEphemeral).sharedSecret(with: rs))             // se
        }
        let payload = try symmetric.decryptAndHash(rest)
        messageIndex += 1
        return payload
    }

    /// The transport after the third message: sending and receiving ciphers by role.
    package func transport() throws -> NoiseTransport {
        guard isComplete, let remoteStatic else { throw NoiseError.unexpectedMessage }
        let (k1, k2) = symmetric.split()
        let (send, receive) = role == .initiator ? (k1, k2) : (k2, k1)
        return NoiseTransport(sendKey: send, receiveKey: receive, remoteStatic: remoteStatic, handshakeHash: handshakeHash)
    }

    private func required<T>(_ value: T?) throws -> T {
        guard let value else { throw NoiseError.badState }
        return value
    }

    // MARK: Persistence (the bytes are secret: the node seals them with the store keyring)

    func serialized() -> [UInt8] {
        var out: [UInt8] = [1, role.rawValue, UInt8(messageIndex)]
        out += symmetric.chainingKey.copyBytes() + symmetric.handshakeHash
        out += symmetric.cipher.key.map { [1] + $0.copyBytes() } ?? [0]
        out.appendBigEndian(symmetric.cipher.nonce)
        out += localStatic.privateKey.copyBytes()
        out += localEphemeral.map { [1] + $0.privateKey.copyBytes() } ?? [0]
        out += remoteStatic.map { [1] + $0 } ?? [0]
        out += remoteEphemeral.map { [1] + $0 } ?? [0]
        return out
    }

    init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.byte() == 1, let role = Role(rawValue: try reader.byte()) else { throw NoiseError.badState }
            self.role = role
            messageIndex = Int(try reader.byte())
            guard messageIndex <= 3 else { throw NoiseError.badState }
            let ck = SecretBytes(Array(try reader.take(32)))
            let h = Array(try reader.take(32))
            func optional(_ reader: inout ByteReader) throws -> [UInt8]? {
                switch try reader.byte() {
                case 0: return nil
                case 1: return Array(try reader.take(32))
                default: throw NoiseError.badState
                }
            }
            let k = try optional(&reader).map(SecretBytes.init)
            let n = try reader.uint64()
            symmetric = SymmetricState(chainingKey: ck, handshakeHash: h, cipher: CipherState(key: k, nonce: n))
            localStatic = try X25519KeyPair(privateKey: SecretBytes(Array(try reader.take(32))))
            localEphemeral = try optional(&reader).map { try X25519KeyPair(privateKey: SecretBytes($0)) }
            remoteStatic = try optional(&reader)
            remoteEphemeral = try optional(&reader)
            presetEphemeral = nil
            guard reader.isAtEnd else { throw NoiseError.badState }
        } catch is WireError {
            throw NoiseError.badState
        }
    }
}
