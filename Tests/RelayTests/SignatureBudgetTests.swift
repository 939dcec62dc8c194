import Foundation
import Testing
import TestSupport

/// Work a client can pick is bounded by its address, not by the Device IDs it invents (docs/roles/relay.md,
/// "Limits per client address"): serve-relay's signature budget, and the shipped nginx site's request rate.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct SignatureBudgetTests {
    /// A `/status` with a JWS-shaped junk transaction (it costs a signature check) for Device ID `n`, sent from
    /// `source` with an optional `X-Real-IP`; returns the whole answer.
    func statusAnswer(port: Int, from source: String? = nil, realIP: String? = nil, device n: Int) throws -> String {
        let body = "{\"device_id\":\"\(Fixture.deviceID(n))\",\"signed_transaction\":\"x.y.z\"}"
        let connection = try RawConnection(port: port, from: source)
        return connection.exchange("POST /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                                   + (realIP.map { "X-Real-IP: \($0)\r\n" } ?? "") + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
    }

    /// `statusAnswer`'s status code.
    func status(port: Int, from source: String? = nil, realIP: String? = nil, device n: Int) throws -> Int {
        let answer = try statusAnswer(port: port, from: source, realIP: realIP, device: n)
        return Int(answer.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func signatureChecksAreBoundedPerClientAddressWhateverDeviceIDsItUses() throws {
        let front = try RelayFront(.sqlite, chain: nil, extra: ["RELAY_SIGNATURE_CHECKS_PER_MINUTE": "5"])
        let port = try front.startServer(["--no-push"])
        defer { front.stop() }
        // Six Device IDs from one address: five checks, then 429 with Retry-After.
        let direct = try (0..<6).map { try status(port: port, device: 100 + $0) }
        #expect(direct == [400, 400, 400, 400, 400, 429], "\(direct)")
        let limited = try statusAnswer(port: port, device: 106)
        let retryAfter = limited.split(separator: "\r\n").first { $0.lowercased().hasPrefix("retry-after:") }.flatMap { Int($0.split(separator: " ").last ?? "") }
        #expect(limited.hasPrefix("HTTP/1.1 429") && (1...60).contains(retryAfter ?? 0), "\(limited.prefix(200))")
        // Another address has its own budget.
        #expect(try status(port: port, from: "127.0.0.2", device: 110) == 400)
        // Behind nginx (127.0.0.1, trusted by default) the client is the X-Real-IP it names.
        #expect(try status(port: port, realIP: "192.0.2.7", device: 111) == 400)
        // From an untrusted peer, X-Real-IP is ignored: inventing addresses buys no more checks.
        let spoofed = try (0..<6).map { try status(port: port, from: "127.0.0.3", realIP: "198.51.100.\($0 + 1)", device: 120 + $0) }
        #expect(spoofed == [400, 400, 400, 400, 400, 429], "\(spoofed)")
    }

    @Test func aBadSignatureBudgetOrProxyListIsAConfigurationError() throws {
        for (key, value) in [("RELAY_SIGNATURE_CHECKS_PER_MINUTE", "0"), ("RELAY_SIGNATURE_CHECKS_PER_MINUTE", "many"), ("RELAY_TRUSTED_PROXIES", "127.0.0.1,nginx")] {
            let front = try RelayFront(.sqlite, chain: nil, extra: [key: value])
            let result = try JobProcess.run(["--store", front.store, "serve-relay", "--listen", "127.0.0.1:0"], environment: front.environment)
            #expect(result.exitCode == 78 && result.stderr.contains(key) && !result.stderr.contains("nginx\n"), "\(key)=\(value): \(result.stderr)")
        }
    }

    @Test func theShippedNginxSiteAnswers429BeyondItsRequestRatePerAddress() throws {
        try #require(RelayFront.isNginxInstalled, "Debian's nginx package is required")
        let front = try RelayFront(.sqlite, chain: nil)
        try front.startServer(["--no-push"])
        try front.startNginx()
        defer { front.stop() }
        // 5 a second with a burst of 60: 120 requests as fast as one client can send them cannot all pass.
        var codes: [Int] = []
        let started = Date()
        for _ in 0..<120 { codes.append(try front.send("GET", "/api/v1/health").status) }
        let seconds = Date().timeIntervalSince(started)
        let passed = codes.filter { $0 == 200 }.count
        #expect(codes.prefix(50).allSatisfy { $0 == 200 }, "the burst passes: \(codes)")
        #expect(codes.contains(429) && codes.allSatisfy { $0 == 200 || $0 == 429 }, "\(codes)")
        #expect(Double(passed) <= 61 + 5 * seconds + 5, "\(passed) passed in \(seconds) s")
    }
}
