import CShims
import Foundation

/// What the `job` executable does first, before it parses anything.
package enum ProcessStart {
    /// Makes SIGTERM and SIGINT exit 75 at once until a pass installs its own handlers (which finish the batch).
    /// Without this a signal in the first milliseconds (store open, migrations) killed the process uncounted.
    package static func exitOnTerminationUntilAPassBegins() { shim_install_early_exit_handlers() }

    /// Arguments that are not valid UTF-8, by position (1-based), read from the raw `argv`: Swift's
    /// `CommandLine.arguments` silently replaces such bytes, which would turn a path or time into another one.
    package static func nonUTF8ArgumentPositions() -> [Int] {
        (1..<Int(CommandLine.argc)).filter { index in
            guard let pointer = CommandLine.unsafeArgv[index] else { return false }
            let raw = UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
            return !Array(String(decoding: raw, as: UTF8.self).utf8).elementsEqual(raw)
        }
    }

    /// Environment variables naming a path or time (`JOB_STORE`, `JOB_NOW`, …) whose value is not valid UTF-8.
    package static func nonUTF8Environment(_ names: [String]) -> [String] {
        names.filter { name in
            guard let pointer = getenv(name) else { return false }
            let raw = UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
            return !Array(String(decoding: raw, as: UTF8.self).utf8).elementsEqual(raw)
        }
    }
}
