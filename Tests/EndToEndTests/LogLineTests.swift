import Foundation
import Testing
import TestSupport

/// What stderr carries: JSON lines throughout with `--log-format json`, durations and reasons on pass events,
/// failed doctor checks at error, metrics failures with a category, and sd-daemon priorities under the journal.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct LogLineTests {
    let home = TemporaryDirectory("logs")
    var env: [String: String] { JobProcess.environment(home: home.path) }
    var store: String { home.file("store.sqlite") }

    func jsonLines(_ stderr: String) throws -> [[String: Any]] {
        try stderr.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    @Test func withJSONLogsEveryStderrLineIsAJSONObjectUsageAndFailureLinesIncluded() throws {
        let usage = try JobProcess.run(["--log-format", "json", "--store", store, "nosuchcommand"], environment: env)
        #expect(usage.exitCode == 64)
        let usageLines = try jsonLines(usage.stderr)
        #expect(usageLines.count == 1)
        #expect(usageLines.first?["event"] as? String == "command.failed")
        #expect(usageLines.first?["category"] as? String == "usage")
        #expect((usageLines.first?["usage"] as? String)?.hasPrefix("Usage: job ") == true)

        try Data("not a database".utf8).write(to: URL(fileURLWithPath: home.file("bad.sqlite")))
        let failed = try JobProcess.run(["--log-format", "json", "--store", home.file("bad.sqlite"), "maintain-store"], environment: env)
        #expect(failed.exitCode == 73)
        let lines = try jsonLines(failed.stderr)
        #expect(lines.last?["event"] as? String == "command.failed")
        #expect(lines.last?["job"] as? String == "maintain-store")
        #expect(lines.last?["exit_code"] as? Int == 73)

        let nonUTF8 = try ExternalTool.run("/bin/sh", ["-c", "exec \"$0\" --log-format json --store \"$(printf 'a\\377')\" list", JobProcess.executablePath],
                                           environment: env, separateStderr: true)
        #expect(nonUTF8.status == 64)
        #expect(try jsonLines(nonUTF8.stderr).count == 1)
    }

    @Test func passEventsCarryDurationAndEverySkipItsReason() throws {
        let pass = try JobProcess.run(["--log-format", "json", "--store", store, "maintain-store"], environment: env)
        #expect(pass.exitCode == 0)
        let completed = try #require(try jsonLines(pass.stderr).first { $0["event"] as? String == "pass.completed" })
        #expect(completed["duration_ms"] is Int)
        let skip = try JobProcess.run(["--log-format", "json", "--store", store, "pull-offers"], environment: env)
        #expect(skip.exitCode == 0)
        let skipped = try #require(try jsonLines(skip.stderr).first { $0["event"] as? String == "pass.skipped" })
        #expect(skipped["reason"] as? String == "disabled")
        #expect(skipped["duration_ms"] is Int)
    }

    @Test func aFailedDoctorCheckLogsAtErrorAndAMetricsFailureCarriesACategory() throws {
        let doctor = try JobProcess.run(["--log-format", "json", "--store", store, "--metrics-dir", home.file("nope"), "doctor"],
                                        environment: env.merging(["JOB_METRICS_DIR": home.file("nope")]) { $1 })
        let check = try #require(try jsonLines(doctor.stderr).first { $0["event"] as? String == "doctor.check" && $0["check"] as? String == "metrics-dir" })
        #expect(check["status"] as? String == "FAIL")
        #expect(check["level"] as? String == "error")

        try Data("a file, not a folder".utf8).write(to: URL(fileURLWithPath: home.file("file")))
        let pass = try JobProcess.run(["--log-format", "json", "--store", store, "--metrics-dir", home.file("file") + "/sub", "maintain-store"], environment: env)
        let failed = try #require(try jsonLines(pass.stderr).first { $0["event"] as? String == "metrics.write_failed" })
        #expect(failed["category"] as? String == "metrics-dir-unavailable")
    }

    @Test func whenStderrIsTheJournalEachLineStartsWithItsSyslogPriority() throws {
        let captured = home.file("journal.txt")
        #expect(FileManager.default.createFile(atPath: captured, contents: nil))
        let attributes = try FileManager.default.attributesOfItem(atPath: captured)
        let stream = "\(try #require(attributes[.systemNumber] as? Int)):\(try #require(attributes[.systemFileNumber] as? Int))"
        let script = "exec \"$0\" --store \"$1\" \"$2\" 2>>\"$3\""
        for command in ["maintain-store", "nosuchjob"] {
            _ = try ExternalTool.run("/bin/sh", ["-c", script, JobProcess.executablePath, store, command, captured],
                                     environment: env.merging(["JOURNAL_STREAM": stream]) { $1 })
        }
        let lines = try String(contentsOfFile: captured, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("<6>ts=") && $0.contains("event=pass.completed") })
        #expect(lines.contains { $0.hasPrefix("<3>job: unknown command 'nosuchjob'") })
        #expect(lines.allSatisfy { $0.hasPrefix("<") }, "\(lines)")

        // A JOURNAL_STREAM naming another file (stderr redirected elsewhere) adds no prefix.
        let other = try JobProcess.run(["--store", store, "maintain-store"], environment: env.merging(["JOURNAL_STREAM": stream]) { $1 })
        #expect(other.stderr.hasPrefix("ts="))
    }
}
