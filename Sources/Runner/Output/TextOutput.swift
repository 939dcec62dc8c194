import Foundation
import Synchronization

/// Where a command's results go: stdout in the executable, a buffer in tests.
public protocol TextOutput: AnyObject, Sendable {
    func write(_ text: String)
}

/// The process's standard output.
public final class StandardOutput: TextOutput, Sendable {
    public init() {}
    public func write(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
}

/// Collects output in memory (tests, and commands that render before printing).
public final class BufferedOutput: TextOutput, Sendable {
    private let buffer = Mutex("")
    public init() {}
    public func write(_ text: String) { buffer.withLock { $0 += text } }
    /// Everything written so far.
    public var text: String { buffer.withLock { $0 } }
}
