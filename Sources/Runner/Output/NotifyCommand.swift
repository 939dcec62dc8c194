import Elapsed
import Foundation

/// Runs the local notification hook, `JOB_NOTIFY_COMMAND` (through `/bin/sh -c`), when something new arrived.
///
/// The command gets `JOB_NOTIFY_KIND` (what arrived, e.g. `incoming-offer`, `received-file`) and `JOB_NOTIFY_COUNT`,
/// and nothing identifying: it reads the listing commands if it wants more. It is given 10 seconds; a failure to
/// start, a timeout or a non-zero exit is logged as a warning and never fails the pass.
package enum NotifyCommand {
    /// How long the command may run before it is terminated.
    package static let timeoutSeconds = 10.0

    /// Runs the hook for `count` new items of `kind`; nothing when `count` is 0 or no command is set.
    package static func run(kind: String, count: Int, context: JobContext) {
        guard count > 0, let command = context.env("JOB_NOTIFY_COMMAND") else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        var environment = context.environment
        environment["JOB_NOTIFY_KIND"] = kind
        environment["JOB_NOTIFY_COUNT"] = String(count)
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            context.logger.warn("notify-command-failed", ["reason": "cannot-start"])
            return
        }
        let deadline = context.monotonic.deadline(in: timeoutSeconds)
        while process.isRunning && !context.monotonic.hasPassed(deadline) { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            context.logger.warn("notify-command-failed", ["reason": "timeout"])
        } else if process.terminationStatus != 0 {
            context.logger.warn("notify-command-failed", ["reason": "exit-status", "status": .int(process.terminationStatus)])
        }
    }
}
