import Foundation

/// Frames built byte by byte as iOS builds them, independently of the module's encoder: the test side of the
/// "signatures match iOS byte for byte" checks. The DEFLATE fixtures were made with zlib outside this package
/// (raw DEFLATE, window 15): level 5 (what Apple's COMPRESSION_ZLIB produces) and level 1 (another encoder).
enum HandBuilt {
    static let words = "the quick brown fox jumps over lazy dog mesh node relay frame signature bytes ios android media private file a an of to"
        .split(separator: " ").map(String.init)

    /// `n` words picked by a fixed linear congruential generator (the fixtures' texts).
    static func text(words n: Int) -> [UInt8] {
        var x: UInt64 = 1
        var out: [String] = []
        for _ in 0..<n {
            x = (x &* 1_103_515_245 &+ 12_345) % (1 << 31)
            out.append(words[Int((x >> 16) % UInt64(words.count))])
        }
        return Array(out.joined(separator: " ").utf8)
    }

    /// The file packet TLVs for ("f.txt", size, "text/plain", content).
    static func filePacket(_ content: [UInt8]) -> [UInt8] {
        [0x01] + be16(5) + Array("f.txt".utf8) + [0x02, 0x00, 0x04] + be32(content.count)
            + [0x03] + be16(10) + Array("text/plain".utf8) + [0x04] + be32(content.count) + content
    }

    /// Raw DEFLATE at zlib level 5 of `filePacket(text(words: 255))` (448 bytes; level 6 gives 447 other bytes).
    static let level5Of255Words = hex("5d545976c2300c4cb79f9ec227682fd30b98c681b421a689a1d0d3579ab16c930f78b6341a8d16e7a17b19ded2353d76cf5df7f2f1d4bda6704defa7c98f332cbb25feceee18d683fcf5a377ebb89f7d3a2fc1fd9cc7cf6fe7e77e8963ef9630f99bdbdd5258c556cc154ea61449c6db69192f3e05e75d3a0417871c4faecc08601ff72e5ec292450c8b3f86869b50e11ee295fcd5a756c03545359bc0c9ff5992ea0485e2954f6491c0424cf51cfb502e5fe7e369450cc9e0a45108fca65bacb3261ce34a255aa8519288b5c159f1f5646000a09b49297918275301414a6f4ae884d96421de634ae8b6d9150c3eb69f0c9c230a117c2bbc9930739ba39183a3064100790d260d437ae66403722babf97e9ca023b255a2f3cbf51262176d38cf4d7fa90282eada21cc5b8910d048deee04fba1ec40f22af5a8054cf8632c33033b1402bd363acaf2410a672a3595eea95fee904f3eeacdb2c4cd2a15446a190dd0595415dcee0d106521db87a1ca72e92433e6cd8b9e3120fdd5568350af459ef668cb5e9a57573acf20bfb1e6996f9e85b86061114a84ef8db2ca018f13e5decfaed429a237842caa595b08ab4b2011baac033f16dc4bcbc89aefdf3dded63f")
    /// Raw DEFLATE at zlib level 1 of `filePacket(text(words: 195))` (386 bytes; level 5 gives other bytes).
    static let level1Of195Words = hex("5d93cd5ec4200cc4abae179f2217affa4caca5bb68b7ac94fdf2e94d6660412ffc4a324cfe09f461789edef2353f0e9b61d8bc3e0d2fd95ff3fb71766141649be26591835ff7ba8cc1c91a768bcba7e4e5fb143ebec42d638a6194e4677793ed2dfb5563f77093d329479a71774ce1ecb2172779ef254ee53cbd8a2300c6b89378f6a9404cc91d7c8742a97a4ff14aff56d7a2905b8916aedcb3fb516c146949f46b7af3532c1ad423957a89a397baf93c1d8e2bdaa019920caa81fb372dcea9150c71159058a3d59246ec0dc9a66f5f550c01b85994c85398bd300020b3aff72648225c3bc379bd3d9d19a65de31aa21fdf001d206623aaefc199c14c59bb427638f8b44300a06f95e9c0509e353980324a7b030cffbd4ed851d993d8fd957ed96eddd8c0f9ddcd971400e2eccd0acefa40d922b83ae43aa18ace79983b94dc6a3f1681131616626568a7fba5dbb6e3b83f3ea0e01d5b4f70b190e5758fdba71f79cb5fa9697669225aeb9f0c75816ac0fdbb81028b1569af8d645c1dff3475fe05")

    /// A v1 directed, signed fileTransfer: `deflated` (with the payload's size) or the plain payload as the body,
    /// signed over the PKCS#7-padded encoding with TTL 0 and no signature flag, sent unpadded with TTL 7.
    static func legacyFrame(sender: [UInt8], recipient: [UInt8], timestamp: UInt64, payload: [UInt8], deflated: [UInt8]?,
                            sign: ([UInt8]) throws -> [UInt8]) throws -> [UInt8] {
        let body = deflated.map { be16(payload.count) + $0 } ?? payload
        let compressed: UInt8 = deflated == nil ? 0 : 0x04
        func header(ttl: UInt8, flags: UInt8) -> [UInt8] {
            [0x01, 0x22, ttl] + be64(timestamp) + [flags] + be16(body.count) + sender + recipient
        }
        let preimage = pad(header(ttl: 0, flags: 0x01 | compressed) + body)
        let signature = try sign(preimage)
        return header(ttl: 7, flags: 0x01 | 0x02 | compressed) + body + signature
    }

    /// `frame` cut into v1 fragment frames of 469 data bytes (unsigned, unpadded, type 0x20).
    static func fragments(of frame: [UInt8], sender: [UInt8], recipient: [UInt8], timestamp: UInt64) -> [[UInt8]] {
        let chunks = stride(from: 0, to: frame.count, by: 469).map { Array(frame[$0..<min(frame.count, $0 + 469)]) }
        let id: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]
        return chunks.enumerated().map { index, chunk in
            let payload = id + be16(index) + be16(chunks.count) + [0x22] + chunk
            return [0x01, 0x20, 7] + be64(timestamp) + [0x01] + be16(payload.count) + sender + recipient + payload
        }
    }

    /// PKCS#7 to the smallest 256/512/1024/2048 block at least 16 bytes longer, when at most 255 bytes are needed.
    static func pad(_ data: [UInt8]) -> [UInt8] {
        guard let block = [256, 512, 1024, 2048].first(where: { data.count + 16 <= $0 }), block - data.count <= 255 else { return data }
        return data + [UInt8](repeating: UInt8(block - data.count), count: block - data.count)
    }

    static func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }
    static func be32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * (3 - $0)) & 0xff) } }
    static func be64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(value >> (8 * (7 - UInt64($0))) & 0xff) } }
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
