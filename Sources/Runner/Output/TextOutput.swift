import Foundation
import Synchronization

/// Where a command's results go: stdout in the executable, a buffer in tests.
package protocol TextOutput: AnyObject, Sendable {
    func write(_ text: String)
}

/// The process's standard output.
package final class StandardOutput: TextOutput, Sendable {
    package init() {}
    package func write(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
}

/// Collects output in memory (tests, and commands that render before printing).
package final class BufferedOutput: TextOutput, Sendable {
    private let buffer = Mutex("")
    package init() {}
    package func write(_ text: String) { buffer.withLock { $0 += text } }
    /// Everything written so far.
    package var text: String { buffer.withLock { $0 } }
}
