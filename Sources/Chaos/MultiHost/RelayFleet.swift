import Foundation
import Synchronization

/// The relay processes of a multi-host chaos run over one store: `serve-relay` slots (each restarted on a fresh
/// loopback port whenever it dies) and `send-wakeups` passes, all children of `ChaosChildren` so the killer can
/// reach them. The clients read the live ports from here.
final class RelayFleet: Sendable {
    let executable: String
    let store: String
    let environment: [String: String]
    let directory: String
    let children: ChaosChildren
    /// Slot → port of each serve-relay that has said it listens.
    private let ports = Mutex<[Int: Int]>([:])
    private let servers = Mutex<[Int: pid_t]>([:])
    private let counter = Atomic<Int>(0)

    init(executable: String, store: String, environment: [String: String], directory: String, children: ChaosChildren) {
        self.executable = executable
        self.store = store
        self.environment = environment
        self.directory = directory
        self.children = children
    }

    /// Keeps a serve-relay running in `slot` until `stop`: starts it (`--listen 127.0.0.1:0 --no-push`), publishes
    /// its port once it says it listens, waits for its end, reports the exit status to `ended` (unless stopping)
    /// and starts the next after a short pause (the store may be restarting).
    func superviseServer(slot: Int, stop: ChaosFlag, ended: @Sendable (Int32) -> Void) {
        while !stop.isSet {
            let output = directory + "/serve-relay-\(slot)-\(counter.add(1, ordering: .relaxed).newValue).out"
            guard FileManager.default.createFile(atPath: output, contents: nil),
                  let pid = try? children.spawn(.serveRelay, [executable, "--store", store, "serve-relay", "--listen", "127.0.0.1:0", "--no-push"],
                                                environment: environment, outputFile: output) else {
                usleep(200_000)
                continue
            }
            servers.withLock { $0[slot] = pid }
            let watcher = Thread { [self] in
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                    if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
                       let port = Int(line.split(separator: ":").last ?? "") {
                        // Published only while this very process is the slot's server.
                        servers.withLock { if $0[slot] == pid { ports.withLock { $0[slot] = port } } }
                        return
                    }
                    if servers.withLock({ $0[slot] != pid }) { return }
                    usleep(10_000)
                }
            }
            watcher.start()
            let status = children.wait(pid)
            servers.withLock { $0[slot] = nil }
            ports.withLock { $0[slot] = nil }
            if stop.isSet { break }
            // A start refused while the store restarts (69 unavailable, 75 lost) is no kill and no fault.
            if status != 69 && status != 75 { ended(status) }
            try? FileManager.default.removeItem(atPath: output)
            usleep(100_000)
        }
    }

    /// Waits until `count` serve-relays listen.
    func waitForServers(_ count: Int, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if ports.withLock({ $0.count }) >= count { return true }
            usleep(20_000)
        }
        return false
    }

    /// The output of the serve-relays that did not start (for the failure message).
    func lastOutput() -> String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory))?.filter { $0.hasPrefix("serve-relay-") } ?? []
        return files.compactMap { try? String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }.joined(separator: "\n").suffix(2000).description
    }

    /// A random listening serve-relay's port, nil when none listens right now.
    func anyPort(using random: inout ChaosRandom) -> Int? {
        ports.withLock { Array($0.values).sorted().randomElement(using: &random) }
    }

    /// SIGTERMs every serve-relay (their supervisors, told to stop, start no more).
    func stopServers() {
        for pid in servers.withLock({ Array($0.values) }) { children.signal(pid, SIGTERM) }
    }

    /// Runs one `send-wakeups` pass to its end (or its kill), its output appended to `send-wakeups-<host>.out`; its
    /// exit status (137: SIGKILLed).
    func runPass(host: Int) -> Int32 {
        let output = directory + "/send-wakeups-\(host).out"
        if !FileManager.default.fileExists(atPath: output) { _ = FileManager.default.createFile(atPath: output, contents: nil) }
        guard let pid = try? children.spawn(.sendWakeups, [executable, "--store", store, "--json", "send-wakeups"], environment: environment, outputFile: output) else {
            return -1
        }
        return children.wait(pid)
    }
}

extension RelayFleet {
    /// How many times the passes' logs say `event`.
    func passLogCount(_ event: String, hosts: Int) -> Int {
        (0..<hosts).reduce(0) { sum, host in
            let text = (try? String(contentsOfFile: directory + "/send-wakeups-\(host).out", encoding: .utf8)) ?? ""
            return sum + text.components(separatedBy: event).count - 1
        }
    }
}
