import Cryptography
import Runner
import Store

/// `job mesh init`: creates the node's Noise static key and Ed25519 signing key, sealed with the store keyring.
struct MeshInitCommand: Command {
    let path = ["mesh", "init"]
    let summary = "create this store's mesh node: a Noise static key (X25519) and a signing key (Ed25519), encrypted at rest"
    let options: [OptionSpec] = [
        .value("--nickname", "NAME", "the nickname announces carry (default: node)"),
        .value("--emulate", "CLIENT", "behave as a migration-era client for interoperability tests: current (default), prerelease-ios, older-client"),
    ]

    func run(_ context: JobContext) throws {
        let nickname = context.arguments.value("--nickname") ?? "node"
        guard !nickname.isEmpty, nickname.utf8.count <= 64 else { throw JobError.usage("--nickname needs 1 to 64 bytes of text") }
        let emulationText = context.arguments.value("--emulate") ?? "current"
        guard let emulation = ClientEmulation(rawValue: emulationText) else {
            throw JobError.usage("--emulate must be one of \(ClientEmulation.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let identity = try NodeIdentity.create(database: context.database, keyring: try context.keyring(), nickname: nickname,
                                               emulation: emulation, now: context.nowMilliseconds)
        let fingerprint = Hex.encode(NodeIdentity.fingerprint(noiseKey: identity.noise.publicKey))
        if context.jsonOutput {
            context.printJSON(["peer_id": .string(Hex.encode(identity.peerID)), "fingerprint": .string(fingerprint), "emulate": .string(emulation.rawValue)])
        } else {
            context.print("mesh node created: peer id \(Hex.encode(identity.peerID)), fingerprint \(fingerprint)")
        }
    }
}

/// `job mesh announce`: queues one signed announce (nickname, Noise key, signing key, capabilities).
struct MeshAnnounceCommand: Command {
    let path = ["mesh", "announce"]
    let summary = "queue a signed announce: nickname, Noise key, Ed25519 key and capabilities (privateMedia)"

    func run(_ context: JobContext) throws {
        let node = try MeshNode.open(context)
        let frames = try context.database.write { _ in try node.announce() }
        if context.jsonOutput { context.printJSON(["queued_frames": .number(frames)]) } else { context.print("announce queued (\(frames) frame)") }
    }
}

/// `job mesh peers [--json]`: the identity cache — fingerprint, identity standing, advertised capabilities,
/// pinned or not, session.
///
/// `identity` is `authenticated` (the peer bound its signing key inside a Noise session), `provisional` (one
/// announce claim, no session yet) or `conflict` (announces claim different signing keys and no session settled
/// it: legacy files from this peer are refused). `conflicting_claims` counts announces that claimed a signing key
/// other than the one in force; they never replace it.
struct MeshPeersCommand: Command {
    let path = ["mesh", "peers"]
    let summary = "list known peers: stable fingerprint, identity (authenticated, provisional, conflict), capabilities, pinned, session"

    func run(_ context: JobContext) throws {
        let node = try MeshNode.open(context)
        var rows: [JSON] = []
        var lines: [String] = []
        for record in try node.registry.all().sorted(by: { $0.peerID.lexicographicallyPrecedes($1.peerID) }) {
            let pinned = try node.registry.isPinned(fingerprint: record.fingerprint)
            let session = try node.sessions.load(record.peerID)
            let sessionWord = session?.established != nil ? "established" : (session?.pending != nil ? "handshaking" : "none")
            let announcement = record.announcement
            let capabilities = announcement?.capabilities.map(CapabilityNames.names) ?? []
            let conflicts = record.conflictingClaims.count
            rows.append(["peer_id": .string(Hex.encode(record.peerID)), "fingerprint": .string(Hex.encode(record.fingerprint)),
                         "identity": .string(record.standing.rawValue),
                         "signing_key": .optional(record.signingKey.map(Hex.encode)),
                         "conflicting_claims": .int(Int64(conflicts)),
                         "announced": .bool(announcement != nil),
                         "nickname": .optional(announcement?.nickname), "capabilities": .array(capabilities.map(JSON.string)),
                         "capabilities_advertised": .bool(announcement?.capabilities != nil), "pinned": .bool(pinned),
                         "session": .string(sessionWord),
                         "session_proof": .optional(session?.established == nil ? nil : session?.proof.map { CapabilityNames.names($0.capabilities).joined(separator: ",") })])
            var identity = record.standing.rawValue
            if conflicts > 0 { identity += "(\(conflicts) conflicting claim\(conflicts == 1 ? "" : "s"))" }
            lines.append("\(Hex.encode(record.fingerprint))  \(pinned ? "pinned  " : "unpinned")  identity=\(identity)  session=\(sessionWord)  caps=\(capabilities.isEmpty ? "-" : capabilities.joined(separator: ","))")
        }
        if context.jsonOutput { context.printJSON(.array(rows)) } else if lines.isEmpty { context.print("no peers known") } else { lines.forEach(context.print) }
    }
}

/// Capability bits by name, for output.
enum CapabilityNames {
    static let table: [(Capabilities, String)] = [
        (.prekeys, "prekeys"), (.wifiBulk, "wifiBulk"), (.gateway, "gateway"), (.groups, "groups"), (.board, "board"),
        (.vouch, "vouch"), (.meshDiagnostics, "meshDiagnostics"), (.bridge, "bridge"), (.privateMedia, "privateMedia"),
        (.privateMediaReceipts, "privateMediaReceipts"),
    ]

    static func names(_ capabilities: Capabilities) -> [String] {
        var names = table.filter { capabilities.contains($0.0) }.map(\.1)
        let known = table.reduce(Capabilities()) { $0.union($1.0) }
        let unknown = capabilities.subtracting(known)
        if !unknown.isEmpty { names.append("bits:0x" + String(unknown.rawValue, radix: 16)) }
        return names
    }
}

/// Parses a peer given on the command line: its 16-hex-digit peer id or 64-hex-digit fingerprint.
enum PeerArgument {
    static func parse(_ text: String, option: String = "--to") throws -> [UInt8] {
        guard let bytes = try? Hex.decode(text.lowercased()), bytes.count == 8 || bytes.count == 32 else {
            throw JobError.usage("\(option) needs a peer id (16 hex digits) or fingerprint (64 hex digits), as job mesh peers lists them")
        }
        return Array(bytes.prefix(8))
    }
}
