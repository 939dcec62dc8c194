import Cryptography

/// A seeded mutation fuzzer over every decoder in this module (used by `job-bench fuzz-media` and the tests).
///
/// Seeds are the reference vectors plus frames built with the encoders (compressed, padded, routed, fragmented,
/// Noise handshake and transport messages). Each iteration picks a seed, applies one to four mutations (bit
/// flips, byte sets, truncations, insertions, deletions, duplications, length-field edits, splices) and feeds the
/// result to that seed's decoders. A decoder may accept or throw its typed error; anything else is a finding.
/// Accepted values are re-encoded and decoded again, and must come back equal. A crash ends the process — the
/// run is deterministic in its seed, so `input(at:)` reproduces any input.
package final class WireFuzzer {
    /// Per-decoder tallies.
    package struct Tally: Sendable {
        package var inputs = 0
        package var accepted = 0
        package var rejected = 0
        /// Errors of a type other than the decoder's own, and round-trip mismatches.
        package var findings = 0
        package init() {}
    }

    enum Family: CaseIterable { case file, noisePayload, packet, fragment, announce, peerState, capabilities, handshake, transport }

    struct Seed { let family: Family; let bytes: [UInt8] }

    private var rng: SplitMix64
    private let seeds: [Seed]
    public private(set) var tallies: [String: Tally] = [:]
    /// Names of decoders in a stable order for reports.
    package static let decoderNames = ["FilePacket", "NoisePayload", "BitchatPacket", "Fragment", "Announce", "PeerState",
                                      "Capabilities", "NoiseHandshake.read", "NoiseTransport.decrypt"]

    private var transport: NoiseTransport
    private let responderStatic: X25519KeyPair
    private var initiatorAwaitingSecond: NoiseHandshake

    package init(seed: UInt64) throws {
        rng = SplitMix64(seed: seed)
        // A fixed session so transport inputs exercise nonce, window and size checks before authentication.
        let initiatorStatic = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 1, count: 32)))
        responderStatic = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 2, count: 32)))
        var initiator = NoiseHandshake(role: .initiator, localStatic: initiatorStatic, prologue: [],
                                       presetEphemeral: try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 3, count: 32))))
        var responder = NoiseHandshake(role: .responder, localStatic: responderStatic, prologue: [],
                                       presetEphemeral: try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 4, count: 32))))
        let m1 = try initiator.writeMessage()
        initiatorAwaitingSecond = initiator
        _ = try responder.readMessage(m1)
        let m2 = try responder.writeMessage()
        _ = try initiator.readMessage(m2)
        let m3 = try initiator.writeMessage()
        _ = try responder.readMessage(m3)
        var sender = try initiator.transport()
        transport = try responder.transport()
        let t1 = try sender.encrypt(NoisePayload(kind: .privateFile, body: try FilePacket(fileName: "a", mimeType: "m", content: [1]).encoded()).encoded())
        let t2 = try sender.encrypt([0x21] + (try PeerState(capabilities: .privateMedia, signingPublicKey: [UInt8](repeating: 0x22, count: 32)).encoded()))
        seeds = try Self.makeSeeds() + [Seed(family: .handshake, bytes: m1), Seed(family: .handshake, bytes: m2),
                                         Seed(family: .transport, bytes: t1), Seed(family: .transport, bytes: t2)]
    }

    // MARK: Seeds

    static func hex(_ text: String) -> [UInt8] { (try? Hex.decode(text.replacingOccurrences(of: " ", with: ""))) ?? [] }

    static func makeSeeds() throws -> [Seed] {
        var seeds: [Seed] = []
        func add(_ family: Family, _ bytes: [UInt8]) { seeds.append(Seed(family: family, bytes: bytes)) }
        for text in ["01000161020004000000020300016d0400000002dead", "010001610400000002de",
                     "02 0008 0000000000000100 04 00000004 01020304", "04 00000003 aabbcc", "7f 0004 11111111 04 00000003 aabbcc 05 0001 ff",
                     "04 0002 aabb"] { add(.file, hex(text)) }
        add(.noisePayload, hex("20010005612e7478740200040000000303000a746578742f706c61696e0400000003010203"))
        add(.noisePayload, hex("09cafe"))
        add(.packet, hex("01020701020304050607080000031011121314151617aabbcc"))
        add(.packet, hex("021105000000000000002a0b00000002 0102030405060708 1112131415161718 02 2122232425262728 3132333435363738 dead")
            + [UInt8](repeating: 0x5a, count: 64))
        let text = Array(String(repeating: "mesh media ", count: 30).utf8)
        for version: UInt8 in [1, 2] {
            let packet = BitchatPacket(version: version, type: .message, ttl: 3, timestamp: 9, senderID: [1, 2, 3, 4, 5, 6, 7, 8],
                                       recipientID: [8, 7, 6, 5, 4, 3, 2, 1], route: version == 2 ? [[9, 9, 9, 9, 9, 9, 9, 9]] : [],
                                       payload: text, signature: [UInt8](repeating: 7, count: 64))
            add(.packet, try packet.encoded())
            add(.packet, try packet.encoded(padding: false))
            for frame in try FragmentPlanner.frames(for: BitchatPacket(version: version, type: .fileTransfer, ttl: 3, timestamp: 1,
                                                                         senderID: [1, 1, 1, 1, 1, 1, 1, 1], payload: (0..<900).map { UInt8($0 % 251) }),
                                                    fragmentID: [5, 5, 5, 5, 5, 5, 5, 5]) {
                add(.packet, try frame.encoded())
                add(.fragment, frame.payload)
            }
        }
        add(.fragment, hex("00010203040506070001000302aabb"))
        let announce = "0103626f62" + "0220" + String(repeating: "11", count: 32) + "0320" + String(repeating: "22", count: 32) + "05020001" + "7f02cafe"
        add(.announce, hex(announce))
        add(.announce, hex(announce + "0410" + String(repeating: "33", count: 16) + "06027531"))
        let key = String(repeating: "22", count: 32)
        add(.peerState, hex("01 01020001 0220" + key))
        add(.peerState, hex("01 010100 0220" + key + "7f01ff"))
        for caps in ["00", "01", "0001", "0002", "0004", "ffffffffffffffff"] { add(.capabilities, hex(caps)) }
        return seeds
    }

    // MARK: Mutation

    /// The next input: a seed, mutated one to four times.
    func nextInput() -> (Family, [UInt8]) {
        let seed = seeds[Int(rng.next() % UInt64(seeds.count))]
        var bytes = seed.bytes
        let rounds = 1 + Int(rng.next() % 4)
        for _ in 0..<rounds { mutate(&bytes) }
        return (seed.family, bytes)
    }

    private func mutate(_ bytes: inout [UInt8]) {
        let choice = rng.next() % 10
        let count = bytes.count
        func position() -> Int { count == 0 ? 0 : Int(rng.next() % UInt64(count)) }
        switch choice {
        case 0 where count > 0:   // bit flip
            let p = position(); bytes[p] ^= UInt8(1 << (rng.next() % 8))
        case 1 where count > 0:   // random byte
            bytes[position()] = UInt8(truncatingIfNeeded: rng.next())
        case 2:                   // truncation
            bytes.removeLast(count == 0 ? 0 : Int(rng.next() % UInt64(count + 1)))
        case 3:                   // insertion
            let p = count == 0 ? 0 : Int(rng.next() % UInt64(count + 1))
            let n = 1 + Int(rng.next() % 16)
            bytes.insert(contentsOf: (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: p)
        case 4 where count > 1:   // deletion
            let p = position(); let n = min(count - p, 1 + Int(rng.next() % 8))
            bytes.removeSubrange(p..<(p + n))
        case 5 where count > 1:   // duplication
            let p = position(); let n = min(count - p, 1 + Int(rng.next() % 32))
            bytes.insert(contentsOf: bytes[p..<(p + n)], at: p)
        case 6 where count > 0, 7 where count > 0:   // length-field edits: extremes and off-by-one
            let p = position()
            switch rng.next() % 5 {
            case 0: bytes[p] = 0x00
            case 1: bytes[p] = 0xff
            case 2: bytes[p] = bytes[p] &+ 1
            case 3: bytes[p] = bytes[p] &- 1
            default: if p + 1 < count { bytes[p] = 0xff; bytes[p + 1] = 0xff } else { bytes[p] = 0x80 }
            }
        case 8:                   // splice with another seed
            let other = seeds[Int(rng.next() % UInt64(seeds.count))].bytes
            let cut = count == 0 ? 0 : Int(rng.next() % UInt64(count + 1))
            let from = other.isEmpty ? 0 : Int(rng.next() % UInt64(other.count))
            bytes = Array(bytes.prefix(cut)) + other[from...]
        default:                  // append
            bytes.append(UInt8(truncatingIfNeeded: rng.next()))
        }
    }

    // MARK: Running

    /// Runs `iterations` inputs; returns the total number of findings (0 is the pass condition).
    @discardableResult
    package func run(iterations: Int, progress: ((Int) -> Void)? = nil) -> Int {
        for index in 0..<iterations {
            let (family, bytes) = nextInput()
            feed(family, bytes)
            if index % 100_000 == 99_999 { progress?(index + 1) }
        }
        return tallies.values.reduce(0) { $0 + $1.findings }
    }

    /// The input at `index` (0-based) of the run started with `seed`, and the decoder family it went to.
    package static func input(seed: UInt64, at index: Int) throws -> [UInt8] {
        let fuzzer = try WireFuzzer(seed: seed)
        for _ in 0..<index { _ = fuzzer.nextInput() }
        return fuzzer.nextInput().1
    }

    /// Only generates the inputs (the baseline: the cost of mutation without decoding).
    package func generateOnly(iterations: Int) -> Int {
        var sum = 0
        for _ in 0..<iterations { sum &+= nextInput().1.count }
        return sum
    }

    private func record(_ name: String, _ body: () throws -> Bool) {
        var tally = tallies[name] ?? Tally()
        tally.inputs += 1
        do {
            if try body() { tally.accepted += 1 } else { tally.findings += 1 }
        } catch is WireError {
            tally.rejected += 1
        } catch is NoiseError {
            tally.rejected += 1
        } catch {
            tally.findings += 1
        }
        tallies[name] = tally
    }

    private func feed(_ family: Family, _ bytes: [UInt8]) {
        switch family {
        case .file:
            record("FilePacket") { let v = try FilePacket.decode(bytes); return try FilePacket.decode(try v.encoded()) == v }
        case .noisePayload:
            record("NoisePayload") { let v = try NoisePayload.decode(bytes); return try NoisePayload.decode(v.encoded()).kind == v.kind }
            record("FilePacket") { let v = try FilePacket.decode(bytes.dropFirst()); return try FilePacket.decode(try v.encoded()) == v }
        case .packet:
            record("BitchatPacket") {
                let v = try BitchatPacket.decode(bytes)
                var canonical = v
                if canonical.version == 1 { canonical.route = [] }
                return try BitchatPacket.decode(try canonical.encoded()) == canonical
            }
        case .fragment:
            record("Fragment") { let v = try Fragment.decode(bytes); return try Fragment.decode(try v.encoded()) == v }
        case .announce:
            record("Announce") { let v = try Announce.decode(bytes); return try Announce.decode(try v.encoded()) == v }
        case .peerState:
            record("PeerState") { let v = try PeerState.decode(bytes); return try PeerState.decode(try v.encoded()) == v }
        case .capabilities:
            record("Capabilities") { let v = try Capabilities.decodeStrict(bytes); return v.encoded() == bytes }
        case .handshake:
            record("NoiseHandshake.read") {
                var responder = NoiseHandshake(role: .responder, localStatic: responderStatic)
                var initiator = initiatorAwaitingSecond
                let first = try? responder.readMessage(bytes)
                let second = try? initiator.readMessage(bytes)
                if first == nil && second == nil { throw NoiseError.authenticationFailed }
                return true
            }
        case .transport:
            record("NoiseTransport.decrypt") {
                var copy = transport
                let plaintext = try copy.decrypt(bytes)
                return plaintext.count + NoiseTransport.overhead == bytes.count
            }
        }
    }
}

/// SplitMix64: a small, fast, seedable generator (Steele, Lea, Flood 2014) so fuzz runs are reproducible.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e3779b97f4a7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58476d1ce4e5b9
        z = (z ^ (z >> 27)) &* 0x94d049bb133111eb
        return z ^ (z >> 31)
    }
}
