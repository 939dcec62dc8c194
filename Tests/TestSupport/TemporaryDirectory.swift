import Foundation

/// A fresh directory under the system temp folder, removed when released.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init(_ label: String = "bj") {
        let base = NSTemporaryDirectory() + "\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = base
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// `name` inside this directory.
    package func file(_ name: String) -> String { path + "/" + name }
}
