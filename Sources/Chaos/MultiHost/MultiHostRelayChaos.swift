import Foundation
import Relay
import Runner
import Store
import Synchronization

/// Several relay hosts on one PostgreSQL store, under SIGKILL: `serveRelays` `job serve-relay` processes take
/// triggers over real HTTP from concurrent clients while `sendWakeups` "hosts" each run `job send-wakeups` pass
/// after pass (several at once, as the timers of several hosts would), pushing to the HTTP/2 APNs stand-in. A
/// killer SIGKILLs a random serve-relay or running pass every `killInterval` (killed serve-relays are restarted on
/// a fresh port, killed passes are followed by the host's next), and the PostgreSQL server itself is SIGKILLed and
/// restarted once mid-run. The kills last through the trigger phase (and `killSecondsAfterTriggers` more, into
/// the pushes the debounce deferred). Then the kills stop and the passes run on undisturbed until nothing is pending (the
/// 30 s window of the last pushes has passed), and one last pass runs alone. With `pauseEvery`, passes are also
/// SIGSTOPped while pushing for longer than the window (`PassPauser`), so some are still pushing long after their
/// start. `PushLogModel` then judges the stand-in's log against the triggers the clients saw accepted: none lost,
/// none doubled within 30 s, only provisioned tokens.
///
/// Time: every process runs on the machine's real clock — no `--now`. A frozen `--now` per process cannot
/// order a trigger accepted by a long-running serve-relay against a push by a pass started later (both would read
/// the same instant or the wrong way round), while one real clock orders them as they happened. The stand-in logs
/// when each push arrived (doubles are judged by that) and its pass clock from its `apns-expiration` (the pass's
/// `now` + 3600 s, to the second; losses are judged by that); the clients note
/// the real time each accepted trigger was sent. The price is real waiting: the run lasts the trigger phase plus
/// one 30 s window, so the test runs a short trigger phase and `job-bench chaos --job relay-multihost` the full
/// size.
///
/// Each planned Device ID (2 tokens, operator-provisioned) gets `triggers / devices` triggers at random moments of
/// the trigger phase; `idleDevices` more are provisioned and never triggered (their tokens must never be pushed).
/// A trigger request cut off (a killed serve-relay, the store restarting: 503) is sent again to another
/// serve-relay until it is accepted, as a homeserver would retry.
package final class MultiHostRelayChaos {
    package struct Configuration: Sendable {
        package var devices = 500
        package var triggers = 1_000
        package var idleDevices = 50
        package var serveRelays = 3
        package var sendWakeups = 3
        package var clients = 6
        /// The trigger phase's planned length (triggers are spread over it; it lasts longer if the relay lags).
        package var triggerSeconds = 6.0
        /// Seconds between two kills, drawn uniformly.
        package var killInterval: ClosedRange<Double> = 0.1...0.4
        /// Kills go on this long after the last trigger was accepted (into the pushes the debounce deferred).
        package var killSecondsAfterTriggers = 0.0
        /// SIGKILL and restart the PostgreSQL server once, halfway through the trigger phase.
        package var restartPostgres = true
        /// While the kills last, a pass that has opened its APNs connection is SIGSTOPped every `pauseEvery` seconds
        /// (drawn uniformly) and SIGCONTed `pauseSeconds` later (`PassPauser`): passes still pushing more than one
        /// debounce window after they started. Nil: no pauses.
        package var pauseEvery: ClosedRange<Double>?
        package var pauseSeconds: ClosedRange<Double> = 32...50
        /// Longest undisturbed settling after the kills, before the run counts as not settled.
        package var settleTimeoutSeconds = 120.0
        package var seed: UInt64 = 0x4057
        package init() {}
    }

    /// The figures of one run.
    package struct Report: Sendable {
        package var devices = 0
        package var triggersPlanned = 0
        package var triggersAccepted = 0
        /// Trigger requests sent, retries included.
        package var triggerRequests = 0
        /// Requests answered 503 (store unavailable) or cut off (killed serve-relay, refused connection).
        package var triggerRetries = 0
        package var pushes = 0
        package var tokensPushed = 0
        /// The shortest time between two arrivals of one token's pushes at the stand-in (ms), if any token was pushed twice.
        package var closestPairMilliseconds: Int64?
        /// SIGKILLs sent (to a process still running when picked); the kills are those that ended a process.
        package var killsSent = 0
        package var serveRelayKills = 0
        package var sendWakeupsKills = 0
        package var passes = 0
        /// Passes by exit status (137: SIGKILLed).
        package var passExits: [Int32: Int] = [:]
        package var postgresRestarts = 0
        /// Passes SIGSTOPped with their APNs connection open, and the shortest and longest pause (s).
        package var pauses = 0
        package var pauseSeconds: ClosedRange<Double>?
        /// Tokens the judge found pushed twice within 30 s (by arrival), and (trigger, token) pairs it found lost.
        package var doubled = 0
        package var lost = 0
        /// Passes that found stored times ahead of their clock and moved them back (`clock.stored_time_in_future`).
        package var clockRepairs = 0
        package var violations: [String] = []
        package var triggerPhaseSeconds = 0.0
        package var settleSeconds = 0.0
        package var seconds = 0.0
    }

    package let executable: String
    package let directory: String
    package let configuration: Configuration
    /// Called with a line of progress (the bench prints it; tests ignore it).
    package var progress: @Sendable (String) -> Void = { _ in }

    package init(executable: String, directory: String, configuration: Configuration) {
        self.executable = executable
        self.directory = directory
        self.configuration = configuration
    }

    /// The Device ID of plan index `n`: 56 base-32 characters in eight dashed groups, distinct per `n`.
    package static func deviceID(_ n: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var random = ChaosRandom(seed: UInt64(n) &* 0x9E37_79B9_7F4A_7C15 &+ 0x4057)
        var chars = (0..<48).map { _ in alphabet[Int(random.next() >> 59)] }
        var x = UInt64(n)
        for _ in 0..<8 { chars.append(alphabet[Int(x & 31)]); x >>= 5 }
        return stride(from: 0, to: 56, by: 7).map { String(chars[$0..<$0 + 7]) }.joined(separator: "-")
    }

    /// The APNs token (hex) of token `j` of plan index `n`.
    package static func token(_ n: Int, _ j: Int) -> String { String(format: "%08x%02x", n, j) + String(repeating: "c3", count: 27) }

    package func run() throws -> Report {
        let c = configuration
        var report = Report()
        report.devices = c.devices
        report.triggersPlanned = c.triggers
        let started = Date()

        // The store: a cluster of its own (its server is killed mid-run), beside the run's other files, migrated by
        // `job`, seeded directly.
        let cluster = try PostgresCluster.start(parent: directory)
        defer { cluster.stop() }
        let store = try cluster.createDatabase("relay").url
        let keyFile = directory + "/store-key"
        var keyBytes = [UInt8](repeating: 0, count: 32)
        for i in keyBytes.indices { keyBytes[i] = UInt8.random(in: 0...255) }
        guard FileManager.default.createFile(atPath: keyFile, contents: Data(keyBytes), attributes: [.posixPermissions: 0o600]) else {
            throw ChaosFailure("cannot create \(keyFile)")
        }
        let standIn = try APNsStandInProcess(directory: directory, answers: [:])
        defer { standIn.stop() }
        let environment = ["HOME": directory, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "JOB_STORE_KEY_FILE": keyFile,
                           "STOREKIT_BUNDLE_ID": "eu.vaultsync.app", "STOREKIT_PRODUCT_IDS": "relay"].merging(standIn.environment) { $1 }
        let migrate = try ChaosProcess(executable: executable, environment: environment).run(["--store", store, "migrate"])
        guard migrate.exitCode == 0 else { throw ChaosFailure("job migrate failed: \(migrate.stderr)") }
        let provisioned = c.devices + c.idleDevices
        do {
            let db = try Database(path: store)
            let key = try StoreKeyLocation.resolve(environment: ["JOB_STORE_KEY_FILE": keyFile], storePath: store).load()
            try RegistrationSeeder.seed(database: db, storeKey: key, devices: provisioned, tokensPerDevice: 2,
                                        registeredAt: Date().unixMilliseconds - 600_000, triggeredAt: nil, deviceID: Self.deviceID,
                                        token: Self.token, result: { _, _ in .none }, rowsPerTransaction: 10_000)
            try db.write { db in try db.execute("INSERT INTO relay_entitlements (device_id, kind, verified_at) SELECT id, 'operator', created_at FROM relay_devices") }
        }
        progress("relay-multihost: \(provisioned) Device IDs provisioned (\(c.idleDevices) never triggered)")

        // The plan: each planned Device ID triggered triggers/devices times (the remainder spread), in random order.
        var random = ChaosRandom(seed: c.seed)
        var plan = (0..<c.triggers).map { $0 % c.devices }
        plan.shuffle(using: &random)

        let children = ChaosChildren()
        let fleet = RelayFleet(executable: executable, store: store, environment: environment, directory: directory, children: children)
        let stopServers = ChaosFlag(false)
        let stopPasses = ChaosFlag(false)
        let killing = ChaosFlag(true)
        let tally = Mutex(Tally())

        let done = DispatchGroup()
        func launchTracked(_ name: String, _ body: @escaping @Sendable () -> Void) {
            done.enter()
            let thread = Thread { body(); done.leave() }
            thread.name = name
            thread.start()
        }

        // Serve-relays: each slot restarts its server whenever it dies, until told to stop.
        for slot in 0..<c.serveRelays {
            launchTracked("serve-relay-\(slot)") {
                fleet.superviseServer(slot: slot, stop: stopServers) { status in
                    tally.withLock { t in
                        if status == 128 + SIGKILL { t.serveRelayKills += 1 } else { t.unexpected.append("a serve-relay exited \(status) by itself") }
                    }
                }
            }
        }
        guard fleet.waitForServers(c.serveRelays, seconds: 30) else { throw ChaosFailure("the serve-relays did not start: \(fleet.lastOutput())") }

        // Send-wakeups hosts: pass after pass, a short random pause between.
        let hostSeed = random.next()
        for host in 0..<c.sendWakeups {
            launchTracked("send-wakeups-\(host)") {
                var pause = ChaosRandom(seed: hostSeed &+ UInt64(host))
                while !stopPasses.isSet {
                    let status = fleet.runPass(host: host)
                    tally.withLock { t in
                        t.passExits[status, default: 0] += 1
                        // 75: the store's connection was lost or APNs unreachable; 69: the store was unavailable.
                        if ![0, 69, 75, 128 + SIGKILL].contains(status) { t.unexpected.append("a send-wakeups pass exited \(status)") }
                    }
                    usleep(UInt32.random(in: 0...200_000, using: &pause))
                }
            }
        }

        // The pauser, when asked for: long passes while the kills last (each pause ends in a resume).
        let pauser = PassPauser(children: children, apnsPort: standIn.port)
        let pauseSeed = c.seed ^ 0x9A05_E5EE_D000_0000  // not drawn from `random`: a seed's kills and triggers stay as they were
        if let every = c.pauseEvery {
            let seconds = c.pauseSeconds, maxPaused = max(1, c.sendWakeups - 1), note = progress
            launchTracked("pauser") {
                let figures = pauser.run(every: every, seconds: seconds, maxPaused: maxPaused, while: killing, seed: pauseSeed) { note("relay-multihost: " + $0) }
                tally.withLock { t in t.pauses = figures }
            }
        }

        // The killer: a random serve-relay or running pass every killInterval, while the kills last.
        let killSeed = random.next()
        let interval = c.killInterval
        launchTracked("killer") {
            var dice = ChaosRandom(seed: killSeed)
            while killing.isSet {
                usleep(UInt32(Double.random(in: interval, using: &dice) * 1e6))
                guard killing.isSet else { break }
                // A serve-relay at a random moment of its life; a pass at a random moment of its first 150 ms (most
                // passes last no longer); the other kind when none of the drawn kind is running.
                var role = ChaosChildren.Role.allCases.randomElement(using: &dice)!
                var victim = children.pick(role, using: &dice, excluding: pauser.pausedPIDs())
                for _ in 0..<100 where victim == nil && killing.isSet {
                    role = role == .serveRelay ? .sendWakeups : .serveRelay
                    victim = children.pick(role, using: &dice, excluding: pauser.pausedPIDs())
                    if victim == nil { usleep(10_000) }
                }
                guard let victim else { continue }
                if role == .sendWakeups { usleep(UInt32.random(in: 0...150_000, using: &dice)) }
                children.signal(victim, SIGKILL)
                tally.withLock { $0.killsSent += 1 }
            }
        }

        // The clients: trigger j is sent at its planned moment; retried until accepted.
        let triggerStart = Date()
        let clients = TriggerClients(plan: plan, seconds: c.triggerSeconds, fleet: fleet, deviceID: Self.deviceID)
        clients.start(c.clients, seed: random.next())
        if c.restartPostgres {
            usleep(UInt32(c.triggerSeconds / 2 * 1e6))
            progress("relay-multihost: SIGKILL of the PostgreSQL server")
            do {
                try cluster.kill9Server()
                usleep(500_000)
                try cluster.startServer()
                report.postgresRestarts += 1
            } catch {
                report.violations.append("the PostgreSQL server could not be restarted: \(error)")
                try? cluster.startServer()
            }
        }
        clients.waitUntilDone()
        report.triggerPhaseSeconds = Date().timeIntervalSince(triggerStart)
        if c.killSecondsAfterTriggers > 0 { usleep(UInt32(c.killSecondsAfterTriggers * 1e6)) }
        killing.set(false)
        progress("relay-multihost: trigger phase over after \(Int(report.triggerPhaseSeconds)) s, kills over; settling")

        // Settle undisturbed: until nothing is pending (due Device IDs wait out their 30 s window), then the hosts
        // stop after their pass in progress and one last pass runs alone.
        let settleStart = Date()
        var settled = false
        while Date().timeIntervalSince(settleStart) < c.settleTimeoutSeconds {
            if (try? Self.pending(store)) == 0 { settled = true; break }
            usleep(500_000)
        }
        stopPasses.set(true)
        stopServers.set(true)
        repeat { fleet.stopServers() } while done.wait(timeout: .now() + 0.2) == .timedOut
        if settled {
            let last = try ChaosProcess(executable: executable, environment: environment).run(["--store", store, "--json", "send-wakeups"])
            let counts = ChaosProcess.counts(last.stdout)
            if last.exitCode != 0 { report.violations.append("the last undisturbed pass exited \(last.exitCode.map(String.init) ?? "by signal"): \(last.stderr)") }
            if counts["pushes"] != 0 { report.violations.append("the last undisturbed pass still found \(counts["pushes"].map(String.init) ?? "?") push(es) to send") }
        } else {
            report.violations.append("not settled \(Int(c.settleTimeoutSeconds)) s after the kills: \((try? Self.pending(store)).map(String.init) ?? "?") Device ID(s) or token(s) pending")
        }
        report.settleSeconds = Date().timeIntervalSince(settleStart)

        // The verdicts: the model over the stand-in's log, then the store's own bookkeeping.
        let (accepted, attempted, figures) = clients.results()
        report.triggersAccepted = accepted.count
        report.triggerRequests = figures.requests
        report.triggerRetries = figures.retries
        report.violations += figures.violations
        var pushes: [PushLogModel.Push] = []
        var malformed = 0
        for request in try standIn.requests(since: 0) {
            if !(request["violation"] is NSNull) { malformed += 1 }
            guard let token = request["token"] as? String, let expiration = (request["expiration"] as? String).flatMap(Int64.init),
                  let arrived = (request["arrived_ms"] as? NSNumber)?.int64Value else { continue }
            pushes.append(PushLogModel.Push(token: token, passSecond: expiration - 3600, arrivedAtMilliseconds: arrived))
        }
        if malformed > 0 { report.violations.append("the stand-in refused \(malformed) malformed request(s)") }
        let model = PushLogModel(tokens: (0..<provisioned).map { [Self.token($0, 0), Self.token($0, 1)] })
        let verdict = model.verdict(accepted: accepted, attempted: attempted, pushes: pushes)
        report.violations += verdict.violations
        report.pushes = verdict.pushes
        report.tokensPushed = verdict.tokensPushed
        report.closestPairMilliseconds = verdict.closestPairMilliseconds
        report.doubled = verdict.doubled
        report.lost = verdict.lost
        for (device, number) in verdict.lostTokens { report.violations.append(try Self.storeState(store, device: device, token: number)) }
        if accepted.count != c.triggers { report.violations.append("\(c.triggers - accepted.count) trigger(s) never accepted") }
        if settled { report.violations += try Self.bookkeeping(store) }

        let t = tally.withLock { $0 }
        report.serveRelayKills = t.serveRelayKills
        report.killsSent = t.killsSent
        report.sendWakeupsKills = t.passExits[128 + SIGKILL] ?? 0
        report.passExits = t.passExits
        report.passes = t.passExits.values.reduce(0, +)
        report.pauses = t.pauses.pauses
        if t.pauses.pauses > 0 { report.pauseSeconds = t.pauses.shortest...t.pauses.longest }
        report.violations += t.unexpected.prefix(5)
        if t.unexpected.count > 5 { report.violations.append("… \(t.unexpected.count) unexpected exits in all") }
        report.clockRepairs = fleet.passLogCount("clock.stored_time_in_future", hosts: c.sendWakeups)
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Due work left: Device IDs with a trigger not yet consumed (one inside the window after the last push is
    /// debounced, never pushed), tokens awaiting a retry.
    static func pending(_ store: String) throws -> Int {
        let db = try Database(path: store)
        return try db.scalar("""
            SELECT (SELECT count(*) FROM relay_devices WHERE last_trigger_at IS NOT NULL
                                 AND (last_push_at IS NULL OR last_trigger_at >= last_push_at + \(PushLogModel.windowSeconds * 1000)))
                 + (SELECT count(*) FROM relay_tokens WHERE retry_due = 1)
            """) ?? -1
    }

    /// What the store holds for token `token` of plan index `device` (seeded in plan order: ids follow it).
    static func storeState(_ store: String, device: Int, token: Int) throws -> String {
        let db = try Database(path: store)
        guard let d = try db.queryOne("SELECT last_trigger_at, last_push_at FROM relay_devices WHERE id = ?", [Int64(device + 1)]),
              let t = try db.queryOne("SELECT sent_at, result_at, result_status, retry_due FROM relay_tokens WHERE id = ?", [Int64(device * 2 + token + 1)]) else {
            return "store: Device ID #\(device) not found"
        }
        func text(_ row: Row, _ i: Int) throws -> String { try row.get(i, as: Int64?.self).map(String.init) ?? "null" }
        return "store: Device ID #\(device) last_trigger_at \(try text(d, 0)) last_push_at \(try text(d, 1)); token \(token) sent_at \(try text(t, 0)) "
            + "result_at \(try text(t, 1)) status \(try text(t, 2)) retry_due \(try text(t, 3))"
    }

    /// After the settled run: no pass still marked running, no pass failed but the killed and the store-lost ones,
    /// no lease left behind.
    static func bookkeeping(_ store: String) throws -> [String] {
        let db = try Database(path: store)
        var violations: [String] = []
        let running: Int = try db.scalar("SELECT count(*) FROM job_runs WHERE outcome = 'running'") ?? -1
        if running != 0 { violations.append("ledger: \(running) pass(es) still marked running after the settled run") }
        let leases: Int = try db.scalar("SELECT count(*) FROM job_leases") ?? -1
        if leases != 0 { violations.append("\(leases) lease(s) still held after the settled run") }
        let unanswered: Int = try db.scalar("SELECT count(*) FROM relay_tokens WHERE sent_at IS NOT NULL AND result_status IS NULL") ?? -1
        if unanswered != 0 { violations.append("\(unanswered) pushed token(s) without a recorded answer") }
        return violations
    }

    /// What the owner threads count.
    struct Tally {
        var serveRelayKills = 0
        var killsSent = 0
        var passExits: [Int32: Int] = [:]
        var unexpected: [String] = []
        var pauses = PassPauser.Figures()
    }
}
