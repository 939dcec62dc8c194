import Foundation
import Testing
import TestSupport

/// Bad `--now` values and out-of-range stored settings are refused with their exit code before a pass writes anything.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct StrictInputTests {
    let home = TemporaryDirectory("strict")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    @Test func nowIsRFC3339ExactlyAndImpossibleOrOutOfRangeInstantsExit64BeforeTheStoreIsTouched() throws {
        let refused = ["2026-02-30T00:00:00Z", "2026-03-01T24:00:00Z", "2026-3-1T00:00:00Z", "2026-03-01T00:00:00Z junk",
                       "2026-03-01T00:00:00+99:00", "2026-03-01T00:00:00", "2026-03-01 00:00:00Z", "@0x10", "@1e9", "@-1",
                       "@9223372036854775", "@ 10", "1969-12-31T23:59:59Z", "2025-02-29T00:00:00Z"]
        for value in refused {
            let result = try JobProcess.run(["--store", store, "--now", value, "maintain-store"], environment: env)
            #expect(result.exitCode == 64, "\(value): \(result.stderr)")
            #expect(result.stderr.hasPrefix("job: --now takes an RFC 3339 time"), "\(value)")
        }
        #expect(!FileManager.default.fileExists(atPath: store), "a refused --now leaves no store, lease or ledger row")
    }

    @Test func nowWithNonUTF8BytesExits64() throws {
        let script = "exec \"$0\" --store \"$1\" --now \"$(printf '2026-03-01T00:00:00\\377Z')\" maintain-store"
        let result = try ExternalTool.run("/bin/sh", ["-c", script, JobProcess.executablePath, store], environment: env, separateStderr: true)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    @Test func nowAcceptsALeapSecondOffsetsAndLeapDays() throws {
        for value in ["2026-12-31T23:59:60Z", "2028-02-29T12:00:00.250+02:00", "2026-03-01t00:00:00z", "@1772323200.5"] {
            let result = try JobProcess.run(["--store", store, "--now", value, "maintain-store"], environment: env)
            #expect(result.exitCode == 0, "\(value): \(result.stderr)")
        }
    }

    @Test func anOutOfRangeStoredSettingExits78NamingItAndThePassDoesNotLoop() throws {
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        for (key, value) in [("runs.prune-batch-size", "0"), ("runs.retention-days", "9223372036854775807"), ("runs.retention-days", "soon")] {
            let write = try ExternalTool.run("/usr/bin/sqlite3", [store, "INSERT OR REPLACE INTO settings (key, value, updated_at) VALUES ('\(key)', '\(value)', 0)"])
            #expect(write.status == 0, "\(write.output)")
            let pass = try JobProcess.run(["--store", store, "maintain-store"], environment: env, timeout: 20)
            #expect(pass.exitCode == 78, "\(key)=\(value): \(pass.stderr)")
            #expect(pass.stderr.contains("setting \(key)"), "\(pass.stderr)")
            let get = try JobProcess.run(["--store", store, "settings", "get", key], environment: env)
            #expect(get.exitCode == 78, "settings get reports the bad stored value too: \(get.stderr)")
            #expect(try JobProcess.run(["--store", store, "settings", "unset", key], environment: env).exitCode == 0, "unset repairs it")
        }
        #expect(try JobProcess.run(["--store", store, "maintain-store"], environment: env).exitCode == 0)
    }
}
