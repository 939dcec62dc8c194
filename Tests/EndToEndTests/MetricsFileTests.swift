import Foundation
import Testing
import TestSupport

/// Metrics files node_exporter can read and scrape without label clashes, with outcomes, and honest last success.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct MetricsFileTests {
    let home = TemporaryDirectory("metrics")
    var store: String { home.file("store.sqlite") }
    var metrics: String { home.file("textfile") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    func prom(_ job: String) throws -> String { try String(contentsOfFile: metrics + "/\(job).prom", encoding: .utf8) }

    @Test func underAStrictUmaskTheFileIs0644LabelledJobNameWithAnOutcomeMetric() throws {
        let result = try ExternalTool.run("/bin/sh", ["-c", "umask 077; exec \"$0\" --store \"$1\" --metrics-dir \"$2\" maintain-store",
                                                      JobProcess.executablePath, store, metrics], environment: env, separateStderr: true)
        #expect(result.status == 0, "\(result.stderr)")
        let mode = try #require(FileManager.default.attributesOfItem(atPath: metrics + "/maintain-store.prom")[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o644)
        let text = try prom("maintain-store")
        #expect(!text.contains("{job="), "Prometheus would rename a `job` label to exported_job")
        #expect(text.contains("background_job_last_exit_code{job_name=\"maintain-store\"} 0"))
        #expect(text.contains("background_job_last_outcome{job_name=\"maintain-store\",outcome=\"completed\"} 1"))
        #expect(text.contains("background_job_last_outcome{job_name=\"maintain-store\",outcome=\"skipped\"} 0"))
        #expect(text.contains("background_job_last_outcome{job_name=\"maintain-store\",outcome=\"failed\"} 0"))
    }

    @Test func aSkippedPassDoesNotUpdateLastSuccess() throws {
        let skip = try JobProcess.run(["--store", store, "--metrics-dir", metrics, "pull-offers"], environment: env)
        #expect(skip.exitCode == 0)
        let text = try prom("pull-offers")
        #expect(text.contains("background_job_last_outcome{job_name=\"pull-offers\",outcome=\"skipped\"} 1"))
        #expect(!text.contains("background_job_last_success_timestamp_seconds"), "a skipped pass is no success: \(text)")
    }
}

/// mint-pool reports pool health: the UTC days, today included, its live pool still covers.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct PoolHealthMetricTests {
    let home = TemporaryDirectory("pool-health")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    @Test func mintPoolReportsDaysOfCredentialsLeftInItsResultAndMetrics() throws {
        #expect(try JobProcess.run(["--store", store, "identity", "new"], environment: env).exitCode == 0)
        #expect(try JobProcess.run(["--store", store, "settings", "set", "pool.size", "5"], environment: env).exitCode == 0)
        let mint = try JobProcess.run(["--store", store, "--metrics-dir", home.file("m"), "--now", "2027-01-10T12:00:00Z", "mint-pool", "--json"], environment: env)
        #expect(mint.exitCode == 0, "\(mint.stderr)")
        #expect((try mint.jsonObject()["counts"] as? [String: Any])?["days_left"] as? Int == 5)
        let prom = try String(contentsOfFile: home.file("m") + "/mint-pool.prom", encoding: .utf8)
        #expect(prom.contains("background_job_items{job_name=\"mint-pool\",kind=\"days_left\"} 5"))
        // Three days on, a dry run reports what the live pool still covers.
        let later = try JobProcess.run(["--store", store, "--now", "2027-01-13T12:00:00Z", "mint-pool", "--dry-run", "--json"], environment: env)
        #expect((try later.jsonObject()["counts"] as? [String: Any])?["days_left"] as? Int == 2)
    }
}
