import Foundation

/// A loopback test peer run by Debian's `/usr/bin/python3` from `Tests/Peers/`: started, its
/// `PORT <n>` line awaited, and killed (by its own pid) when stopped or released.
package final class PeerProcess {
    package static let python = "/usr/bin/python3"
    package static var peersDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Peers").path
    }

    package let process = Process()
    package let port: Int
    private let outFile: String
    private let errFile: String

    package init(script: String, arguments: [String], directory: TemporaryDirectory, timeout: TimeInterval = 15) throws {
        outFile = directory.file("\(script).\(UUID().uuidString.prefix(6)).out")
        errFile = outFile + ".err"
        _ = FileManager.default.createFile(atPath: outFile, contents: nil)
        _ = FileManager.default.createFile(atPath: errFile, contents: nil)
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = ["-u", Self.peersDirectory + "/" + script] + arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outFile))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errFile))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        var found: Int?
        while found == nil && Date() < deadline && process.isRunning {
            let text = (try? String(contentsOfFile: outFile, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) { found = Int(line.dropFirst(5)) }
            else { usleep(20_000) }
        }
        guard let found else {
            let stderr = (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? ""
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw TestFailure("peer \(script) did not start: \(stderr)")
        }
        port = found
    }

    package var stderr: String { (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? "" }

    /// Kills the peer (SIGKILL: a stand-in holds nothing worth a clean shutdown, and a test process may
    /// hand its children a blocked SIGTERM) and reaps it.
    package func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

/// A loopback port nothing listens on (bound, read, closed).
package func unusedPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}
