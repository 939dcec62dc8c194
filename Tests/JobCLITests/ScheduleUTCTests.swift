import Foundation
import Testing
import TestSupport
@testable import JobCLI
@testable import Runner

/// Schedules are UTC for real, and the crontab is grouped by role, logs where it says and is rotated.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ScheduleUTCTests {
    func file(_ path: String) throws -> String { try String(contentsOfFile: DeploymentTests.root + "/" + path, encoding: .utf8) }

    @Test func everyTimerSaysUTCAndSystemdReadsItSo() throws {
        let timers = try FileManager.default.contentsOfDirectory(atPath: DeploymentTests.root + "/jobs").filter { $0.hasSuffix(".timer") }
        #expect(timers.count >= 11)
        var expressions: [String] = []
        for timer in timers {
            let line = try #require(try file("jobs/" + timer).split(separator: "\n").first { $0.hasPrefix("OnCalendar=") })
            #expect(line.hasSuffix(" UTC"), "\(timer): \(line)")
            expressions.append(String(line.dropFirst("OnCalendar=".count)))
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let result = try ExternalTool.run("/usr/bin/systemd-analyze", ["calendar"] + expressions, environment: ["TZ": "America/New_York"])
        #expect(result.status == 0, "\(result.output)")
        let normalized = result.output.split(separator: "\n").filter { $0.contains("Normalized form:") }
        #expect(normalized.count == expressions.count)
        #expect(normalized.allSatisfy { $0.hasSuffix(" UTC") }, "\(normalized)")
    }

    @Test func theCrontabGroupsJobsByRoleWithOnlyTheCommonRoleActiveAndLogsWhereItSays() throws {
        let text = try file("crontab.example")
        #expect(text.contains("Debian's cron ignores CRON_TZ"))
        let jobs = ["maintain-store", "sweep-grants", "pull-offers", "mint-pool", "prefetch", "retrigger-stale", "send-wakeups",
                    "clean-tokens", "media-outbox", "media-inbox", "media-alias-check"]
        let lines = text.split(separator: "\n").map(String.init)
        for job in jobs {
            let matching = lines.filter { $0.contains("/usr/local/bin/job \(job) ") }
            #expect(matching.count == 1, "\(job)")
            #expect(matching.first?.hasPrefix("#") == (job != "maintain-store"), "\(job): only the every-machine role is active")
            #expect(matching.first?.hasSuffix(">>\(Deployment.cronLog) 2>&1") == true)
        }
        for role in ["# grant node", "# homeserver", "# relay", "# mesh"] { #expect(text.contains(role)) }
        #expect(text.contains("Logs go to \(Deployment.cronLog)"))
        #expect(try file("jobs/background-jobs.logrotate").contains("\(Deployment.cronLog) {"))
    }
}

/// The units and the shipped snippets set up a textfile folder the dynamic user can write and node_exporter read.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct TextfileFolderTests {
    func file(_ path: String) throws -> String { try String(contentsOfFile: DeploymentTests.root + "/" + path, encoding: .utf8) }

    @Test func everyServiceWritesMetricsWhereTheTmpfilesSnippetGrantsItsGroupWriteAccess() throws {
        let services = try FileManager.default.contentsOfDirectory(atPath: DeploymentTests.root + "/jobs")
            .filter { $0.hasSuffix(".service") && !$0.hasPrefix("serve-") }   // the servers run no passes
        #expect(services.count >= 11)
        for service in services {
            let text = try file("jobs/" + service)
            #expect(text.contains("Environment=JOB_METRICS_DIR=/var/lib/prometheus/node-exporter\n"), "\(service)")
            #expect(text.contains("SupplementaryGroups=background-jobs-metrics\n"), "\(service)")
            #expect(text.contains("ReadWritePaths=-/var/lib/prometheus/node-exporter\n"), "\(service)")
        }
        #expect(try file("jobs/background-jobs.sysusers.conf").contains("\ng background-jobs-metrics -\n"))
        #expect(try file("jobs/background-jobs.tmpfiles.conf").contains("\na+ /var/lib/prometheus/node-exporter - - - - group:background-jobs-metrics:rwx"))
    }
}
