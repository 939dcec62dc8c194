import Cryptography
import Foundation  // Process and Pipe, to run `openssl speed` as the baseline

/// `crypto`: signing and MAC throughput of the Cryptography module next to `openssl speed` in the same run.
///
/// Each operation runs on one thread for `--seconds` of wall-clock time over 64-byte messages.
/// The baseline is `openssl speed -elapsed` (also wall clock, also one thread). OpenSSL 3.0's
/// `speed` has no secp256k1 ECDSA, so the ES256K rows show "n/a" there.
enum CryptoBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var seconds = 1
        var runOpenSSL = true
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--seconds":
                guard let value = rest.popFirst(), let n = Int(value), (1...60).contains(n) else {
                    throw BenchUsageError(message: "--seconds needs a whole number from 1 to 60")
                }
                seconds = n
            case "--no-openssl":
                runOpenSSL = false
            case "--help", "-h":
                print("usage: job-bench crypto [--seconds N] [--no-openssl]")
                print("  --seconds N    time each operation for N seconds (default 1)")
                print("  --no-openssl   skip the `openssl speed` baseline")
                return
            default:
                throw BenchUsageError(message: "unknown option \(option)")
            }
        }

        let message = [UInt8](repeating: 0x5a, count: 64)
        let duration = Duration.seconds(seconds)

        let k1 = try Secp256k1PrivateKey.generate()
        let p256 = try P256PrivateKey.generate()
        let ed = try Ed25519PrivateKey.generate()
        let hmacKey = try SecretBytes.random(count: 32)
        let k1Signature = try k1.signature(for: message)
        let k1Digest = SHA256.hash(message)
        let k1Address = try Ethereum.address(uncompressedPublicKey: k1.publicKey(compressed: false))
        let p256Signature = try p256.signature(for: message)
        let edSignature = try ed.sign(message)
        let edPublic = ed.publicKeyValue

        print("crypto: \(seconds) s per operation, 64-byte messages, one thread, wall clock")
        let ours: [(String, Double)] = [
            ("ES256K sign (secp256k1)", try measure(duration) { try k1.signature(for: message)[0] }),
            ("ES256 sign (P-256)", try measure(duration) { try p256.signature(for: message)[0] }),
            ("Ed25519 sign", try measure(duration) { try ed.sign(message)[0] }),
            ("HMAC-SHA256", try measure(duration) { HMACSHA256.authenticate(key: hmacKey, message: message)[0] }),
            ("ES256K verify (recover)", try measure(duration) {
                let keys = Secp256k1.recoverPublicKeys(signature64: k1Signature, digest: k1Digest)
                return try keys.contains { try Ethereum.address(uncompressedPublicKey: $0) == k1Address } ? 1 : 0
            }),
            ("ES256 verify (P-256)", try measure(duration) { p256.publicKey.isValidSignature(p256Signature, for: message) ? 1 : 0 }),
            ("Ed25519 verify", try measure(duration) { edPublic.isValidSignature(edSignature, for: message) ? 1 : 0 }),
        ]

        let baseline = runOpenSSL ? OpenSSLSpeed.measure(seconds: seconds) : OpenSSLSpeed.Figures()
        let theirs: [Double?] = [
            nil, baseline.ecdsaP256Sign, baseline.ed25519Sign, baseline.hmacSHA256,
            nil, baseline.ecdsaP256Verify, baseline.ed25519Verify,
        ]

        let rows = zip(ours, theirs).map { (ours, theirs) -> [String] in
            let ratio = theirs.map { format($0 > 0 ? ours.1 / $0 : 0, decimals: 2) } ?? "n/a"
            return [ours.0, format(ours.1, decimals: 0), theirs.map { format($0, decimals: 0) } ?? "n/a", ratio]
        }
        printTable(header: ["operation", "ops/s", "openssl speed ops/s", "ratio"], rows: rows)
        let perPass = 10_000 / ours[0].1
        print("mint-pool pass estimate: 10,000 ES256K signatures in \(format(perPass * 1000, decimals: 0)) ms")
        print("HMAC: each call here keys a fresh context (as HMACSHA256.authenticate does); openssl speed re-keys nothing,")
        print("      it reuses one keyed context, so its figure excludes the two SHA-256 blocks of key setup.")
        print("ES256K verify here = recovery with ids 0 and 1 plus Keccak-256 address comparison, as Endorser checks did:ethr.")
        if !runOpenSSL { print("(openssl baseline skipped)") } else if !baseline.ran { print("(openssl speed could not be run or parsed)") }
    }

    /// Operations per second of `operation`, run in batches for `duration` after a short warm-up.
    static func measure(_ duration: Duration, _ operation: () throws -> UInt8) throws -> Double {
        var sink: UInt8 = 0
        let clock = ContinuousClock()
        let warmUpEnd = clock.now.advanced(by: .milliseconds(100))
        while clock.now < warmUpEnd { sink &+= try operation() }
        var count = 0
        let start = clock.now
        var elapsed = Duration.zero
        repeat {
            for _ in 0..<32 { sink &+= try operation() }
            count += 32
            elapsed = start.duration(to: clock.now)
        } while elapsed < duration
        blackHole(sink)
        let (secondsPart, attoseconds) = elapsed.components
        return Double(count) / (Double(secondsPart) + Double(attoseconds) / 1e18)
    }

    @inline(never)
    static func blackHole(_ value: UInt8) {
        // argv always holds the program name, but the optimiser cannot know it, so `value` must be computed.
        if CommandLine.arguments.isEmpty { print(value) }
    }

    static func format(_ value: Double, decimals: Int) -> String {
        if decimals > 0 {
            let scale = Double((0..<decimals).reduce(1) { acc, _ in acc * 10 })
            let rounded = (value * scale).rounded() / scale
            var text = String(rounded)
            if let dot = text.firstIndex(of: ".") {
                let fraction = text[text.index(after: dot)...].count
                if fraction < decimals { text += String(repeating: "0", count: decimals - fraction) }
            }
            return text
        }
        let digits = String(Int(value.rounded()))
        var out = ""
        for (index, c) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return String(out.reversed())
    }

    /// A plain table: first column left-aligned, the others right-aligned.
    static func printTable(header: [String], rows: [[String]]) {
        let all = [header] + rows
        let widths = (0..<header.count).map { column in all.map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                return index == 0 ? cell + pad : pad + cell
            }.joined(separator: "   ")
        }
        print(line(header))
        print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "   "))
        for row in rows { print(line(row)) }
    }
}

