import Foundation
import HTTPClient
import HTTPServer

/// `watch`: `job watch-syncthing` between a real Syncthing (Debian's `/usr/bin/syncthing`, loopback only) and an
/// in-process relay stand-in that stamps each trigger's arrival.
///
/// Latency: for each of `--changes` changes (default 50), a file is written into the watched folder and Syncthing is
/// asked to rescan it; the time from the write to the trigger arriving is recorded. The watcher runs with
/// `DEBOUNCE_SECONDS=1`, so the overhead above the debounce is latency − 1 s (it includes Syncthing's own scan and
/// index update, which the watcher cannot make faster). Idle cost: with nothing changing for `--idle-seconds`
/// (default 30), the watcher's CPU time over wall time (`/proc/PID/stat`) and its largest resident set
/// (`/proc/PID/status` VmRSS, sampled every second); then that resident set's anonymous and file-backed parts, its
/// PSS, and its high-water mark since start (VmHWM: what starting touched, before the watcher gave it back).
enum WatchBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var changes = 50
        var idleSeconds = 30
        var jobPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("job").path
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--changes": changes = try BenchOption.integer(&rest, "--changes", in: 2...1000)
            case "--idle-seconds": idleSeconds = try BenchOption.integer(&rest, "--idle-seconds", in: 5...600)
            case "--job":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--job needs a path") }
                jobPath = value
            case "--help", "-h":
                print("usage: job-bench watch [--changes N] [--idle-seconds S] [--job PATH]")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/syncthing") else { throw BenchUsageError(message: "needs Debian's syncthing package") }
        guard FileManager.default.isExecutableFile(atPath: jobPath) else { throw BenchUsageError(message: "no job executable at the given path") }

        let scratch = try DiskScratch.make("watch", base: nil)  // a real disk, never tmpfs
        let folder = scratch.path
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // The relay stand-in: every trigger's arrival, monotonic.
        let arrivals = Arrivals()
        let socket = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        let server = try HTTPServer(socket: socket, limits: HTTPServerLimits(threads: 2)) { request in
            if request.path == "/api/v1/trigger" {
                arrivals.add(now())
                return .json(202, #"{"status":"accepted","devices_notified":1}"#)
            }
            return .json(200, #"{"status":"ok","version":"bench"}"#)
        }
        defer { server.stop() }

        let syncthing = try BenchSyncthing(home: folder + "/st", vault: folder + "/vault")
        defer { syncthing.stop() }
        try syncthing.start()

        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: jobPath)
        watcher.arguments = ["--store", folder + "/store.sqlite", "watch-syncthing"]
        watcher.environment = ["HOME": folder, "PATH": "/usr/bin:/bin", "RELAY_URL": "http://127.0.0.1:\(socket.port)",
                               "SYNCTHING_API_KEY": syncthing.apiKey, "SYNCTHING_API_URL": syncthing.url,
                               "DEBOUNCE_SECONDS": "1", "STARTUP_ANNOUNCE": "0", "JOB_STORE_KEY_FILE": folder + "/store.key"]
        let log = folder + "/watch.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        watcher.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        watcher.standardOutput = FileHandle.nullDevice
        try watcher.run()
        defer { if watcher.isRunning { kill(watcher.processIdentifier, SIGKILL); watcher.waitUntilExit() } }
        try waitUntil(30, "the watcher to subscribe") { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("watch.subscribed") }

        print("watch: \(changes) changes, DEBOUNCE_SECONDS=1, then \(idleSeconds) s idle; store in \(folder) (\(scratch.filesystem))")
        var latencies: [Double] = []
        for index in 0..<changes {
            let before = arrivals.count
            try "change \(index)".write(toFile: folder + "/vault/change-\(index).md", atomically: true, encoding: .utf8)
            let start = now()
            try syncthing.rescan()
            try waitUntil(15, "trigger \(index + 1)") { arrivals.count > before }
            latencies.append(arrivals.last - start)
            usleep(300_000)
        }
        latencies.sort()
        let median = latencies[latencies.count / 2], p99 = latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))]
        print(String(format: "write → trigger: median %.1f ms, p99 %.1f ms, min %.1f ms, max %.1f ms", median * 1000, p99 * 1000,
                     latencies.first! * 1000, latencies.last! * 1000))
        print(String(format: "overhead above the 1 s debounce (includes Syncthing's scan): median %.1f ms, p99 %.1f ms",
                     (median - 1) * 1000, (p99 - 1) * 1000))
        print("triggers received: \(arrivals.count) for \(changes) changes")

        // Idle: nothing changes; the watcher long-polls.
        let pid = watcher.processIdentifier
        let cpuBefore = cpuSeconds(pid), wallBefore = now()
        var peakRSS = 0
        for _ in 0..<idleSeconds {
            sleep(1)
            peakRSS = max(peakRSS, residentKilobytes(pid))
        }
        let cpu = cpuSeconds(pid) - cpuBefore, wall = now() - wallBefore
        print(String(format: "idle %d s: CPU %.3f %% of a core, peak RSS %.1f MiB", idleSeconds, cpu / wall * 100, Double(peakRSS) / 1024))
        // The resident set's parts at the end of the idle window, and its high-water mark since start (before the
        // watcher gave back the pages starting had touched).
        let mib = { (kilobytes: Int) in String(format: "%.1f", Double(kilobytes) / 1024) }
        print("idle RSS at the end: \(mib(residentKilobytes(pid))) MiB (anonymous \(mib(residentKilobytes(pid, "RssAnon:"))) MiB, "
              + "file-backed \(mib(residentKilobytes(pid, "RssFile:"))) MiB, PSS \(mib(residentKilobytes(pid, "Pss:", file: "smaps_rollup"))) MiB); "
              + "peak since start (VmHWM) \(mib(residentKilobytes(pid, "VmHWM:"))) MiB")
        kill(pid, SIGTERM)
        watcher.waitUntilExit()
    }

    /// Monotonic seconds.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    static func waitUntil(_ seconds: Double, _ what: String, _ condition: () -> Bool) throws {
        let deadline = now() + seconds
        while now() < deadline {
            if condition() { return }
            usleep(2_000)
        }
        throw BenchUsageError(message: "timed out waiting for \(what)")
    }

    /// utime + stime of `pid`, seconds.
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime 14 and stime 15 (1-based), so 11 and 12 here.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A kB figure of `pid` (`/proc/PID/status` VmRSS unless told otherwise), 0 when unreadable.
    static func residentKilobytes(_ pid: Int32, _ field: String = "VmRSS:", file: String = "status") -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/\(file)", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field) }) else { return 0 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }

    /// Trigger arrivals, from the stand-in's threads.
    final class Arrivals: @unchecked Sendable {
        private let lock = NSLock()
        private var times: [Double] = []
        func add(_ time: Double) { lock.lock(); times.append(time); lock.unlock() }
        var count: Int { lock.lock(); defer { lock.unlock() }; return times.count }
        var last: Double { lock.lock(); defer { lock.unlock() }; return times.last ?? 0 }
    }
}
