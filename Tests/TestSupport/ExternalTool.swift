import Foundation
import Synchronization

/// Runs a system tool (systemd-analyze, script, unshare, openssl) to completion and returns its status and output.
package enum ExternalTool {
    /// What the tool printed (stdout and stderr together, unless `separateStderr`) and how it exited.
    package struct Result: Sendable {
        package let status: Int32
        package let output: String
        package let stderr: String
    }

    /// Runs `path arguments…`; with `separateStderr` the two streams are returned apart, else merged in `output`.
    @discardableResult
    package static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil, separateStderr: Bool = false) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        let out = Pipe()
        let err = separateStderr ? Pipe() : out
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read stderr on another thread when it is separate, so neither pipe can fill and block the tool.
        let errorText = ErrorText()
        let reader = separateStderr ? Thread {
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            errorText.value.withLock { $0 = text }
        } : nil
        reader?.start()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        while reader != nil && !(reader!.isFinished) { usleep(1_000) }
        return Result(status: process.terminationStatus, output: output, stderr: errorText.value.withLock { $0 })
    }

    private final class ErrorText: Sendable { let value = Mutex("") }
}
