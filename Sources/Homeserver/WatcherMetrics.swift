import Foundation

/// The watcher's counters since it started, and their `watch-syncthing.prom` file for node_exporter's textfile
/// collector (written atomically: a temporary name, then a rename). Counts only: no identifier ever.
struct WatcherMetrics {
    var eventsSeen = 0
    var changes = 0
    /// Changes that joined a wake-up already pending (one trigger for a burst).
    var debounced = 0
    var duplicates = 0
    /// Events of unwatched or paused folders and devices, and completions of peers in sync.
    var filtered = 0
    var triggersSent = 0
    var restartsDetected = 0
    var streamErrors = 0
    var answers: [TriggerSender.AnswerClass: Int] = [:]
    /// 1 while a wake-up is pending.
    var pending = 0

    /// The file's text: counters and gauges named `background_job_watch_*`, labelled `job_name="watch-syncthing"`.
    func render(now: Date) -> String {
        let label = "job_name=\"watch-syncthing\""
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            lines.append("# HELP background_job_watch_\(name) \(help)")
            lines.append("# TYPE background_job_watch_\(name) \(type)")
            for (labels, value) in samples { lines.append("background_job_watch_\(name){\(labels)} \(value)") }
        }
        metric("events_seen_total", "counter", "Syncthing events received.", [(label, "\(eventsSeen)")])
        metric("changes_total", "counter", "Events that were changes to wake the phone for.", [(label, "\(changes)")])
        metric("debounced_total", "counter", "Changes that joined a wake-up already pending.", [(label, "\(debounced)")])
        metric("duplicates_total", "counter", "Repeats of a change already seen.", [(label, "\(duplicates)")])
        metric("filtered_total", "counter", "Events of unwatched or paused folders or devices, or of peers in sync.", [(label, "\(filtered)")])
        metric("triggers_sent_total", "counter", "Wake-ups the relay accepted.", [(label, "\(triggersSent)")])
        metric("restarts_detected_total", "counter", "Syncthing restarts detected (the stream was subscribed again).", [(label, "\(restartsDetected)")])
        metric("stream_errors_total", "counter", "Event polls that failed.", [(label, "\(streamErrors)")])
        metric("relay_answers_total", "counter", "Relay answers to triggers, by class.",
               TriggerSender.AnswerClass.allCases.map { ("\(label),class=\"\($0.rawValue)\"", "\(answers[$0] ?? 0)") })
        metric("pending", "gauge", "1 while a wake-up is pending.", [(label, "\(pending)")])
        metric("updated_timestamp_seconds", "gauge", "When this file was written.", [(label, String(format: "%.3f", now.timeIntervalSince1970))])
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes `directory/watch-syncthing.prom`; false when the folder cannot be written.
    @discardableResult
    func write(to directory: String, now: Date) -> Bool {
        let final = (directory as NSString).appendingPathComponent("watch-syncthing.prom")
        let temporary = final + ".\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(render(now: now).utf8)), chmod(temporary, 0o644) == 0 else { return false }
        guard rename(temporary, final) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
