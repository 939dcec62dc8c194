import Foundation
import HTTPServer
import NetAddress
import Runner
import Store

/// `job serve-relay`: the relay's HTTP API (`RelayAPI`) on libmicrohttpd, behind nginx.
///
/// Started by systemd socket activation (`jobs/serve-relay.socket`, `LISTEN_FDS`) or with `--listen HOST:PORT`
/// (the first stdout line is then `listening on HOST:PORT`; port 0 picks a free port). Runs until SIGTERM or
/// SIGINT. Configuration is checked before anything is served: a missing `STOREKIT_BUNDLE_ID` or
/// `STOREKIT_PRODUCT_IDS`, or an unreadable `STOREKIT_ROOT_CA_FILE`, exits 78.
struct ServeRelayCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["serve-relay"]
    let libraries: [LazyLibrary] = [.microhttpd]
    var environmentKeys: [(name: String, help: String)] { 
        StoreKitConfiguration.environmentKeys + [FanOutCaps.devicesKey, FanOutCaps.tokensKey, SignatureBudget.perMinuteKey, SignatureBudget.trustedProxiesKey]
    }
    let summary = "serve the relay's HTTP API (provision, trigger, status, health) behind nginx; socket-activated or --listen"
    let options: [OptionSpec] = [
        .value("--listen", "HOST:PORT", "listen here instead of on the socket systemd passes (port 0 picks a free port)"),
        .value("--threads", "N", "worker threads (default 4)"),
        .value("--max-connections", "N", "open connections in all (default 1024)"),
        .value("--max-connections-per-address", "N", "open connections from one client address; more are closed at accept (default 512, 0: no cap)"),
        .value("--idle-timeout", "SECONDS", "close a connection that sends nothing for this long (default 15)"),
        .value("--header-timeout", "SECONDS", "cut a connection whose request headers are not complete this long after it began waiting for them (default 10)"),
        .value("--request-timeout", "SECONDS", "cut a connection whose whole request is not complete this long after it began waiting for it (default 15)"),
        .value("--max-batch", "N", "requests whose writes share one durable commit, at most (default 256; 1 commits each alone, on PostgreSQL each in a transaction of its own on the pool)"),
        .flag("--no-push", "do not start send-wakeups passes when a push becomes due (the timer still runs them)"),
    ]
    let discussion = """
        Endpoints under /api/v1 (docs/protocols/relay-api.md): POST /provision, DELETE /provision, POST /trigger,
        POST /status, GET /health. Every request's state is in the store, so several serve-relay processes can
        serve one store. The writes of many requests share one durable commit (SQLite and PostgreSQL), and each
        request is answered once the commit holding its write returned (--max-batch caps how many; docs/group-commit.md).
        When a trigger makes a push due, a send-wakeups pass is started at once (its lease keeps it single).
        Requests: bodies up to 16 KiB, headers up to 32 KiB, a connection idle for 15 s is closed; a request's
        headers must be complete 10 s and its body 15 s after the connection began waiting for it (accepted, or its
        previous response sent), however slowly its bytes trickle; at most 512 connections from one address
        (docs/roles/relay.md, "Slow clients on the direct port"). Environment: STOREKIT_BUNDLE_ID,
        STOREKIT_PRODUCT_IDS, STOREKIT_ENVIRONMENTS (default Production), STOREKIT_ROOT_CA_FILE (tests and
        staging only), RELAY_MAX_DEVICES_PER_SUBSCRIPTION and RELAY_MAX_TOKENS_PER_DEVICE (fan-out caps,
        default 10 each), RELAY_SIGNATURE_CHECKS_PER_MINUTE (per client address, default 120) and
        RELAY_TRUSTED_PROXIES (whose X-Real-IP names the client, default 127.0.0.1,::1), and the APNS_* and RELAY_TRAILING_PUSH settings send-wakeups uses.
        """

    func run(_ context: JobContext) throws {
        let storeKit = try StoreKitConfiguration(environment: context.environment)
        let trailingPush = try WakeupDebounce.trailingPush(context.env)
        let caps = try FanOutCaps(context.env)
        let signatures = try SignatureBudget(context.env)
        var limits = HTTPServerLimits()
        let arguments = context.arguments
        limits.threads = try arguments.integer("--threads", in: 1...Int.max, default: limits.threads)
        limits.maxConnections = try arguments.integer("--max-connections", in: 1...Int.max, default: limits.maxConnections)
        limits.idleTimeoutSeconds = try arguments.integer("--idle-timeout", in: 1...Int.max, default: limits.idleTimeoutSeconds)
        limits.headerTimeoutSeconds = try arguments.integer("--header-timeout", in: 1...Int.max, default: limits.headerTimeoutSeconds)
        limits.requestTimeoutSeconds = try arguments.integer("--request-timeout", in: 1...Int.max, default: limits.requestTimeoutSeconds)
        limits.maxConnectionsPerAddress = try arguments.integer("--max-connections-per-address", in: 0...Int.max, default: 512,
                                                                needs: "a whole number, 0 or more")
        let maxBatch = try arguments.integer("--max-batch", in: 1...Int.max, default: 256)
        let keyring = try context.keyring()
        if storeKit.rootReplaced { context.logger.warn("storekit.root_replaced", ["source": "STOREKIT_ROOT_CA_FILE"]) }

        let socket: ListeningSocket
        do {
            if let listen = context.arguments.value("--listen") {
                guard let address = try? SocketAddress.parse(listen, allowingPortZero: true) else { throw JobError.usage("--listen needs HOST:PORT") }
                socket = try ListeningSocket.bind(address)
            } else if let passed = try ListeningSocket.fromSystemd(environment: context.environment) {
                socket = passed
            } else {
                throw JobError.usage("no socket: run serve-relay from serve-relay.socket or give --listen HOST:PORT")
            }
        } catch let failure as ListeningSocket.Failure {
            throw JobError.configuration("listen", failure.message)
        }

        let kicker = WakeupKicker(clock: context.clock, elapsed: context.monotonic, launch: Self.passLauncher(context))
        let push = !context.arguments.flag("--no-push")
        if push { kicker.start() }
        // One writer commits the writes of many requests at once (docs/group-commit.md). On PostgreSQL, --max-batch 1
        // keeps a transaction per request on the pool's connections, several at once, as before group commit there.
        let storePath = context.storePath
        let onPostgreSQL = Database.engine(forLocation: storePath) == .postgresql
        let writer = onPostgreSQL && maxBatch == 1 ? nil : GroupCommitWriter(path: storePath, maxBatch: maxBatch)
        var configured = RelayAPI(storeKit: storeKit, clock: context.clock, pool: DatabasePool(path: storePath), writer: writer, keyring: keyring,
                                  pushDue: { due in if push { kicker.request(dueAt: due) } })
        configured.trailingPush = trailingPush
        configured.caps = caps
        configured.signatures = signatures
        let api = configured
        StopSignals.listen()
        let server: HTTPServer
        let tally = AnswerTally()
        // The store file this server opened (SQLite): deleted, moved or replaced (a backup restored over it), or its
        // -wal removed, and every answer from then on would acknowledge a write no path leads to. It is checked
        // before and after each request and every second; once it fails the server answers 503 and stops (73).
        let identity = StoreFileIdentity.current(path: context.storePath)
        let storeGone = StoreGoneFlag()
        do {
            server = try HTTPServer(socket: socket, limits: limits, deferredHandler: { request, respond in
                if let identity, storeGone.isSet || !identity.isStillAtPath() {
                    storeGone.set()
                    respond(RelayAPI.error(503, "store-replaced", headers: [("Retry-After", "30")]))
                    return
                }
                api.handle(request) { response in
                    if let identity, (200..<300).contains(response.status), !identity.isStillAtPath() {
                        storeGone.set()
                        respond(RelayAPI.error(503, "store-replaced", headers: [("Retry-After", "30")]))
                        return
                    }
                    tally.record(response.status)
                    respond(response)
                }
            })
        } catch {
            throw JobError.unavailable("http-server", "the HTTP server could not start on the socket")
        }
        if let listen = context.arguments.value("--listen"), let asked = try? SocketAddress.parse(listen, allowingPortZero: true) {
            let bound = SocketAddress(host: asked.host, port: UInt16(socket.port)).text
            if context.jsonOutput { context.printJSON(["listening": .string(bound), "port": .number(socket.port)]) }
            else { context.print("listening on \(bound)") }
        }
        context.logger.info("relay-api.listening", ["threads": .int(limits.threads), "max_connections": .int(limits.maxConnections)])
        var ticks = 0
        StopSignals.wait(every: 0.1) {
            ticks += 1
            if ticks % 10 == 0, let identity, !identity.isStillAtPath() { storeGone.set() }
            return storeGone.isSet
        }
        server.stop()
        writer?.stop()
        kicker.stop()
        if storeGone.isSet {
            context.logger.error("relay-api.store_replaced")
            throw StoreFileIdentity.replaced
        }
        let answered = tally.summary
        let written = writer?.statistics ?? GroupCommitWriter.Statistics()
        context.logger.info("relay-api.stopped", ["answered_ok": .int(answered.ok), "refused": .int(answered.refused),
                                                  "rate_limited": .int(answered.rateLimited), "failed": .int(answered.failed),
                                                  "writes": .int(written.requests), "commits": .int(written.commits)])
    }

    /// Runs one `send-wakeups` pass of this same executable over the same store, clock and environment, and waits for it.
    /// The store goes in `JOB_STORE`, not on the command line: a PostgreSQL location may carry a password, and every
    /// local user can read a process's arguments (`ps`), not its environment.
    static func passLauncher(_ context: JobContext) -> @Sendable () -> Void {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var arguments: [String] = []
        if context.clock.isEmulated { arguments += ["--now", "@" + String(context.clock.now().timeIntervalSince1970)] }
        arguments.append("send-wakeups")
        let environment = context.environment.merging(["JOB_STORE": context.storePath]) { $1 }
        let logger = context.logger
        let fixedArguments = arguments
        return {
            // Not Foundation's Process: with serve-relay's connections open it can crash while starting a child
            // (ChildProcess says why), and the pass must inherit none of them.
            do throws(ChildProcess.SpawnFailure) {
                let ending = try ChildProcess.run(executable, fixedArguments, environment: environment)
                let code: Int32
                switch ending {
                case .exited(let status): code = status
                case .signalled(let signal): code = 128 + signal
                }
                logger.info("relay-api.pass_finished", ["exit_code": .int(Int(code))])
            } catch {
                // A pass that started and was reaped elsewhere may have run: its ledger row says how it ended.
                logger.warn(error.step == .spawn ? "relay-api.pass_not_started" : "relay-api.pass_end_unknown")
            }
        }
    }
}
