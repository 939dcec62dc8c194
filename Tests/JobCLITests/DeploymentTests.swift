import Foundation
import Testing
import TestSupport
@testable import JobCLI
@testable import Runner

/// The repository's `jobs/` and `crontab.example` are exactly what the job table renders.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct DeploymentTests {
    /// The repository root, found from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The catalog the executable builds (main.swift's modules), rendered through the real binary.
    func renderedFiles() throws -> [String: String] {
        let out = TemporaryDirectory("deploy")
        let result = try JobProcess.run(["deployment", "--write", out.path], environment: JobProcess.environment(home: out.path))
        guard result.exitCode == 0 else { throw TestFailure(result.stderr) }
        var files: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: out.path)!
        while let relative = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: out.path + "/" + relative, isDirectory: &isDirectory)
            if !isDirectory.boolValue { files[relative] = try String(contentsOfFile: out.path + "/" + relative, encoding: .utf8) }
        }
        return files
    }

    @Test func everyJobHasAServiceATimerAndACrontabLineInTheRepository() throws {
        let rendered = try renderedFiles()
        #expect(rendered.count > 3)
        for (path, content) in rendered {
            let committed = try? String(contentsOfFile: DeploymentTests.root + "/" + path, encoding: .utf8)
            #expect(committed == content, "\(path) is missing or stale: run `swift run job deployment --write .` and commit")
        }
    }

    @Test func noUnitInTheRepositoryNamesAJobThatNoLongerExists() throws {
        let rendered = Set(try renderedFiles().keys)
        let units = try FileManager.default.contentsOfDirectory(atPath: DeploymentTests.root + "/jobs")
            .filter { $0.hasSuffix(".service") || $0.hasSuffix(".timer") }
            .filter { !$0.hasPrefix("serve-link") && !$0.hasPrefix("serve-relay") }  // socket-activated, shipped by hand with their .socket
        for unit in units { #expect(rendered.contains("jobs/" + unit), "jobs/\(unit) has no job") }
    }

    /// cron users get every service systemd users get: a pass's schedule, or a server's `@reboot` line on the address
    /// its socket unit listens on.
    @Test func everyServiceInTheRepositoryHasACrontabLine() throws {
        let crontab = try String(contentsOfFile: DeploymentTests.root + "/crontab.example", encoding: .utf8)
        let lines = crontab.split(separator: "\n").filter { !$0.hasPrefix("# ") && $0.contains(Deployment.executable + " ") }
        let services = try FileManager.default.contentsOfDirectory(atPath: DeploymentTests.root + "/jobs").filter { $0.hasSuffix(".service") }
        #expect(services.count > 11)
        for service in services {
            let command = String(service.dropLast(".service".count))
            #expect(lines.contains { $0.contains(" \(Deployment.executable) \(command) ") }, "jobs/\(service) has no line in crontab.example")
        }
        #expect(lines.contains { $0.hasPrefix("#@reboot  \(Deployment.executable) serve-link --listen 0.0.0.0:47100 ") })
        #expect(lines.contains { $0.hasPrefix("#@reboot  \(Deployment.executable) serve-relay --listen 127.0.0.1:8480 ") })
    }

    @Test func systemdAcceptsTheUnits() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let rendered = try renderedFiles()
        let work = TemporaryDirectory("units")
        // systemd-analyze checks that ExecStart exists: point the copies at the binary under test.
        for (path, content) in rendered where path.hasPrefix("jobs/") && (path.hasSuffix(".service") || path.hasSuffix(".timer")) {
            let name = (path as NSString).lastPathComponent
            try content.replacingOccurrences(of: Deployment.executable, with: JobProcess.executablePath)
                .write(toFile: work.file(name), atomically: true, encoding: .utf8)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: work.path).sorted()
        let result = try ExternalTool.run("/usr/bin/systemd-analyze", ["verify", "--man=no"] + names.map { work.file($0) }, separateStderr: true)
        let text = result.stderr
        // Lines about the host (no running systemd in a container) are not about the units.
        let problems = text.split(separator: "\n").filter { line in
            names.contains { line.contains($0) } && !line.contains("Failed to")
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(result.status == 0 || problems.isEmpty, "\(text)")
    }

    /// Every unit that points passes at node_exporter's folder (generated or hand-written, serve-relay.service
    /// included: the passes it starts write there) joins the group that may write it.
    @Test func everyUnitWritingMetricsJoinsTheMetricsGroup() throws {
        var units = try renderedFiles().filter { $0.key.hasSuffix(".service") }
        for name in ["serve-relay.service", "serve-link.service"] {
            units["jobs/" + name] = try String(contentsOfFile: DeploymentTests.root + "/jobs/" + name, encoding: .utf8)
        }
        let writers = units.filter { $0.value.contains("JOB_METRICS_DIR=/var/lib/prometheus/node-exporter") }
        #expect(writers.keys.contains("jobs/serve-relay.service"))
        let missing = writers.filter { !$0.value.contains("\nSupplementaryGroups=background-jobs-metrics\n") }.keys.sorted()
        #expect(missing.isEmpty, "units without the metrics group: \(missing)")
    }

    /// Every service, generated or written by hand, is sandboxed to an exposure of at most 2.0 by systemd's own measure.
    @Test func everyServiceIsSandboxedToAnExposureOfAtMostTwo() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let rendered = try renderedFiles()
        let work = TemporaryDirectory("security")
        var units: [String: String] = [:]
        for (path, content) in rendered where path.hasPrefix("jobs/") && path.hasSuffix(".service") { units[(path as NSString).lastPathComponent] = content }
        for server in ["serve-relay.service", "serve-link.service"] {
            units[server] = try String(contentsOfFile: DeploymentTests.root + "/jobs/" + server, encoding: .utf8)
        }
        let committed = try FileManager.default.contentsOfDirectory(atPath: DeploymentTests.root + "/jobs").filter { $0.hasSuffix(".service") }
        #expect(units.count == committed.count && units.count >= 13, "every service in jobs/ is checked")
        for (name, content) in units.sorted(by: { $0.key < $1.key }) {
            try content.replacingOccurrences(of: Deployment.executable, with: JobProcess.executablePath).write(toFile: work.file(name), atomically: true, encoding: .utf8)
            // --threshold is in tenths of the exposure shown (its scale is 0–100): 20 is an exposure of 2.0.
            let result = try ExternalTool.run("/usr/bin/systemd-analyze", ["security", "--offline=yes", "--threshold=20", "--no-pager", work.file(name)], separateStderr: true)
            let overall = result.output.split(separator: "\n").first { $0.contains("Overall exposure level") } ?? ""
            #expect(result.status == 0, "\(name): \(overall) \(result.stderr)")
            #expect(!overall.isEmpty, "\(name): no exposure reported: \(result.output.suffix(300)) \(result.stderr)")
        }
    }

    /// The hand-written relay API units (socket activation on loopback, the service it starts) pass systemd's own checks.
    @Test func systemdAcceptsTheServeRelaySocketAndService() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let work = TemporaryDirectory("relay-units")
        for name in ["serve-relay.socket", "serve-relay.service"] {
            let text = try String(contentsOfFile: DeploymentTests.root + "/jobs/" + name, encoding: .utf8)
            try text.replacingOccurrences(of: Deployment.executable, with: JobProcess.executablePath).write(toFile: work.file(name), atomically: true, encoding: .utf8)
        }
        let socket = try String(contentsOfFile: work.file("serve-relay.socket"), encoding: .utf8)
        #expect(socket.contains("ListenStream=127.0.0.1:"), "the API socket listens on loopback only; nginx is the public side")
        let result = try ExternalTool.run("/usr/bin/systemd-analyze", ["verify", "--man=no", work.file("serve-relay.socket"), work.file("serve-relay.service")],
                                          separateStderr: true)
        let problems = result.stderr.split(separator: "\n").filter { $0.contains("serve-relay") && !$0.contains("Failed to") }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// The hand-written PostgreSQL drop-in (`jobs/relay-postgresql.conf`) passes systemd's checks on every relay unit,
    /// credentials specifier (`%d`) included; a broken copy is reported, so the drop-in is really read.
    @Test func systemdAcceptsThePostgreSQLDropInOnEveryRelayUnit() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let rendered = try renderedFiles()
        let dropIn = try String(contentsOfFile: DeploymentTests.root + "/jobs/relay-postgresql.conf", encoding: .utf8)
        #expect(dropIn.contains("Environment=JOB_STORE=service=relay PGSERVICEFILE=%d/pg-service PGPASSFILE=%d/pgpass\n"))
        func verify(_ dropIn: String) throws -> [Substring] {
            let work = TemporaryDirectory("relay-dropin")
            var units: [String: String] = ["serve-relay.socket": "", "serve-relay.service": ""]
            for name in units.keys { units[name] = try String(contentsOfFile: DeploymentTests.root + "/jobs/" + name, encoding: .utf8) }
            for name in ["send-wakeups.service", "clean-tokens.service", "maintain-store.service"] { units[name] = rendered["jobs/" + name] }
            for (name, text) in units {
                try text.replacingOccurrences(of: Deployment.executable, with: JobProcess.executablePath).write(toFile: work.file(name), atomically: true, encoding: .utf8)
                guard name.hasSuffix(".service") else { continue }
                try FileManager.default.createDirectory(atPath: work.file(name + ".d"), withIntermediateDirectories: true)
                try dropIn.write(toFile: work.file(name + ".d/postgresql.conf"), atomically: true, encoding: .utf8)
            }
            var environment = ProcessInfo.processInfo.environment
            environment["SYSTEMD_UNIT_PATH"] = work.path + ":"
            let services = units.keys.filter { $0.hasSuffix(".service") }.sorted()
            let result = try ExternalTool.run("/usr/bin/systemd-analyze", ["verify", "--man=no"] + services.map { work.file($0) },
                                              environment: environment, separateStderr: true)
            return result.stderr.split(separator: "\n").filter { $0.contains("postgresql.conf") || ($0.contains(".service") && !$0.contains("Failed to")) }
        }
        let problems = try verify(dropIn)
        #expect(problems.isEmpty, "\(problems)")
        let broken = try verify(dropIn.replacingOccurrences(of: "%d/pgpass", with: "%Z/pgpass"))
        #expect(broken.contains { $0.contains("postgresql.conf") }, "systemd-analyze did not read the drop-in")
    }
}
