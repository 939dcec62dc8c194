import Foundation

/// Next elapse times of the jobs' systemd timers, when systemd runs this machine (`/run/systemd/system`).
enum SystemdTimers {
    /// `job name → next run` as systemd prints it; empty without systemd or when `systemctl` fails.
    static func nextRuns(jobs: [String]) -> [String: String] {
        guard FileManager.default.fileExists(atPath: "/run/systemd/system"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/systemctl"), !jobs.isEmpty else { return [:] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/systemctl")
        process.arguments = ["show", "--property=Id,NextElapseUSecRealtime"] + jobs.map { "\($0).timer" }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [:] }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return parse(text)
    }

    /// Parses `systemctl show` output: blocks of `Key=Value` lines separated by blank lines.
    static func parse(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for block in text.components(separatedBy: "\n\n") {
            var id: String?
            var next: String?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("Id=") { id = String(line.dropFirst(3)) }
                if line.hasPrefix("NextElapseUSecRealtime=") { next = String(line.dropFirst("NextElapseUSecRealtime=".count)) }
            }
            if let id, id.hasSuffix(".timer"), let next, !next.isEmpty {
                result[String(id.dropLast(".timer".count))] = next
            }
        }
        return result
    }
}
