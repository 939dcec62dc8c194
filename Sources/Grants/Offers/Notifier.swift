import Foundation
import Runner

/// Raises the local notification for new incoming offers: the `notifications` row is written with the offer; this
/// also runs `JOB_NOTIFY_COMMAND` (through `/bin/sh -c`) when set, with `JOB_NOTIFY_KIND=incoming-offer` and
/// `JOB_NOTIFY_COUNT`. Nothing identifying is passed; the command reads `job offers list` if it wants more.
enum Notifier {
    static let timeoutSeconds = 10.0

    static func incomingOffers(count: Int, context: JobContext) {
        guard count > 0, let command = context.env("JOB_NOTIFY_COMMAND") else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        var environment = context.environment
        environment["JOB_NOTIFY_KIND"] = "incoming-offer"
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
