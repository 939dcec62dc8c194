import Cryptography
import Foundation

/// The grants module's decoders of outside bytes, as one public table for `job-bench fuzz` and the fuzz tests.
///
/// "link frame" reads a frame the way a node does when it arrives over the link: the 4-byte big-endian length
/// (refused above `LinkConnection.maxFrame`), the JSON body, then the typed reader for its `type` (offer, pull,
/// ack, revoke, cancel, proof, challenge, answer, offer-result, offers). "grant bundle" parses the text a holder pastes
/// into `grants accept`; "link address" and "endpoint id" the peer coordinates a contact carries. Each returns
/// whether the input was accepted; rejection is normal, a crash or a hang is a finding.
package enum GrantsFuzzing {
    package struct Decoder: Sendable {
        package let name: String
        package let seeds: [[UInt8]]
        package let decode: @Sendable ([UInt8]) -> Bool
    }

    static func frame(_ json: String) -> [UInt8] {
        let body = Array(json.utf8)
        return [UInt8(body.count >> 24 & 0xff), UInt8(body.count >> 16 & 0xff), UInt8(body.count >> 8 & 0xff), UInt8(body.count & 0xff)] + body
    }

    static let id16 = String(repeating: "ab", count: 16)
    static let endpoint = String(repeating: "5c", count: 32)

    /// One link frame, decoded as the receiving side would.
    static func decodeFrame(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard length <= LinkConnection.maxFrame, bytes.count - 4 >= length else { return false }
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes[4..<(4 + length)])) as? [String: Any],
              let message = try? LinkMessage(fields: object) else { return false }
        do {
            switch message.type {
            case "offer": _ = try OfferPayload(message)
            case "pull", "offer-result", "decisions": _ = try LinkWire.parseDecisions(message)
            case "ack": _ = try LinkWire.parseAck(message)
            case "cancel": _ = try LinkWire.parseCancel(message)
            case "revoke": _ = try message.strings("grant_ids", maxCount: LinkWire.maxRevokedGrants, maxBytes: 32)
            case "proof":
                _ = try message.hex("grant_id", count: GrantProof.grantIDCount)
                _ = try message.hex("proof", count: 32)
            case "challenge": _ = try message.hex("challenge", count: GrantProof.challengeCount)
            case "answer": guard ProofAnswer(rawValue: try message.string("answer", maxBytes: 16)) != nil else { return false }
            case "offers": _ = try message.objects("offers", maxCount: LinkWire.offersPerFrame).map(OfferPayload.init)
            default: return false
            }
            return true
        } catch {
            return false
        }
    }

    package static let decoders: [Decoder] = [
        Decoder(name: "link frame", seeds: [
            frame(#"{"type":"offer","offer_id":"\#(id16)","ticket":"syncthing://ticket/abc","sender_name":"Ann","file_count":3,"total_bytes":1024}"#),
            frame(#"{"type":"pull","decisions":[{"offer_id":"\#(id16)","decision":"accepted"},{"offer_id":"\#(id16)","decision":"declined"}]}"#),
            frame(#"{"type":"ack","offer_ids":["\#(id16)"]}"#),
            frame(#"{"type":"ack","offer_ids":["\#(id16)"],"refused":["\#(String(repeating: "cd", count: 16))"]}"#),
            frame(#"{"type":"cancel","offer_ids":["\#(id16)"]}"#),
            frame(#"{"type":"revoke","grant_ids":["\#(id16)","\#(id16)"]}"#),
            frame(#"{"type":"proof","grant_id":"\#(String(repeating: "01", count: GrantProof.grantIDCount))","proof":"\#(String(repeating: "02", count: 32))"}"#),
            frame(#"{"type":"challenge","challenge":"\#(String(repeating: "03", count: GrantProof.challengeCount))"}"#),
            frame(#"{"type":"answer","answer":"accepted"}"#),
            frame(#"{"type":"offers","offers":[{"offer_id":"\#(id16)","ticket":"t","file_count":1,"total_bytes":2}]}"#),
        ], decode: { decodeFrame($0) }),
        Decoder(name: "grant bundle", seeds: [
            Array("vnidrop-grant-v1.\(endpoint).\(String(repeating: "7e", count: 32)).\(id16).\(String(repeating: "99", count: 32)).never".utf8),
            Array("  vnidrop-grant-v1.\(endpoint).\(String(repeating: "7e", count: 32)).\(id16).\(String(repeating: "99", count: 32)).1790000000000\n".utf8),
        ], decode: { (try? GrantBundle(parsing: String(decoding: $0, as: UTF8.self))) != nil }),
        Decoder(name: "link address", seeds: [Array("127.0.0.1:7443".utf8), Array("[::1]:7443".utf8), Array("node.example:7443".utf8)],
                decode: { (try? LinkAddress.parseLink(String(decoding: $0, as: UTF8.self))) != nil }),
        Decoder(name: "endpoint id", seeds: [Array(endpoint.utf8)], decode: { (try? EndpointID(hex: String(decoding: $0, as: UTF8.self))) != nil }),
    ]
}
