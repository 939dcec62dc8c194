import CZlib

/// Raw DEFLATE (RFC 1951, no zlib or gzip wrapper) through zlib, as both clients compress packet payloads.
enum Deflate {
    /// Decoders refuse anything that would expand by more than this factor.
    static let maxRatio = 50_000
    /// Absolute bound on an inflated payload (the largest reassembled frame is below this).
    static let maxInflatedBytes = 2 * 1_048_576

    /// The level iOS compresses at: Apple's `COMPRESSION_ZLIB` is raw DEFLATE at zlib level 5 (zlib's default, 6,
    /// gives other bytes for many texts).
    static let level: Int32 = 5

    /// Compresses `input` at `level`; nil if zlib fails (the caller then sends it uncompressed).
    static func compress(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard deflateInit2_(&stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY,
                            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        var input = input
        let status: Int32 = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        return Array(output.prefix(Int(stream.total_out)))
    }

    /// Inflates `input` to exactly `originalSize` bytes, refusing ratios above 50,000:1, sizes above
    /// `maxInflatedBytes`, corrupt streams and streams that produce a different length.
    static func decompress<C: Collection>(_ compressed: C, originalSize: Int) throws -> [UInt8] where C.Element == UInt8 {
        let input = Array(compressed)
        guard originalSize > 0, !input.isEmpty, originalSize <= maxInflatedBytes,
              originalSize / input.count <= maxRatio else { throw WireError.badCompression }
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw WireError.badCompression
        }
        defer { inflateEnd(&stream) }
        // One spare byte: a stream that would produce more than originalSize shows up as produced > originalSize.
        var output = [UInt8](repeating: 0, count: originalSize + 1)
        var inputCopy = input
        let status: Int32 = inputCopy.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END, Int(stream.total_out) == originalSize else { throw WireError.badCompression }
        output.removeLast()
        return output
    }

    /// The clients' heuristic: payloads of at least 100 bytes whose first 256 bytes use under 90 % distinct values.
    static func shouldCompress(_ payload: [UInt8]) -> Bool {
        guard payload.count >= 100 else { return false }
        let sample = payload.prefix(256)
        var seen = [Bool](repeating: false, count: 256)
        var unique = 0
        for byte in sample where !seen[Int(byte)] { seen[Int(byte)] = true; unique += 1 }
        return Double(unique) / Double(sample.count) < 0.9
    }
}
