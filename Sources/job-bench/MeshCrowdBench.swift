import Cryptography
import Foundation
import Glibc
import MeshMedia
import Store

/// `mesh-crowd`: what a hostile crowd on the mesh costs a receiving node — CPU, peak memory and what stays in the
/// store — for fragment floods (many one-fragment sets from spoofed ids; one set of thousands of fragments), spoofed
/// handshake openers and throwaway-identity announces, each heard by one real `job media-inbox` pass (a child
/// process, measured with `wait4`), next to a baseline of the same number of plain broadcast messages.
enum MeshCrowdBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var frames = 4_000
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--frames":
                frames = try BenchOption.integer(&rest, "--frames", in: 10...4_095)
            case "--help", "-h":
                print("usage: job-bench mesh-crowd [--frames N]")
                print("  --frames N   frames per flood (default 4000; at most 4095, the largest set a node accepts)")
                return
            default:
                throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = SweepGrantsBench.siblingExecutable("job")
        let scratch = try RelayBenchSupport.scratch("mesh-crowd")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        print("mesh-crowd: \(frames) frames per flood, one media-inbox pass each (debug or release as built)")
        print("flood".padding(toLength: 34, withPad: " ", startingAt: 0) + "   cpu s  ms/frame  peak MiB  rows left")
        let floods: [(String, ([UInt8], Int) throws -> [[UInt8]])] = [
            ("baseline: plain broadcasts", { _, n in try (0..<n).map { _ in try plain() } }),
            ("one-fragment sets, spoofed ids", { me, n in
                try (0..<n).map { _ in try fragment(to: me, from: random(8), set: random(8), index: 0, total: 2, bytes: 40) }
            }),
            ("one set of N fragments", { me, n in
                let sender = random(8), set = random(8)
                return try (0..<n).map { try fragment(to: me, from: sender, set: set, index: $0, total: n + 1, bytes: 469) }
            }),
            ("handshake openers, spoofed ids", { me, n in try (0..<n).map { _ in try opener(to: me) } }),
            ("throwaway-identity announces", { _, n in try (0..<n).map { _ in try announce() } }),
        ]
        for (index, (name, build)) in floods.enumerated() {
            let folder = scratch + "/flood-\(index)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let store = folder + "/b.sqlite"
            let env = ["HOME=" + folder, "PATH=/usr/bin:/bin"]
            let made = try child(job, ["--store", store, "--json", "mesh", "init", "--nickname", "b"], env: env)
            guard made.status == 0, let id = made.stdout.split(separator: "\"").drop(while: { $0 != "peer_id" }).dropFirst(2).first else {
                throw BenchFailure("job mesh init failed: \(made.stderr.prefix(200))")
            }
            let me = try Hex.decode(String(id))
            let heard = try build(me, frames)
            let db = try Database(path: store)
            try db.write { db in
                for frame in heard { _ = try db.execute("INSERT INTO mesh_inbox (frame, received_at) VALUES (?, ?)", [frame, Int64(Date().timeIntervalSince1970 * 1000)]) }
            }
            let pass = try child(job, ["--store", store, "--json", "media-inbox"], env: env)
            guard pass.status == 0 else { throw BenchFailure("media-inbox exited \(pass.status): \(pass.stderr.prefix(200))") }
            let left: Int = try db.scalar("""
                SELECT (SELECT count(*) FROM mesh_fragments) + (SELECT count(*) FROM mesh_sessions) + (SELECT count(*) FROM mesh_peers)
                     + (SELECT count(*) FROM mesh_outbox)
                """) ?? -1
            print(name.padding(toLength: 34, withPad: " ", startingAt: 0)
                  + String(format: "%8.2f %9.3f %9.1f %10d", pass.cpu, pass.cpu * 1000 / Double(frames), Double(pass.maxRSSKiB) / 1024, left))
        }
        print("rows left: fragments + sessions + peers + outbox frames after the pass (replies and relays included)")
    }

    struct Outcome { let status: Int32; let cpu: Double; let maxRSSKiB: Int; let stdout: String; let stderr: String }

    /// Runs `executable` to completion; its user + system CPU time and peak RSS from `wait4`.
    static func child(_ executable: String, _ arguments: [String], env: [String]) throws -> Outcome {
        let out = NSTemporaryDirectory() + "mesh-crowd-\(getpid())-\(UUID().uuidString).out"
        let err = out + ".err"
        defer { try? FileManager.default.removeItem(atPath: out); try? FileManager.default.removeItem(atPath: err) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw BenchFailure("cannot start \(executable) (errno \(rc))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: exit, cpu: cpu, maxRSSKiB: usage.ru_maxrss,
                       stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "", stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    static func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }
    static var now: UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    static func plain() throws -> [UInt8] {
        try BitchatPacket(type: .message, ttl: 1, timestamp: now, senderID: random(8), payload: random(40)).encoded(padding: false)
    }

    /// Fragment `index` of `total` of set `set` (original type message, so it never completes), `bytes` of data.
    static func fragment(to me: [UInt8], from sender: [UInt8], set: [UInt8], index: Int, total: Int, bytes: Int) throws -> [UInt8] {
        let payload = try Fragment(fragmentID: set, index: UInt16(index), total: UInt16(total), originalType: 0x02, data: random(bytes)).encoded()
        return try BitchatPacket(type: .fragment, ttl: 1, timestamp: now, senderID: sender, recipientID: me, payload: payload).encoded(padding: false)
    }

    static func opener(to me: [UInt8]) throws -> [UInt8] {
        try BitchatPacket(type: .noiseHandshake, ttl: 1, timestamp: now, senderID: random(8), recipientID: me, payload: random(32)).encoded()
    }

    static func announce() throws -> [UInt8] {
        let noise = random(32)
        let signing = try Ed25519PrivateKey.generate()
        let body = try Announce(nickname: "t", noisePublicKey: noise, signingPublicKey: signing.publicKey, capabilities: .privateMedia).encoded()
        var packet = BitchatPacket(type: .announce, ttl: 1, timestamp: now, senderID: Array(SHA256.hash(noise).prefix(8)), payload: body)
        packet.signature = try signing.sign(try packet.signingPreimage())
        return try packet.encoded()
    }
}
