import Cryptography
import Foundation
import QUIC
import Runner

/// The node's endpoint key as the link's QUIC credentials, and the link's deadlines as QUIC timeouts.
enum LinkIdentity {
    /// TLS credentials over the node's Ed25519 key (raw public key, RFC 7250).
    static func quic(_ identity: NodeIdentity) throws -> QUICIdentity {
        guard let made = QUICIdentity(seed: identity.privateKey.seed.copyBytes(), publicKey: identity.privateKey.publicKey) else {
            throw JobError.internal("cannot load the endpoint key into TLS")
        }
        return made
    }

    /// The handshake deadline, and a QUIC idle timeout of one message deadline (or the handshake deadline, if
    /// longer): a peer silent that long is gone. Neither is reset by packets: both are absolute.
    static func timeouts(_ deadlines: LinkDeadlines) -> QUICTimeouts {
        QUICTimeouts(handshakeSeconds: deadlines.handshakeSeconds, idleSeconds: max(1, deadlines.messageSeconds, deadlines.handshakeSeconds))
    }
}
