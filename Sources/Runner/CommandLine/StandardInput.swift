import Foundation

/// Reads standard input with a cap, so a stray pipe of gigabytes cannot grow the process without bound.
package enum StandardInput {
    /// The most a command reads from standard input: 1 MiB, far above any key, bundle or ticket.
    package static let limit = 1 << 20

    /// Reads standard input to its end; more than `limit` bytes is refused (65) after reading at most `limit + 1`.
    package static func read(limit: Int = StandardInput.limit) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Foundation.read(0, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw JobError.badInput("input-unreadable", "standard input could not be read")
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
            if bytes.count > limit {
                throw JobError.badInput("input-too-large", "standard input is larger than \(limit / 1024 / 1024) MiB; give the value itself, not a whole file")
            }
        }
    }
}
