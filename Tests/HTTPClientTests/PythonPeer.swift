import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Python test peer from `Tests/Peers/`, run by Debian's `/usr/bin/python3` (which has `python3-h2`;
/// the `python3` on PATH is pyenv's and does not).
///
/// Peers listen on 127.0.0.1 on a port the OS picks and announce it as the first stdout line
/// `PORT <n>`; `start` waits for that line (bounded). `stop()` ends the peer (SIGTERM, then SIGKILL after
/// a grace period) and returns what it printed after the port line. The peer's stdin is a pipe held
/// here: if this process dies, the pipe closes and the peer exits by itself.
///
/// Self-contained (Foundation and Glibc only) so it can move into a shared TestSupport target unchanged.
final class PythonPeer: @unchecked Sendable {
    // @unchecked: `pending`, `finalOutput` and the process and pipes are used only while `lock` is held (in `stop`).
    static let interpreter = "/usr/bin/python3"
    /// `Tests/Peers`, found relative to this source file (`Tests/<Target>/PythonPeer.swift`).
    static let peersDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Peers")

    enum PeerError: Error, CustomStringConvertible {
        case launchFailed(String)
        case noPortAnnounced(script: String, output: String)
        var description: String {
            switch self {
            case .launchFailed(let why): return "peer launch failed: \(why)"
            case .noPortAnnounced(let script, let output): return "\(script) announced no port; stdout: \(output)"
            }
        }
    }

    let script: String
    let port: Int
    private let process: Process
    private let stdinPipe: Pipe
    private let stdoutPipe: Pipe
    private let lock = NSLock()
    private var pending: [UInt8]
    private var finalOutput: String?

    private init(script: String, port: Int, process: Process, stdinPipe: Pipe, stdoutPipe: Pipe, pending: [UInt8]) {
        self.script = script
        self.port = port
        self.process = process
        self.stdinPipe = stdinPipe
        self.stdoutPipe = stdoutPipe
        self.pending = pending
    }

    /// Starts `Tests/Peers/<script>` with `arguments` and waits up to `startupTimeout` seconds for its port.
    static func start(_ script: String, arguments: [String] = [], startupTimeout: Double = 15) throws -> PythonPeer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: interpreter)
        process.arguments = ["-u", peersDirectory.appendingPathComponent(script).path] + arguments
        process.currentDirectoryURL = peersDirectory
        let stdinPipe = Pipe(), stdoutPipe = Pipe()
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        do { try process.run() } catch { throw PeerError.launchFailed("\(error)") }

        let fd = stdoutPipe.fileHandleForReading.fileDescriptor
        var buffer: [UInt8] = []
        let deadline = Date().addingTimeInterval(startupTimeout)
        while !buffer.contains(0x0A) {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                let output = String(decoding: buffer, as: UTF8.self)
                terminate(process)
                throw PeerError.noPortAnnounced(script: script, output: output)
            }
            // Nothing yet within a second: a loaded machine starts Python slowly; wait on until the deadline.
            guard let chunk = readAvailable(fd, waitMilliseconds: Int32(min(remaining, 1) * 1000)) else { continue }
            buffer += chunk
            if chunk.isEmpty, !process.isRunning, !buffer.contains(0x0A) {
                throw PeerError.noPortAnnounced(script: script, output: String(decoding: buffer, as: UTF8.self))
            }
        }
        let newline = buffer.firstIndex(of: 0x0A)!
        let line = String(decoding: buffer[..<newline], as: UTF8.self)
        guard line.hasPrefix("PORT "), let port = Int(line.dropFirst(5).trimmingCharacters(in: .whitespaces)) else {
            terminate(process)
            throw PeerError.noPortAnnounced(script: script, output: line)
        }
        return PythonPeer(script: script, port: port, process: process, stdinPipe: stdinPipe, stdoutPipe: stdoutPipe,
                          pending: Array(buffer[(newline + 1)...]))
    }

    /// `scheme://127.0.0.1:<port>`.
    func url(_ scheme: String = "http", host: String = "127.0.0.1", path: String = "/") -> String {
        "\(scheme)://\(host):\(port)\(path)"
    }

    /// Stops the peer (idempotent) and returns its stdout after the port line.
    @discardableResult
    func stop() -> String {
        lock.lock()
        defer { lock.unlock() }
        if let finalOutput { return finalOutput }
        PythonPeer.terminate(process)
        try? stdinPipe.fileHandleForWriting.close()
        // The peer has exited: whatever it wrote is in the pipe. Read without waiting for EOF, since a
        // peer started concurrently may have inherited the write end.
        let fd = stdoutPipe.fileHandleForReading.fileDescriptor
        while let chunk = PythonPeer.readAvailable(fd, waitMilliseconds: 0), !chunk.isEmpty { pending += chunk }
        try? stdoutPipe.fileHandleForReading.close()
        let output = String(decoding: pending, as: UTF8.self)
        finalOutput = output
        return output
    }

    deinit { stop() }

    private static func terminate(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Bytes readable on `fd` within the wait: nil on timeout, [] at end of file.
    private static func readAvailable(_ fd: Int32, waitMilliseconds: Int32) -> [UInt8]? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // poll(2) is never restarted after a signal handler ran ("EINTR … regardless of SA_RESTART", signal(7)),
        // and the SIGCHLD of another test's child process lands here too: an interrupted wait is waited again.
        var ready: Int32
        repeat { ready = poll(&poller, 1, waitMilliseconds) } while ready < 0 && errno == EINTR
        guard ready > 0 else { return nil }  // nothing within the wait
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
        return count > 0 ? Array(chunk[..<count]) : []
    }
}
