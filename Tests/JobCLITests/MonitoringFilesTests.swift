import Foundation
import Testing
import TestSupport

/// The alert rules and the dashboard that ship in docs/monitoring use the series the jobs write, and the
/// not-completed thresholds follow the generated timers.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct MonitoringFilesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let series = ["background_job_last_run_timestamp_seconds", "background_job_last_success_timestamp_seconds",
                         "background_job_duration_seconds", "background_job_last_exit_code", "background_job_last_outcome",
                         "background_job_items"]
    let home = TemporaryDirectory("monitoring")

    func text(_ path: String) throws -> String { try String(contentsOf: Self.repository.appendingPathComponent(path), encoding: .utf8) }

    /// Every `background_job_…` name in `text`.
    func seriesNames(in text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "background_job_[a-z_]+")
        return Set(regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range, in: text)!]) })
    }

    @Test func promtoolAcceptsTheAlertRules() throws {
        let promtool = "/usr/bin/promtool"
        try #require(FileManager.default.isExecutableFile(atPath: promtool), "promtool is missing: install Debian's prometheus package")
        let result = try ExternalTool.run(promtool, ["check", "rules", Self.repository.appendingPathComponent("docs/monitoring/alerts.yml").path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("SUCCESS: 6 rules found"))
    }

    @Test func theAlertsFireOnTheSeriesTheyAreFor() throws {
        let promtool = "/usr/bin/promtool"
        try #require(FileManager.default.isExecutableFile(atPath: promtool), "promtool is missing: install Debian's prometheus package")
        let result = try ExternalTool.run(promtool, ["test", "rules", Self.repository.appendingPathComponent("docs/monitoring/alerts.test.yml").path])
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func theRulesAndTheDashboardUseOnlySeriesTheJobsWrite() throws {
        let metrics = home.file("metrics")
        let pass = try JobProcess.run(["--store", home.file("s.sqlite"), "--metrics-dir", metrics, "maintain-store"], environment: JobProcess.environment(home: home.path))
        #expect(pass.exitCode == 0)
        let written = seriesNames(in: try String(contentsOfFile: metrics + "/maintain-store.prom", encoding: .utf8))
        #expect(written.isSubset(of: Set(Self.series)) && written.count >= 5, "the metrics file has \(written)")
        for file in ["docs/monitoring/alerts.yml", "docs/monitoring/grafana-dashboard.json"] {
            // The watcher's own series (background_job_watch_*) are checked against what it writes in HomeserverTests.
            let used = seriesNames(in: try text(file)).filter { !$0.hasPrefix("background_job_watch_") }
            #expect(!used.isEmpty)
            #expect(used.isSubset(of: Set(Self.series)), "\(file) uses series no job writes: \(used.subtracting(Self.series))")
        }
        let dashboard = try #require(try JSONSerialization.jsonObject(with: Data(try text("docs/monitoring/grafana-dashboard.json").utf8)) as? [String: Any])
        #expect(((dashboard["panels"] as? [[String: Any]]) ?? []).count >= 6)
    }

    @Test func everyTimedJobHasANotCompletedThresholdOfTwiceItsScheduleAndItsDelay() throws {
        let rules = try text("docs/monitoring/alerts.yml")
        let timers = try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("jobs").path).filter { $0.hasSuffix(".timer") }
        #expect(timers.count >= 10)
        for timer in timers {
            let job = String(timer.dropLast(".timer".count))
            let unit = try text("jobs/" + timer)
            let calendar = try #require(unit.split(separator: "\n").first { $0.hasPrefix("OnCalendar=") }).dropFirst("OnCalendar=".count)
            let delayLine = try #require(unit.split(separator: "\n").first { $0.hasPrefix("RandomizedDelaySec=") })
            let delay = try #require(Int(delayLine.dropFirst("RandomizedDelaySec=".count)))
            let fields = calendar.split(separator: " ")
            let interval: Int
            if fields[1].hasPrefix("*:00/") { interval = 60 * Int(fields[1].dropFirst(5).split(separator: ":")[0])! }
            else if fields[1].hasPrefix("*:") { interval = 3600 }
            else { interval = 86400 }
            let term = "background_job_last_success_timestamp_seconds{job_name=\"\(job)\"}) > \(2 * interval + delay)"
            #expect(rules.contains(term), "alerts.yml lacks `\(term)` for \(calendar)")
        }
    }
}
