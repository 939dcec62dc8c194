import Foundation
import Testing
@testable import Homeserver

/// The watcher's series that docs/monitoring uses (the alert rules and the dashboard) are ones it writes.
@Suite(.timeLimit(.minutes(15))) struct WatcherMonitoringTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every `background_job_watch_…` name in `text`.
    func names(in text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "background_job_watch_[a-z_]+")
        return Set(regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range, in: text)!]) })
    }

    @Test func theAlertsAndTheDashboardUseOnlyWatcherSeriesTheWatcherWrites() throws {
        let written = names(in: WatcherMetrics().render(now: Date()))
        var used = Set<String>()
        for file in ["docs/monitoring/alerts.yml", "docs/monitoring/grafana-dashboard.json"] {
            let inFile = names(in: try String(contentsOf: Self.repository.appendingPathComponent(file), encoding: .utf8))
            #expect(inFile.isSubset(of: written), "\(file) uses watcher series it never writes: \(inFile.subtracting(written))")
            used.formUnion(inFile)
        }
        #expect(used.contains("background_job_watch_updated_timestamp_seconds"), "the watcher-down alert and the heartbeat panel")
        #expect(used.contains("background_job_watch_triggers_sent_total") && used.contains("background_job_watch_relay_answers_total"))
    }
}
