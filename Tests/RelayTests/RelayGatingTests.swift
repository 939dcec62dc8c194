import Foundation
import HTTPClient
import Store
import Testing
import TestSupport

/// What lets a trigger through (verified StoreKit, operator-provisioned, legacy until the cutoff), what
/// provisioning refuses as stale or conflicting, and the limits: rate limits shared by processes, answer codes,
/// caps and slow clients.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct RelayGatingTests {
    let device = Fixture.deviceID(51)
    let token = Fixture.token(51)

    func cli(_ front: RelayFront, _ arguments: [String], now: String? = nil) throws -> JobProcess.Result {
        try JobProcess.run(["--store", front.store] + (now.map { ["--now", $0] } ?? []) + arguments, environment: front.environment)
    }

    @Test(arguments: StoreKind.allCases) func theLegacyNumericIdRefreshesOnlyAnExactLegacyRegistrationAndOnlyUntilTheCutoff(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        let legacyID = "1000000000000001"
        let imported = try cli(front, ["relay", "register", "--device-id", device, "--apns-token", token, "--legacy-transaction-id", legacyID], now: "2026-09-01T00:00:00Z")
        #expect(imported.exitCode == 0 && imported.stdout.contains("legacy"), "\(imported.stderr)")
        let before = try front.startServer(["--no-push"], now: "2026-10-31T23:59:00Z")
        let after = try front.startServer(["--no-push"], now: "2026-11-01T00:00:00Z")
        defer { front.stop() }
        let beforeURL = "http://127.0.0.1:\(before)", afterURL = "http://127.0.0.1:\(after)"
        func provision(_ body: [String: Any], _ base: String) throws -> Int { try front.send("POST", "/api/v1/provision", body, base: base).status }

        #expect(try provision(["device_id": device, "apns_token": token, "transaction_id": legacyID], beforeURL) == 200)
        // Never creates or widens a registration: another token, another id, another Device ID are all 409.
        #expect(try provision(["device_id": device, "apns_token": Fixture.token(52), "transaction_id": legacyID], beforeURL) == 409)
        #expect(try provision(["device_id": device, "apns_token": token, "transaction_id": "1000000000000002"], beforeURL) == 409)
        #expect(try provision(["device_id": Fixture.deviceID(52), "apns_token": token, "transaction_id": legacyID], beforeURL) == 409)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: beforeURL).status == 202)
        let shown = try cli(front, ["--json", "relay", "show"])
        #expect(try shown.jsonObject()["tokens"] as? Int == 1 && (try shown.jsonObject()["legacy_devices"] as? Int) == 1)

        // From 2026-11-01 the numeric id is refused and the legacy registration no longer lets triggers through.
        #expect(try provision(["device_id": device, "apns_token": token, "transaction_id": legacyID], afterURL) == 403)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: afterURL).status == 402)
        // A status request never accepts legacy evidence.
        #expect(try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": legacyID], base: beforeURL).status == 403)
    }

    @Test(arguments: StoreKind.allCases) func operatorProvisionedDevicesPassUntilUnregisteredOrTheirExpiryAndShowTellsTheKindsApart(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        let other = Fixture.deviceID(53)
        #expect(try cli(front, ["relay", "register", "--device-id", device, "--apns-token", token], now: "2026-05-01T00:00:00Z").exitCode == 0)
        #expect(try cli(front, ["relay", "register", "--device-id", other, "--apns-token", Fixture.token(53), "--expires", "2026-06-01T00:00:00Z"],
                        now: "2026-05-01T00:00:00Z").exitCode == 0)
        #expect(try cli(front, ["relay", "register", "--device-id", other, "--apns-token", token, "--expires", "someday"]).exitCode == 64)
        let port = try front.startServer(["--no-push"], now: "2026-07-01T00:00:00Z")
        defer { front.stop() }
        let base = "http://127.0.0.1:\(port)"
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": other], base: base).status == 402)
        let shown = try cli(front, ["--json", "relay", "show"]).jsonObject()
        #expect(shown["operator_devices"] as? Int == 2 && shown["storekit_devices"] as? Int == 0 && shown["devices_awaiting_push"] as? Int == 1)
        // The existing commands keep working: relay trigger records, unregister removes (and the gate closes).
        #expect(try cli(front, ["relay", "unregister", "--device-id", device, "--apns-token", token]).exitCode == 0)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 403)
    }

    @Test(arguments: StoreKind.allCases) func revokedEvidenceStopsTriggersAndOlderOrConflictingTransactionsAre409(_ kind: StoreKind) throws {
        let chain = try StoreKitChain()
        let front = try RelayFront(kind, chain: chain)
        let port = try front.startServer(["--no-push"])
        defer { front.stop() }
        let base = "http://127.0.0.1:\(port)"
        // Signed after the test certificates were made (their validity starts now), the older one 5 minutes before the current.
        let now = Date().addingTimeInterval(600)
        let current = try chain.jws(StoreKitChain.payload(now: now))
        let older = try chain.jws(StoreKitChain.payload(now: now.addingTimeInterval(-300)))
        let another = try chain.jws(StoreKitChain.payload(now: now, original: "2000000999999999"))
        let body = { (jws: String) -> [String: Any] in ["device_id": self.device, "apns_token": self.token, "transaction_id": jws] }

        #expect(try front.send("POST", "/api/v1/provision", body(current), base: base).status == 200)
        let stale = try front.send("POST", "/api/v1/provision", body(older), base: base)
        #expect(stale.status == 409 && stale.json["error"] as? String == "stale-transaction", "\(stale.json)")
        let conflicting = try front.send("POST", "/api/v1/provision", body(another), base: base)
        #expect(conflicting.status == 409 && conflicting.json["error"] as? String == "conflicting-subscription")
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202)

        // Apple revoked it: the newer signed evidence is refused (403) and also closes the gate for this Device ID.
        let revoked = try chain.jws(StoreKitChain.payload(now: now.addingTimeInterval(1), ["revocationDate": Int64(now.timeIntervalSince1970 * 1000)]))
        #expect(try front.send("POST", "/api/v1/provision", body(revoked), base: base).status == 403)
        let refused = try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base)
        #expect(refused.status == 403 && refused.json["error"] as? String == "subscription-revoked")
        #expect(try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": current], base: base).status == 403)
    }

    /// A revocation shown only to `/status` closes the gate too: the next trigger is 403, not 202. An older
    /// revoked transaction than the one stored changes nothing.
    @Test(arguments: StoreKind.allCases) func aRevocationShownOnlyToStatusClosesTheGateForTriggers(_ kind: StoreKind) throws {
        let chain = try StoreKitChain()
        let front = try RelayFront(kind, chain: chain)
        let port = try front.startServer(["--no-push"])
        defer { front.stop() }
        let base = "http://127.0.0.1:\(port)"
        let now = Date().addingTimeInterval(600)
        let current = try chain.jws(StoreKitChain.payload(now: now))
        #expect(try front.send("POST", "/api/v1/provision", ["device_id": device, "apns_token": token, "transaction_id": current], base: base).status == 200)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202)

        let olderRevoked = try chain.jws(StoreKitChain.payload(now: now.addingTimeInterval(-300), ["revocationDate": Int64(now.timeIntervalSince1970 * 1000)]))
        let stale = try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": olderRevoked], base: base)
        #expect(stale.status == 403 && stale.json["error"] as? String == "subscription-revoked")
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202, "older evidence leaves the gate open")

        let revoked = try chain.jws(StoreKitChain.payload(now: now.addingTimeInterval(1), ["revocationDate": Int64(now.timeIntervalSince1970 * 1000)]))
        let status = try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": revoked], base: base)
        #expect(status.status == 403 && status.json["error"] as? String == "subscription-revoked")
        let refused = try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base)
        #expect(refused.status == 403 && refused.json["error"] as? String == "subscription-revoked", "\(refused.json)")
    }

    @Test(arguments: StoreKind.allCases) func aTriggerInsideTheDebounceWindowIsObservedAtOnceButNeverAnotherPush(_ kind: StoreKind) throws {
        let apns = try APNsStandIn()
        defer { apns.stop() }
        let front = try RelayFront(kind, chain: nil, extra: apns.environment())
        #expect(try cli(front, ["relay", "register", "--device-id", device, "--apns-token", token]).exitCode == 0)
        let first = try front.startServer(["--no-push"], now: "@1800000000")
        let second = try front.startServer(["--no-push"], now: "@1800000010")
        defer { front.stop() }
        func pass(_ now: String) throws -> [String: Any] {
            let result = try JobProcess.run(["--store", front.store, "--now", now, "--json", "send-wakeups"], environment: front.environment)
            #expect(result.exitCode == 0, "\(result.stderr)")
            return try result.jsonObject()["counts"] as? [String: Any] ?? [:]
        }
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: "http://127.0.0.1:\(first)").status == 202)
        #expect(try pass("@1800000001")["delivered"] as? Int == 1)
        // 9 s after that push: accepted and observed (the time is stored before the debounce) ...
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: "http://127.0.0.1:\(second)").status == 202)
        let observed: Int64? = try Database(path: front.store).scalar("SELECT last_trigger_at FROM relay_devices")
        #expect(observed == 1_800_000_010_000)
        #expect(try cli(front, ["--json", "relay", "show"]).jsonObject()["devices_awaiting_push"] as? Int == 0)
        // ... but never another push: not inside the 30 s window, nor once it has passed (the debounce of docs/protocols/relay-api.md).
        #expect(try pass("@1800000020")["pushes"] as? Int == 0)
        #expect(try pass("@1800000032")["pushes"] as? Int == 0)
        #expect(try apns.received().count == 1)
    }

    @Test(arguments: StoreKind.allCases) func answerCodesForRoutesMethodsMediaTypesMalformedJsonAndOversizedBodies(_ kind: StoreKind) throws {
        try #require(RelayFront.isNginxInstalled, "Debian's nginx package is required")
        let front = try RelayFront(kind, chain: nil)
        try front.startServer(["--no-push"])
        try front.startNginx()
        defer { front.stop() }
        for base in [front.url, front.directURL] {
            #expect(try front.send("GET", "/api/v1/nope", base: base).status == 404)
            #expect(try front.send("POST", "/api/v3/trigger", ["device_id": device], base: base).status == 404)
            // The authenticated route exists (docs/protocols/trigger-v2.md): a v1 body there is refused for its missing members.
            let v1Body = try front.send("POST", "/api/v2/trigger", ["device_id": device], base: base)
            #expect(v1Body.status == 400 && v1Body.json["error"] as? String == "missing-member")
            #expect(try front.send("GET", "/api/v2/trigger", base: base).response.header("Allow") == "POST")
            let wrongMethod = try front.send("GET", "/api/v1/trigger", base: base)
            #expect(wrongMethod.status == 405 && wrongMethod.response.header("Allow") == "POST")
            #expect(try front.send("POST", "/api/v1/trigger", raw: Array("device_id=x".utf8), contentType: "application/x-www-form-urlencoded", base: base).status == 415)
            for malformed in ["{\"device_id\":", "[]", "{\"device_id\":\"\(device)\",\"device_id\":\"\(Fixture.deviceID(54))\"}", "{\"device_id\":\"nope\"}",
                              "{\"device_id\":7}", "{\"device_id\":\"\(device)\"} trailing"] {
                let answer = try front.send("POST", "/api/v1/trigger", raw: Array(malformed.utf8), base: base)
                #expect(answer.status == 400, "\(malformed) → \(answer.status)")
            }
            let big = Array("{\"device_id\":\"\(device)\",\"pad\":\"\(String(repeating: "x", count: 20_000))\"}".utf8)
            #expect(try front.send("POST", "/api/v1/trigger", raw: big, base: base).status == 413)
        }
        // Straight to serve-relay, a body announced too large is refused before it is read.
        let answer = try RawConnection(port: front.serverPorts[0]).exchange(
            "POST /api/v1/trigger HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer)")
    }

    @Test(arguments: StoreKind.allCases) func rateLimitsPerDeviceIdHoldAcrossTwoServeRelayProcessesOnOneStore(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        #expect(try cli(front, ["relay", "register", "--device-id", device, "--apns-token", token]).exitCode == 0)
        let a = try front.startServer(["--no-push"]), b = try front.startServer(["--no-push"])
        defer { front.stop() }
        var statuses: [Int] = []
        for n in 0..<10 { statuses.append(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: "http://127.0.0.1:\(n % 2 == 0 ? a : b)").status) }
        #expect(statuses == Array(repeating: 202, count: 10))
        let limited = try front.send("POST", "/api/v1/trigger", ["device_id": device], base: "http://127.0.0.1:\(b)")
        #expect(limited.status == 429)
        let retryAfter = Int(limited.response.header("Retry-After") ?? "") ?? 0
        #expect((1...60).contains(retryAfter))
        // Another Device ID has its own budget; status is limited too (12 a minute).
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": Fixture.deviceID(55)], base: "http://127.0.0.1:\(a)").status == 403)
        var statusCodes: [Int] = []
        for _ in 0..<13 { statusCodes.append(try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": "x.y.z"], base: "http://127.0.0.1:\(a)").status) }
        #expect(statusCodes.prefix(12).allSatisfy { $0 == 400 } && statusCodes.last == 429, "\(statusCodes)")
        // Each process logs only counts of what it answered when it stops.
        let results = front.stop()
        let logs = results.map(\.stderr).joined(separator: "\n")
        // a answered 5 triggers, 1 refused trigger, 12 refused and 1 limited status; b 5 triggers and 1 limited trigger.
        #expect(logs.contains("event=relay-api.stopped answered_ok=5 refused=13 rate_limited=1 failed=0"), "\(logs)")
        #expect(logs.contains("event=relay-api.stopped answered_ok=5 refused=0 rate_limited=1 failed=0"), "\(logs)")
        #expect(!logs.contains(device))
    }

    @Test(arguments: StoreKind.allCases) func slowAndIdleClientsAreCutAndCannotHoldTheServer(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        let port = try front.startServer(["--no-push", "--idle-timeout", "2", "--request-timeout", "2", "--max-connections", "400"])
        defer { front.stop() }
        // 200 connections that never finish their headers.
        var idle: [RawConnection] = []
        for _ in 0..<200 {
            let connection = try RawConnection(port: port)
            connection.send("POST /api/v1/trigger HTTP/1.1\r\nHost: x\r\n")
            idle.append(connection)
        }
        let started = Date()
        let health = try front.send("GET", "/api/v1/health", base: "http://127.0.0.1:\(port)")
        #expect(health.status == 200 && Date().timeIntervalSince(started) < 10, "served while 200 idle connections are open")

        // A body trickled one byte every 300 ms is cut at the request deadline, long before it could finish (30 s).
        let trickle = try RawConnection(port: port)
        trickle.send("POST /api/v1/trigger HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        let trickleStart = Date()
        var cut = false
        while Date().timeIntervalSince(trickleStart) < 15 {
            if !trickle.send("x") || trickle.isClosed() { cut = true; break }
            usleep(300_000)
        }
        #expect(cut && Date().timeIntervalSince(trickleStart) < 10, "the trickling request was cut at its deadline")
        // The idle ones were closed by the idle timeout.
        #expect(idle.prefix(20).allSatisfy { $0.isClosed(waiting: 5) })
    }
}

extension RelayGatingTests {
    /// Started the way serve-relay.socket starts it: systemd's own `systemd-socket-activate` binds the socket and
    /// passes it (`LISTEN_FDS`, `LISTEN_PID`); serve-relay answers on it without --listen.
    @Test(arguments: StoreKind.allCases) func serveRelayAnswersOnTheSocketSystemdPasses(_ kind: StoreKind) throws {
        let activate = "/usr/bin/systemd-socket-activate"
        try #require(FileManager.default.isExecutableFile(atPath: activate), "systemd's systemd-socket-activate is required")
        let front = try RelayFront(kind, chain: nil)
        let (process, port, health) = try startSocketActivated(activate, front)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(health == 200)
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: "http://127.0.0.1:\(port)").status == 403)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// Starts serve-relay under `systemd-socket-activate` on a free loopback port and waits up to 15 s for the socket
    /// to be bound and then for serve-relay's health answer. The port is free when picked, but another test may bind
    /// it before `systemd-socket-activate` does: that one failure (its "Address already in use" line) is retried on a
    /// new port, up to three times.
    private func startSocketActivated(_ activate: String, _ front: RelayFront) throws -> (Process, port: Int, health: Int?) {
        for _ in 1...3 {
            let port = unusedPort()
            let errors = FileManager.default.temporaryDirectory.appendingPathComponent("activate-\(UUID().uuidString).err")
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            defer { try? FileManager.default.removeItem(at: errors) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: activate)
            // systemd-socket-activate passes only the variables given with -E.
            process.arguments = ["-l", "127.0.0.1:\(port)"] + front.environment.flatMap { ["-E", "\($0.key)=\($0.value)"] }
                + ["--", JobProcess.executablePath, "--store", front.store, "serve-relay", "--no-push"]
            process.environment = front.environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: errors)
            try process.run()
            // It says "Listening on 127.0.0.1:PORT as 3." once bound, and starts serve-relay at the first connection;
            // until that line the port may be another process's.
            let deadline = Date().addingTimeInterval(15)
            let logged = { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }
            while process.isRunning && !logged().contains("Listening on 127.0.0.1:\(port)") && Date() < deadline { usleep(20_000) }
            if !process.isRunning, process.terminationStatus != 0, logged().contains("Address already in use") { continue }
            var health: Int?
            while health != 200 && process.isRunning && Date() < deadline {
                health = try? front.send("GET", "/api/v1/health", base: "http://127.0.0.1:\(port)").status
                if health != 200 { usleep(50_000) }
            }
            return (process, port, health)
        }
        throw TestFailure("three free ports were taken before systemd-socket-activate could bind them")
    }

    @Test(arguments: StoreKind.allCases) func idleClientsHoldingEveryConnectionSlotAreCutSoTheNextClientIsServed(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        let port = try front.startServer(["--no-push", "--max-connections", "8", "--threads", "2", "--idle-timeout", "2"])
        defer { front.stop() }
        // Eight clients take every slot and send nothing; the ninth waits in the backlog, not refused.
        var held: [RawConnection] = []
        for _ in 0..<8 { held.append(try RawConnection(port: port)) }
        usleep(200_000)
        let started = Date()
        let health = try front.send("GET", "/api/v1/health", base: "http://127.0.0.1:\(port)")
        #expect(health.status == 200 && Date().timeIntervalSince(started) < 10, "served once the idle timeout freed a slot")
        #expect(held.allSatisfy { $0.isClosed(waiting: 5) })
    }
}

/// A raw loopback TCP connection for requests no HTTP client would send (half headers, trickled bodies).
final class RawConnection {
    let fd: Int32

    /// Connects to 127.0.0.1:`port`, from `source` when given (any 127.0.0.0/8 address: another client address).
    init(port: Int, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0 else { close(fd); throw TestFailure("cannot bind \(source)") }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { close(fd); throw TestFailure("cannot connect") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Whether the peer closed the connection (waiting up to `waiting` seconds for it).
    func isClosed(waiting: Double = 0) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var ready: Int32
        repeat { ready = poll(&poller, 1, Int32(waiting * 1000)) } while ready < 0 && errno == EINTR  // another test's SIGCHLD
        guard ready > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n == 0 { return true }
            if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        }
    }

    /// Sends `request` and reads the answer until the peer closes or 5 s pass.
    func exchange(_ request: String) -> String {
        send(request)
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { if !answer.isEmpty { break }; continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
