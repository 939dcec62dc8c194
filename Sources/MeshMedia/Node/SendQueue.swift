import Cryptography
import Store

/// A queued private-file send: what `job mesh send-file` stored (sealed) for `media-outbox` to plan.
struct QueuedFile {
    var peerID: [UInt8]
    var fileName: String
    var mimeType: String
    var content: [UInt8]
    /// Source route (`--via`): the relays' peer ids in order; empty for an unrouted send.
    var route: [[UInt8]]

    static let purpose = "mesh-send"
    static let maxRouteHops = 8

    func serialized() -> [UInt8] {
        var out = peerID
        let name = Array(fileName.utf8.prefix(1024)), mime = Array(mimeType.utf8.prefix(255))
        out.appendBigEndian(UInt16(name.count)); out += name
        out.appendBigEndian(UInt16(mime.count)); out += mime
        out.append(UInt8(route.count))
        for hop in route { out += hop }
        return out + content
    }

    init(peerID: [UInt8], fileName: String, mimeType: String, content: [UInt8], route: [[UInt8]] = []) {
        self.peerID = peerID
        self.fileName = fileName
        self.mimeType = mimeType
        self.content = content
        self.route = route
    }

    init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        peerID = Array(try reader.take(8))
        fileName = String(decoding: try reader.take(Int(try reader.uint16())), as: UTF8.self)
        mimeType = String(decoding: try reader.take(Int(try reader.uint16())), as: UTF8.self)
        let hops = Int(try reader.byte())
        route = try (0..<hops).map { _ in Array(try reader.take(8)) }
        content = Array(reader.rest())
    }

    var filePacket: FilePacket { FilePacket(fileName: fileName, mimeType: mimeType, content: content) }
}

/// A send's status as `job mesh sends` shows it: never more than this node knows.
enum SendStatus: String {
    case queued, waiting, transmitted, carried, failed

    var explanation: String {
        switch self {
        case .queued: return "queued for media-outbox"
        case .waiting: return "waiting for the peer's session proof"
        case .transmitted: return "handed to the radio (the outbox); not yet carried to any neighbour; delivery is not confirmed"
        case .carried: return "every frame reached at least one neighbour; the mesh gives no delivery receipt"
        case .failed: return "failed; nothing more is sent"
        }
    }
}

/// Why a send ended as it did, as `job mesh sends` shows it.
enum SendReason: String {
    case tooManyFragments = "too-many-fragments"
    case needsConsent = "needs-consent"
    case downgrade = "downgrade"
    case proofTimeout = "proof-timeout"
    case noStableKey = "no-stable-key"
    case awaitingProof = "awaiting-proof"
    case unencodable = "unencodable"
    case cancelled = "cancelled"

    var explanation: String {
        switch self {
        case .tooManyFragments: return "the fragment plan exceeds 256 fragments; nothing was sent"
        case .needsConsent: return "the peer cannot receive encrypted media; resend with --accept-unencrypted to send it unencrypted"
        case .downgrade: return "the pinned peer no longer proves privateMedia; unencrypted fallback is blocked"
        case .proofTimeout: return "the pinned peer did not prove privateMedia in time"
        case .noStableKey: return "no verified announce gives this peer a stable Noise key"
        case .awaitingProof: return "waiting for the peer's session proof (handshake in progress)"
        case .unencodable: return "the file cannot be encoded for the wire"
        case .cancelled: return "cancelled by hand; its content was erased"
        }
    }
}
