import Foundation
import Synchronization

/// A seeded mutation fuzzer for decoders of outside bytes: each input is a seed (or an input a decoder
/// accepted earlier) with one to four mutations — bit flips, byte sets, boundary bytes, syntax tokens of
/// JSON/XML/HTTP dates, insertions, deletions, duplications, truncations, splices, and long repeats.
///
/// Per decoder it counts inputs, accepted and rejected, the slowest input, inputs slower than
/// `slowSeconds` (hangs), and the resident-set growth. A `Watchdog` ends the process with the offending
/// input printed when one decode runs past its limit, so a hang cannot go unnoticed, and prints the input
/// being decoded when the process crashes. Deterministic in its seed.
package final class MutationFuzzer {
    /// One decoder under test: returns true when it accepted the input.
    package struct Target {
        package let name: String
        package let seeds: [[UInt8]]
        package let decode: ([UInt8]) -> Bool
        package init(name: String, seeds: [[UInt8]], decode: @escaping ([UInt8]) -> Bool) {
            self.name = name
            self.seeds = seeds
            self.decode = decode
        }
    }

    /// What one decoder did.
    package struct Report: Sendable {
        package var name = ""
        package var inputs = 0
        package var accepted = 0
        package var rejected = 0
        package var slowestMicroseconds = 0
        /// Inputs that took longer than `slowSeconds`.
        package var hangs = 0
        package var residentKilobytesBefore = 0
        package var residentKilobytesAfter = 0
        package var seconds = 0.0
        package var largestInput = 0
    }

    package static let maxInputBytes = 65_536
    package let slowSeconds: Double
    private var random: ChaosRandom

    static let tokens: [[UInt8]] = [
        "\"", "{", "}", "[", "]", ":", ",", "null", "true", "false", "-0", "1e999", "-1e999", "9223372036854775808", "0.0000001",
        "\\u0000", "\\ud800", "\"\":", "{\"a\":", "[[[[", "<", ">", "</", "/>", "<![CDATA[", "]]>", "<!ENTITY x \"", "&amp;", "&#0;", "&#x110000;",
        "&x;", "<?xml ", "<!DOCTYPE ", "=\"", "GMT", "Mon, ", "31 Feb ", " 99:99:99 ", "\r\n", "\t", "\u{FEFF}", "\u{0}", "é", "𝄞",
    ].map { Array($0.utf8) }
    static let bytes: [UInt8] = [0, 1, 0x7f, 0x80, 0xff, 0x20, 0x22, 0x27, 0x2c, 0x2d, 0x2e, 0x30, 0x39, 0x3a, 0x3c, 0x3e, 0x5b, 0x5c, 0x5d, 0x7b, 0x7d]

    package init(seed: UInt64, slowSeconds: Double = 1) {
        random = ChaosRandom(seed: seed)
        self.slowSeconds = slowSeconds
    }

    /// Feeds `inputs` mutated inputs to `target`; `progress` gets the count every 100,000.
    package func run(_ target: Target, inputs: Int, watchdog: Watchdog? = nil, progress: (Int) -> Void = { _ in }) -> Report {
        var report = Report()
        report.name = target.name
        report.residentKilobytesBefore = Self.residentKilobytes()
        var corpus = target.seeds.isEmpty ? [[UInt8]()] : target.seeds
        let seedCount = corpus.count
        let started = DispatchTime.now().uptimeNanoseconds
        for index in 0..<inputs {
            let input = mutate(corpus, seedCount: seedCount)
            report.largestInput = max(report.largestInput, input.count)
            watchdog?.arm(target.name, input)
            if watchdog != nil { CrashInput.set(input) }
            let t0 = DispatchTime.now().uptimeNanoseconds
            let accepted = target.decode(input)
            let micros = Int((DispatchTime.now().uptimeNanoseconds - t0) / 1000)
            watchdog?.disarm()
            report.inputs += 1
            if accepted {
                report.accepted += 1
                // Keep a few accepted variants to mutate further (depth), bounded.
                if corpus.count < seedCount + 64 { corpus.append(input) }
                else if Int.random(in: 0..<16, using: &random) == 0 { corpus[seedCount + Int.random(in: 0..<64, using: &random)] = input }
            } else {
                report.rejected += 1
            }
            report.slowestMicroseconds = max(report.slowestMicroseconds, micros)
            if Double(micros) / 1e6 > slowSeconds { report.hangs += 1 }
            if index % 100_000 == 99_999 { progress(index + 1) }
        }
        report.seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        report.residentKilobytesAfter = Self.residentKilobytes()
        return report
    }

    /// Only generates the inputs (the baseline: the cost of mutation without decoding).
    package func generateOnly(_ target: Target, inputs: Int) -> Double {
        let corpus = target.seeds.isEmpty ? [[UInt8]()] : target.seeds
        let started = DispatchTime.now().uptimeNanoseconds
        var sum = 0
        for _ in 0..<inputs { sum &+= mutate(corpus, seedCount: corpus.count).count }
        if sum == -1 { print(sum) }
        return Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    }

    private func mutate(_ corpus: [[UInt8]], seedCount: Int) -> [UInt8] {
        var input = corpus[Int.random(in: 0..<corpus.count, using: &random)]
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let count = input.count
            switch Int.random(in: 0..<11, using: &random) {
            case 0 where count > 0:
                input[Int.random(in: 0..<count, using: &random)] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
            case 1 where count > 0:
                input[Int.random(in: 0..<count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            case 2 where count > 0:
                input[Int.random(in: 0..<count, using: &random)] = Self.bytes.randomElement(using: &random)!
            case 3:
                input.insert(contentsOf: Self.tokens.randomElement(using: &random)!, at: Int.random(in: 0...count, using: &random))
            case 4:
                let bytes = (0..<Int.random(in: 1...8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                input.insert(contentsOf: bytes, at: Int.random(in: 0...count, using: &random))
            case 5 where count > 0:
                let start = Int.random(in: 0..<count, using: &random)
                input.removeSubrange(start..<min(count, start + Int.random(in: 1...16, using: &random)))
            case 6 where count > 0:
                let start = Int.random(in: 0..<count, using: &random)
                let chunk = Array(input[start..<min(count, start + Int.random(in: 1...32, using: &random))])
                input.insert(contentsOf: chunk, at: Int.random(in: 0...count, using: &random))
            case 7 where count > 0:
                input.removeLast(Int.random(in: 1...count, using: &random))
            case 8:
                let other = corpus[Int.random(in: 0..<seedCount, using: &random)]
                guard !other.isEmpty else { break }
                let from = Int.random(in: 0..<other.count, using: &random)
                input.insert(contentsOf: other[from...], at: Int.random(in: 0...count, using: &random))
            case 9 where Int.random(in: 0..<8, using: &random) == 0:
                // A long repeat: deep nesting or a huge field.
                let unit = count > 0 ? Array(input[Int.random(in: 0..<count, using: &random)...].prefix(Int.random(in: 1...4, using: &random)))
                                     : Self.tokens.randomElement(using: &random)!
                let times = Int.random(in: 64...4_096, using: &random)
                input.insert(contentsOf: Array(repeating: unit, count: times).joined(), at: Int.random(in: 0...count, using: &random))
            case 10 where count > 1:
                // Swap two bytes (reorders syntax).
                input.swapAt(Int.random(in: 0..<count, using: &random), Int.random(in: 0..<count, using: &random))
            default:
                break
            }
            if input.count > Self.maxInputBytes { input.removeLast(input.count - Self.maxInputBytes) }
        }
        return input
    }

    /// The process's resident set now (kB), from /proc/self/statm.
    package static func residentKilobytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }
}

/// Ends the process when one decode runs longer than `limitSeconds`, printing the decoder and the input
/// (hex) — so a hang is reported, not waited on forever.
package final class Watchdog: Sendable {
    /// The decode being watched: when it started (0: none), the decoder and the input.
    private struct Armed { var at: UInt64 = 0; var name = ""; var input: [UInt8] = [] }
    private let armed = Mutex(Armed())
    private let limit: UInt64

    package init(limitSeconds: Double) {
        limit = UInt64(limitSeconds * 1e9)
        CrashInput.install()
        let thread = Thread { [unowned self] in
            while true {
                Thread.sleep(forTimeInterval: 0.5)
                let (overdue, name, input) = self.armed.withLock { armed in
                    (armed.at != 0 && DispatchTime.now().uptimeNanoseconds - armed.at > self.limit, armed.name, armed.input)
                }
                if overdue {
                    let hex = input.map { String(format: "%02x", $0) }.joined()
                    FileHandle.standardError.write(Data("fuzz: HANG in \(name) on input (hex) \(hex)\n".utf8))
                    exit(3)
                }
            }
        }
        thread.start()
    }

    func arm(_ name: String, _ input: [UInt8]) {
        armed.withLock { $0 = Armed(at: DispatchTime.now().uptimeNanoseconds, name: name, input: input) }
    }

    func disarm() {
        armed.withLock { $0.at = 0 }
    }
}

/// On a crash (SIGSEGV, SIGILL, SIGBUS, SIGFPE, SIGABRT, SIGTRAP) prints the input being decoded as hex to stderr,
/// then lets the signal end the process as usual — so every crash `job-bench fuzz` meets is reproducible.
enum CrashInput {
    static let capacity = MutationFuzzer.maxInputBytes
    // nonisolated(unsafe): the crash signal handler reads these and may not take a lock; `set` runs on the one decoding thread.
    nonisolated(unsafe) static let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    nonisolated(unsafe) static var length = 0
    // nonisolated(unsafe): written once by `install`, which the single fuzzing thread calls before any decode.
    nonisolated(unsafe) static var installed = false

    /// Remembers `input` as the one being decoded (a copy into a fixed buffer: the handler cannot allocate).
    static func set(_ input: [UInt8]) {
        length = 0
        input.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: min($0.count, capacity)) }
        length = min(input.count, capacity)
    }

    static func install() {
        guard !installed else { return }
        installed = true
        for sig in [SIGSEGV, SIGILL, SIGBUS, SIGFPE, SIGABRT, SIGTRAP] {
            signal(sig) { number in
                let digits: StaticString = "0123456789abcdef"
                let header: StaticString = "\nfuzz: CRASH on input (hex): "
                _ = write(2, header.utf8Start, header.utf8CodeUnitCount)
                var pair: (UInt8, UInt8) = (0, 0)
                for i in 0..<CrashInput.length {
                    let byte = CrashInput.buffer[i]
                    pair = (digits.utf8Start[Int(byte >> 4)], digits.utf8Start[Int(byte & 15)])
                    _ = withUnsafeBytes(of: &pair) { write(2, $0.baseAddress, 2) }
                }
                _ = write(2, "\n", 1)
                signal(number, SIG_DFL)
                raise(number)
            }
        }
    }
}
