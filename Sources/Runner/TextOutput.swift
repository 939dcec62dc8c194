import Foundation

/// Where a command's results go: stdout in the executable, a buffer in tests.
public protocol TextOutput: AnyObject, Sendable {
    func write(_ text: String)
}

/// The process's standard output.
public final class StandardOutput: TextOutput, @unchecked Sendable {
    public init() {}
    public func write(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
}

/// Collects output in memory (tests, and commands that render before printing).
public final class BufferedOutput: TextOutput, @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = ""
    public init() {}
    public func write(_ text: String) { lock.lock(); buffer += text; lock.unlock() }
    /// Everything written so far.
    public var text: String { lock.lock(); defer { lock.unlock() }; return buffer }
}
