import Foundation

/// Writes `DIR/<job>.prom` for node_exporter's textfile collector (docs/design.md §6), atomically (temp file + rename).
package struct MetricsWriter {
    package let directory: String

    package init(directory: String) { self.directory = directory }

    /// The file's content for one finished pass.
    static func render(job: String, outcome: JobResult.Outcome, finishedAt: Date, lastSuccess: Date?, durationSeconds: Double,
                       exitCode: ExitCode, counts: Counts) -> String {
        // Not `job`: Prometheus sets that label to the scrape job, and a clash renames ours to `exported_job`.
        let label = "job_name=\"\(escape(job))\""
        var lines: [String] = []
        func gauge(_ name: String, _ help: String, _ samples: [(String, String)]) {
            lines.append("# HELP background_job_\(name) \(help)")
            lines.append("# TYPE background_job_\(name) gauge")
            for (labels, value) in samples { lines.append("background_job_\(name){\(labels)} \(value)") }
        }
        gauge("last_run_timestamp_seconds", "When the last pass finished.", [(label, seconds(finishedAt))])
        if let lastSuccess {
            gauge("last_success_timestamp_seconds", "When the last pass that completed (not skipped) finished.", [(label, seconds(lastSuccess))])
        }
        gauge("duration_seconds", "How long the last pass took.", [(label, String(format: "%.3f", durationSeconds))])
        gauge("last_exit_code", "Exit code of the last pass.", [(label, String(exitCode.rawValue))])
        gauge("last_outcome", "1 for the last pass's outcome, 0 for the others.",
              JobResult.Outcome.allCases.map { ("\(label),outcome=\"\($0.rawValue)\"", $0 == outcome ? "1" : "0") })
        if !counts.entries.isEmpty {
            gauge("items", "Items the last pass handled, by kind.", counts.entries.map { ("\(label),kind=\"\(escape($0.key))\"", String($0.value)) })
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes the metrics file for a pass.
    func write(job: String, outcome: JobResult.Outcome, finishedAt: Date, lastSuccess: Date?, durationSeconds: Double, exitCode: ExitCode, counts: Counts) throws {
        let text = MetricsWriter.render(job: job, outcome: outcome, finishedAt: finishedAt, lastSuccess: lastSuccess, durationSeconds: durationSeconds, exitCode: exitCode, counts: counts)
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw JobError.configuration("metrics-dir-unavailable", "cannot create the metrics directory; check its parent exists and is writable")
        }
        let final = (directory as NSString).appendingPathComponent("\(job).prom")
        // The collector reads *.prom only, so the temporary name never gets scraped half-written.
        let temporary = final + ".\(getpid()).tmp"
        // 0644 whatever the unit's UMask: node_exporter runs as another user and must read the file.
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8)), chmod(temporary, 0o644) == 0 else {
            throw JobError.configuration("metrics-dir-unwritable", "cannot write to the metrics directory; check it exists and is writable")
        }
        guard rename(temporary, final) == 0 else {
            unlink(temporary)
            throw JobError.configuration("metrics-dir-unwritable", "cannot write to the metrics directory; check it exists and is writable")
        }
    }

    private static func seconds(_ date: Date) -> String { String(format: "%.3f", date.timeIntervalSince1970) }
    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
