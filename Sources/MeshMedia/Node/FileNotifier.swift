import Foundation
import Runner

/// Raises the local notification for newly received files, as incoming offers do: each file stays new in
/// `job mesh files list` until exported, and `JOB_NOTIFY_COMMAND` (through `/bin/sh -c`), when set, runs with
/// `JOB_NOTIFY_KIND=received-file` and `JOB_NOTIFY_COUNT`. Nothing identifying is passed.
enum FileNotifier {
    static let timeoutSeconds = 10.0

    static func receivedFiles(count: Int, context: JobContext) {
        guard count > 0, let command = context.env("JOB_NOTIFY_COMMAND") else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        var environment = context.environment
        environment["JOB_NOTIFY_KIND"] = "received-file"
        environment["JOB_NOTIFY_COUNT"] = String(count)
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            context.logger.warn("notify-command-failed", ["reason": "cannot-start"])
            return
        }
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            context.logger.warn("notify-command-failed", ["reason": "timeout"])
        } else if process.terminationStatus != 0 {
            context.logger.warn("notify-command-failed", ["reason": "exit-status", "status": .int(process.terminationStatus)])
        }
    }
}