/// Runs `openssl speed` (machine-readable, wall clock) and extracts the figures the crypto scenario compares with.
enum OpenSSLSpeed {
    struct Figures {
        var ran = false
        var ecdsaP256Sign: Double?
        var ecdsaP256Verify: Double?
        var ed25519Sign: Double?
        var ed25519Verify: Double?
        var hmacSHA256: Double?
    }

    static func measure(seconds: Int) -> Figures {
        var figures = Figures()
        if let output = run(["speed", "-elapsed", "-mr", "-seconds", String(seconds), "ecdsap256", "ed25519"]) {
            figures.ran = true
            for line in output.split(separator: "\n") {
                let fields = line.split(separator: ":").map(String.init)
                // +F4:<index>:<bits>:<sign/s>:<verify/s> for ECDSA; we asked for P-256 only.
                if fields.first == "+F4", fields.count >= 5, fields[2] == "256" {
                    figures.ecdsaP256Sign = Double(fields[3])
                    figures.ecdsaP256Verify = Double(fields[4])
                }
                // +F6:<index>:<bits>:<name>:<sign/s>:<verify/s> for EdDSA.
                if fields.first == "+F6", fields.count >= 6, fields[3] == "Ed25519" {
                    figures.ed25519Sign = Double(fields[4])
                    figures.ed25519Verify = Double(fields[5])
                }
            }
        }
        if let output = run(["speed", "-elapsed", "-mr", "-seconds", String(seconds), "-bytes", "64", "-hmac", "sha256"]) {
            for line in output.split(separator: "\n") {
                // +F:<index>:hmac(sha256):<bytes/s at 64-byte blocks>
                let fields = line.split(separator: ":").map(String.init)
                if fields.first == "+F", fields.count >= 4, fields[2] == "hmac(sha256)", let bytesPerSecond = Double(fields[3]) {
                    figures.hmacSHA256 = bytesPerSecond / 64
                }
            }
        }
        return figures
    }

    /// stdout of `openssl <arguments>`, or nil if it cannot be started or fails.
    static func run(_ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
