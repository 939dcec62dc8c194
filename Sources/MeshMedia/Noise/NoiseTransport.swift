import Cryptography

/// A completed Noise session's transport with bitchat's framing.
///
/// On the wire a message is `[4-byte big-endian nonce][ciphertext][16-byte tag]`; the AEAD nonce is the same
/// counter (4 zero bytes ‖ little-endian UInt64). Received nonces pass a 1,024-message sliding replay window,
/// so frames may arrive out of order but never twice. Size budget: an ordinary message carries at most 65,535
/// plaintext bytes (65,555 on the wire); a larger message, up to 1,179,728 bytes, is decrypted only within
/// that bound and is accepted only when its plaintext is a private file (type 0x20 or the 0x09 alias).
package struct NoiseTransport: Sendable {
    package static let nonceCount = 4
    package static let overhead = nonceCount + ChaChaPoly.tagCount
    package static let maxOrdinaryPlaintext = 65_535
    package static let maxOrdinaryMessage = maxOrdinaryPlaintext + overhead
    package static let maxPrivateFilePlaintext = 1_179_708
    package static let maxPrivateFileMessage = maxPrivateFilePlaintext + overhead

    var send: CipherState
    var receive: CipherState
    public private(set) var replay = ReplayWindow()
    /// The peer's authenticated Noise static key.
    package let remoteStatic: [UInt8]
    package let handshakeHash: [UInt8]

    init(sendKey: SecretBytes, receiveKey: SecretBytes, remoteStatic: [UInt8], handshakeHash: [UInt8]) {
        send = CipherState(key: sendKey, nonce: 0)
        receive = CipherState(key: receiveKey, nonce: 0)
        self.remoteStatic = remoteStatic
        self.handshakeHash = handshakeHash
    }

    /// Encrypts `plaintext` under the next nonce and frames it.
    package mutating func encrypt(_ plaintext: [UInt8]) throws -> [UInt8] {
        let limit = plaintext.first.map(NoisePayload.isPrivateFile(typeByte:)) == true ? Self.maxPrivateFilePlaintext : Self.maxOrdinaryPlaintext
        guard plaintext.count <= limit else { throw NoiseError.messageTooLarge }
        guard send.nonce <= UInt64(UInt32.max) else { throw NoiseError.nonceExhausted }
        let counter = send.nonce
        guard let key = send.key else { throw NoiseError.badState }
        let sealed = try ChaChaPoly.seal(key: key, counter: counter, associatedData: [], plaintext: plaintext)
        send.nonce += 1
        var out: [UInt8] = []
        out.reserveCapacity(sealed.count + 4)
        out.appendBigEndian(UInt32(counter))
        return out + sealed
    }

    /// Checks the frame's size budget and nonce, decrypts, and marks the nonce seen. Nothing changes on failure.
    package mutating func decrypt(_ message: [UInt8]) throws -> [UInt8] {
        guard message.count >= Self.overhead else { throw NoiseError.truncated }
        guard message.count <= Self.maxPrivateFileMessage else { throw NoiseError.messageTooLarge }
        let counter = UInt64(message.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard replay.accepts(counter) else { throw NoiseError.replayed }
        guard let key = receive.key else { throw NoiseError.badState }
        let plaintext = try ChaChaPoly.open(key: key, counter: counter, associatedData: [], ciphertext: message.dropFirst(4))
        if message.count > Self.maxOrdinaryMessage {
            // The larger budget applies only after the ciphertext authenticated to a private file.
            guard let first = plaintext.first, NoisePayload.isPrivateFile(typeByte: first) else { throw NoiseError.messageTooLarge }
        }
        replay.mark(counter)
        return plaintext
    }

    // MARK: Persistence (secret: sealed by the node)

    func serialized() -> [UInt8] {
        var out: [UInt8] = [2]
        out += send.key!.copyBytes()
        out.appendBigEndian(send.nonce)
        out += receive.key!.copyBytes()
        out += replay.serialized()
        out += remoteStatic + handshakeHash
        return out
    }

    init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.byte() == 2 else { throw NoiseError.badState }
            send = CipherState(key: SecretBytes(Array(try reader.take(32))), nonce: try reader.uint64())
            receive = CipherState(key: SecretBytes(Array(try reader.take(32))), nonce: 0)
            replay = try ReplayWindow(serialized: Array(try reader.take(ReplayWindow.serializedCount)))
            remoteStatic = Array(try reader.take(32))
            handshakeHash = Array(try reader.take(32))
            guard reader.isAtEnd else { throw NoiseError.badState }
        } catch is WireError {
            throw NoiseError.badState
        }
    }
}

/// bitchat's sliding replay window over the last 1,024 received nonces.
package struct ReplayWindow: Sendable, Equatable {
    package static let size: UInt64 = 1024
    static let serializedCount = 8 + 128

    /// Highest nonce marked so far (0 before any).
    private(set) var highest: UInt64 = 0
    /// Bit i set: nonce `highest - i` was seen.
    private var bits = [UInt64](repeating: 0, count: 16)

    package init() {}

    /// True for a nonce above the highest seen, or within the window and not yet seen.
    package func accepts(_ nonce: UInt64) -> Bool {
        if nonce > highest { return true }
        let offset = highest - nonce
        guard offset < Self.size else { return false }
        return bits[Int(offset / 64)] & (1 << (offset % 64)) == 0
    }

    package mutating func mark(_ nonce: UInt64) {
        if nonce > highest {
            shift(by: nonce - highest)
            highest = nonce
            bits[0] |= 1
        } else {
            let offset = highest - nonce
            guard offset < Self.size else { return }
            bits[Int(offset / 64)] |= 1 << (offset % 64)
        }
    }

    private mutating func shift(by amount: UInt64) {
        guard amount < Self.size else { bits = [UInt64](repeating: 0, count: 16); return }
        let words = Int(amount / 64), shiftBits = amount % 64
        var shifted = [UInt64](repeating: 0, count: 16)
        for i in stride(from: 15, through: 0, by: -1) {
            let source = i - words
            guard source >= 0 else { continue }
            var value = bits[source] << shiftBits
            if shiftBits > 0, source - 1 >= 0 { value |= bits[source - 1] >> (64 - shiftBits) }
            shifted[i] = value
        }
        bits = shifted
    }

    func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.appendBigEndian(highest)
        for word in bits { out.appendBigEndian(word) }
        return out
    }

    init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        highest = try reader.uint64()
        for i in 0..<16 { bits[i] = try reader.uint64() }
    }
}
