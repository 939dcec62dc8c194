import CQUIC
import Cryptography
import Foundation
import Glibc

/// `link-flood`: what a half-open QUIC flood costs one real `job serve-link --listen` with its default caps — its CPU
/// (from /proc, user + system) and peak memory, the log lines it writes — and whether a genuine offer still goes
/// through during the flood.
///
/// Two floods on loopback, one after the other:
/// - **first packets never answered**: fresh, valid QUIC Initials (a real client's first flight, a new connection
///   id each) from several 127.0.0.x addresses at a set rate, as a spoofer's flood looks to the server;
/// - **half-open handshakes that answer the Retry**: one client per socket from 40 addresses, each following the
///   server's Retry and then going silent, enough to hold every slot until the handshake deadline.
///
/// During each, a real `job offers send` from a paired node reports `delivered` or `held`.
enum LinkFloodBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var seconds = 10
        var rate = 2_000
        var sources = 16
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--seconds": seconds = try BenchOption.integer(&rest, option, in: 1...600)
            case "--rate": rate = try BenchOption.integer(&rest, option, in: 1...100_000)
            case "--sources": sources = try BenchOption.integer(&rest, option, in: 1...200)
            case "--help", "-h":
                print("usage: job-bench link-flood [--seconds S] [--rate R] [--sources N]")
                print("  --seconds S   length of the never-answered flood (default 10)")
                print("  --rate R      never-answered first packets per second (default 2000)")
                print("  --sources N   loopback source addresses 127.0.0.2… for that flood (default 16)")
                return
            default:
                throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let folder = try RelayBenchSupport.scratch("link-flood")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let alice = folder + "/alice.sqlite", bob = folder + "/bob.sqlite"
        let aliceID = try LinkBench.endpoint(alice)
        let bobID = try LinkBench.endpoint(bob)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: LinkBench.jobPath)
        server.arguments = ["--store", alice, "serve-link", "--listen", "127.0.0.1:0"]
        server.environment = ["HOME": folder, "PATH": "/usr/bin:/bin"]
        let serverOut = folder + "/serve-link.out", serverErr = folder + "/serve-link.err"
        for path in [serverOut, serverErr] where !FileManager.default.createFile(atPath: path, contents: nil) { throw BenchFailure("cannot create \(path)") }
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: serverOut))
        server.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: serverErr))
        try server.run()
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        var port: UInt16?
        let deadline = Date().addingTimeInterval(20)
        while port == nil && Date() < deadline {
            let text = (try? String(contentsOfFile: serverOut, encoding: .utf8)) ?? ""
            port = text.range(of: "listening on 127.0.0.1:").flatMap { text[$0.upperBound...].split(separator: "\n").first.flatMap { UInt16($0) } }
            if port == nil { usleep(20_000) }
        }
        guard let port else { throw BenchUsageError(message: "serve-link did not start") }
        try LinkBench.job(bob, ["grants", "accept", "--label", "alice", "--addr", "127.0.0.1:\(port)"], stdin: try LinkBench.job(alice, ["grants", "issue", "--to", bobID]))
        let serverKey = try Hex.decode(aliceID)
        let key = try Ed25519PrivateKey.generate()
        guard let creds = vq_creds_new(key.seed.copyBytes(), key.publicKey) else { throw BenchFailure("cannot make TLS credentials") }
        defer { vq_creds_free(creds) }
        let pid = server.processIdentifier
        print("link-flood: one serve-link (default caps: 256 slots, 8 per address, Retry above 8 unvalidated), debug or release as built")
        print("flood".padding(toLength: 44, withPad: " ", startingAt: 0) + " packets  seconds  cpu s  ms/1k pkts  peak MiB  log lines  offer")

        // 1. Never-answered first packets, made beforehand so the flood's rate is not the generator's.
        let total = rate * seconds
        let sockets = try (0..<sources).map { try udp(from: "127.0.0.\(2 + $0)", to: port) }
        defer { sockets.forEach { close($0) } }
        var flights: [[UInt8]] = []
        flights.reserveCapacity(total)
        for index in 0..<total {
            let (conn, packets) = try firstFlight(creds: creds, fd: sockets[index % sources], server: serverKey)
            vq_conn_free(conn)
            flights.append(packets[0])
        }
        var before = try usage(pid)
        var lines = logLines(serverErr)
        let start = Date()
        let during = OfferResult()
        var offer = "-"
        for (index, flight) in flights.enumerated() {
            _ = flight.withUnsafeBytes { send(sockets[index % sources], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if index == total / 2 {
                Thread { during.set(sendOffer(bob)) }.start()
            }
            let due = start.addingTimeInterval(Double(index + 1) / Double(rate))
            let wait = due.timeIntervalSinceNow
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            for fd in sockets { drain(fd) }
        }
        offer = during.wait()
        var after = try usage(pid)
        report("first packets never answered (\(sources) addresses)", packets: total, seconds: Date().timeIntervalSince(start),
               cpu: after.cpu - before.cpu, peak: after.peakKiB, lines: logLines(serverErr) - lines, offer: offer)
        sleep(2)

        // 2. Half-open handshakes that answer the Retry and then stall: 40 addresses × 8, past the 256 slots.
        before = try usage(pid)
        lines = logLines(serverErr)
        let crowdStart = Date()
        var crowd: [(fd: Int32, conn: OpaquePointer)] = []
        defer { crowd.forEach { vq_conn_free($0.conn); close($0.fd) } }
        for address in 0..<40 {
            for _ in 0..<8 {
                let fd = try udp(from: "127.0.1.\(2 + address)", to: port)
                let (conn, packets) = try firstFlight(creds: creds, fd: fd, server: serverKey)
                crowd.append((fd, conn))
                for packet in packets { _ = packet.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
            }
        }
        var answered = 0
        let followUntil = Date().addingTimeInterval(3)
        var followed = Set<Int>()
        while Date() < followUntil && followed.count < crowd.count {
            for (index, member) in crowd.enumerated() where !followed.contains(index) {
                if followRetry(member.fd, member.conn) { followed.insert(index); answered += 1 }
            }
            usleep(5_000)
        }
        offer = sendOffer(bob)
        after = try usage(pid)
        report("half-open, answering the Retry (320)", packets: crowd.count * 2, seconds: Date().timeIntervalSince(crowdStart),
               cpu: after.cpu - before.cpu, peak: after.peakKiB, lines: logLines(serverErr) - lines, offer: offer)
        print("  \(answered) of \(crowd.count) crowd clients got the Retry and sent their Initial again with its token")
        print("cpu: serve-link's user + system time over the flood (from /proc); peak: its VmHWM; log lines: stderr lines written meanwhile")
    }

    static func report(_ name: String, packets: Int, seconds: Double, cpu: Double, peak: Int, lines: Int, offer: String) {
        print(name.padding(toLength: 44, withPad: " ", startingAt: 0)
              + String(format: " %7d %8.1f %6.2f %11.3f %9.1f %10d  ", packets, seconds, cpu, cpu * 1000 / Double(max(packets, 1)) * 1000,
                       Double(peak) / 1024, lines) + offer)
    }

    /// serve-link's CPU seconds (user + system) and peak resident KiB so far.
    static func usage(_ pid: Int32) throws -> (cpu: Double, peakKiB: Int) {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        guard let close = stat.lastIndex(of: ")") else { throw BenchFailure("cannot read /proc/\(pid)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let cpu = (Double(fields[11]) ?? 0) / ticks + (Double(fields[12]) ?? 0) / ticks
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } } ?? 0
        return (cpu, peak)
    }

    static func logLines(_ path: String) -> Int {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// A real `job offers send` from Bob: its state and how long it took.
    static func sendOffer(_ bob: String) -> String {
        let start = Date()
        let ticket = bob + ".ticket-\(UUID().uuidString.prefix(6))"
        _ = FileManager.default.createFile(atPath: ticket, contents: Data("flood\n".utf8))
        let text = (try? LinkBench.job(bob, ["--json", "offers", "send", "--to", "alice", "--ticket-file", ticket, "--files", "1", "--bytes", "1"])) ?? ""
        let state = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["state"] as? String ?? "failed"
        return state + String(format: " in %.2f s", Date().timeIntervalSince(start))
    }

    /// A UDP socket bound to `source` and connected to 127.0.0.1:`port`.
    static func udp(from source: String, to port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("socket failed") }
        var local = sockaddr_in(), remote = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) } }
        guard bound == 0, connected == 0 else { close(fd); throw BenchFailure("cannot bind \(source) (errno \(errno))") }
        return fd
    }

    /// A new QUIC client on `fd`'s addresses and its first flight (the Initial datagrams).
    static func firstFlight(creds: OpaquePointer, fd: Int32, server: [UInt8]) throws -> (OpaquePointer, [[UInt8]]) {
        var local = sockaddr_storage(), remote = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size), remoteLength = localLength
        withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &localLength) } }
        withUnsafeMutablePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getpeername(fd, $0, &remoteLength) } }
        let made: OpaquePointer? = withAddresses(&local, &remote) { l, r in
            vq_client_new(creds, l, localLength, r, remoteLength, server, "/vnidrop/offer/1", 60_000, 60_000)
        }
        guard let conn = made else { throw BenchFailure("cannot make a QUIC client") }
        var out = [UInt8](repeating: 0, count: 1500)
        var packets: [[UInt8]] = []
        while true {
            let count = vq_write(conn, &out, out.count)
            guard count > 0 else { break }
            packets.append(Array(out[0..<count]))
        }
        guard !packets.isEmpty else { vq_conn_free(conn); throw BenchFailure("the client wrote no Initial") }
        return (conn, packets)
    }

    /// Reads what waits on `fd`; on a Retry, feeds it to `conn` and sends the Initial again with its token. True once followed.
    static func followRetry(_ fd: Int32, _ conn: OpaquePointer) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0, buffer[0] & 0xf0 == 0xf0 else { return false }
        var local = sockaddr_storage(), remote = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size), remoteLength = localLength
        withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &localLength) } }
        withUnsafeMutablePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getpeername(fd, $0, &remoteLength) } }
        _ = withAddresses(&local, &remote) { l, r in vq_read(conn, buffer, count, l, localLength, r, remoteLength) }
        var out = [UInt8](repeating: 0, count: 1500)
        while true {
            let written = vq_write(conn, &out, out.count)
            guard written > 0 else { break }
            _ = out.withUnsafeBytes { send(fd, $0.baseAddress, written, Int32(MSG_NOSIGNAL)) }
        }
        return true
    }

    /// Discards what waits on `fd` (Retries to the never-answering flood).
    static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
    }

    static func withAddresses<T>(_ local: inout sockaddr_storage, _ remote: inout sockaddr_storage,
                                 _ body: (UnsafePointer<sockaddr>, UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafePointer(to: &local) { l in
            withUnsafePointer(to: &remote) { r in
                l.withMemoryRebound(to: sockaddr.self, capacity: 1) { lp in r.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(lp, $0) } }
            }
        }
    }
}

/// The offer sent during a flood, from the thread that sent it.
final class OfferResult: @unchecked Sendable {
    // @unchecked: `value` is read and written only while `condition` is locked.
    private let condition = NSCondition()
    private var value: String?

    func set(_ text: String) {
        condition.lock(); value = text; condition.signal(); condition.unlock()
    }

    func wait() -> String {
        condition.lock(); defer { condition.unlock() }
        while value == nil { condition.wait() }
        return value!
    }
}
