import Foundation
import QUIC
import Runner

/// `job serve-link`: answers peers over the authenticated link (QUIC on one UDP socket).
///
/// With `--listen HOST:PORT` it binds that UDP address itself, printing the bound address first (port 0 picks a
/// free port). Without it, it serves the UDP socket systemd passed (`ListenDatagram=`, `Accept=no`: file descriptor
/// 3 under `LISTEN_FDS=1`, or a UDP socket on stdin) until it has been idle for `link.idle-exit-seconds`.
/// Connections are answered at once on threads of their own, up to `link.max-connections` in all and
/// `link.max-connections-per-address` per source; `--max-connections N` and `--idle-exit SECONDS` end it. The
/// handshake, each message and the connection have deadlines (`LinkDeadlines`). All connections write through one
/// `GroupCommitWriter` and read from a small pool of connections (`LinkStore`); a reply that follows a write is sent
/// only after the commit holding it returned. A store file no longer at its path stops it with `store-replaced` (73).
struct ServeLinkCommand: Command {
    let path = ["serve-link"]
    let libraries: [LazyLibrary] = [.quic]
    let summary = "answer peers' offers, pulls and revoke notices over iroh-compatible QUIC (a UDP socket from systemd, or --listen)"
    let options: [OptionSpec] = [
        .value("--listen", "HOST:PORT", "bind this UDP address instead of serving the socket systemd passed"),
        .value("--max-connections", "N", "exit after answering N connections"),
        .value("--idle-exit", "SECONDS", "exit after SECONDS with no connection open (default under systemd: link.idle-exit-seconds)"),
        .value("--max-batch", "N", "requests whose writes share one durable commit, at most (default 256; 1 commits each alone)"),
    ]
    let discussion = """
        The link is QUIC v1 over UDP with TLS 1.3 and raw Ed25519 public keys (RFC 7250), as iroh's direct connections:
        the server's key is the endpoint id the peer dialled, the client's key is its endpoint id.
        ALPN picks /vnidrop/offer/1 (a live offer), /vnidrop/pull/1 (collect held offers), /vnidrop/revoke/1 or /vnidrop/cancel/1.
        Offers and pulls first prove a grant this node issued; blocked, unknown, expired and forged proofs all get the
        same 'lapsed' answer; only the grant's own holder hears 'revoked'. Offers are stored pending the user's decision, never
        accepted automatically, and raise a notification (JOB_NOTIFY_COMMAND when set).
        With --listen HOST:PORT the first stdout line is 'listening on HOST:PORT' (port 0 picks a free port). Without it,
        serve-link serves the UDP socket systemd passed (jobs/serve-link.socket, ListenDatagram=, Accept=no) and exits after
        link.idle-exit-seconds with no connection open. Connections are answered at once, up to link.max-connections in all
        and link.max-connections-per-address from one IPv4 address or IPv6 /64; packets starting more are dropped (when
        the whole table is full, a proven newcomer first ends the oldest half-open handshake, else the longest-idle
        connection that has not proven a grant, else one idle a second between messages). A
        handshake whose address is not yet proven (by a QUIC Retry or a completed handshake) holds no slot; once
        link.validate-addresses-above of those are half-open, a new client is first sent a Retry, so a spoofed
        source address cannot hold a slot. Every
        connection must finish its handshake within link.handshake-timeout-seconds, each message within
        link.message-timeout-seconds and the whole connection within link.connection-timeout-seconds.
        The writes of all connections share durable commits (at most --max-batch requests each, docs/group-commit.md),
        and an offer, pull, revoke, cancel or decision is answered once the commit holding its write returned.
        When the store file (or its -wal) is no longer the one serve-link opened (deleted, moved, or replaced by a
        backup), it answers nothing more and exits 73 (store-replaced).
        """

    func run(_ context: JobContext) throws {
        let maxConnections = try context.arguments.integer("--max-connections", in: 1...Int.max)
        var idleExit = try context.arguments.integer("--idle-exit", in: 1...Int.max)
        let listen = try context.arguments.value("--listen").map(LinkAddress.parseListen)
        let maxBatch = try context.arguments.integer("--max-batch", in: 1...Int.max, default: 256)
        let node = try Node(context)
        let identity = try LinkIdentity.quic(node.identity)
        let deadlines = try LinkDeadlines.serving(context.settings)
        let slots = LinkSlots(maxTotal: try context.settings.int(GrantsSettings.maxConnections),
                              maxPerSource: try context.settings.int(GrantsSettings.maxConnectionsPerAddress), clock: context.monotonic)
        let alpns = LinkProtocolName.allCases.map(\.rawValue)
        var timeouts = LinkIdentity.timeouts(deadlines)
        timeouts.validateAbove = try context.settings.int(GrantsSettings.validateAbove)
        let endpoint: QUICEndpoint
        if let listen {
            guard let address = QUICAddress.resolve(host: listen.host, port: listen.port, passive: true).first else {
                throw JobError.usage("the --listen host cannot be resolved")
            }
            do {
                endpoint = try QUICEndpoint.listen(on: address, identity: identity, alpns: alpns, timeouts: timeouts, shouldStop: LinkConnection.stopCondition)
            } catch {
                throw JobError.unavailable("listen-failed", "cannot listen on the --listen address (in use, or not this host's)")
            }
        } else {
            guard let fd = ServeLinkCommand.activatedSocket() else {
                throw JobError.usage("no UDP socket was passed; run serve-link from serve-link.socket (ListenDatagram=) or give --listen HOST:PORT")
            }
            endpoint = try QUICEndpoint.adopt(socket: fd, identity: identity, alpns: alpns, timeouts: timeouts, shouldStop: LinkConnection.stopCondition)
            if idleExit == nil { idleExit = try context.settings.int(GrantsSettings.idleExit) }
        }
        // Loaded here, once: the writer's and the read connections share it.
        _ = try context.keyring()
        let store = LinkStore(context: context, node: node, maxBatch: maxBatch)
        defer { store.stop() }
        ServeLinkCommand.raiseDescriptorLimit()
        StopSignals.listen()
        if let listen {
            let bound = LinkAddress(host: listen.host, port: endpoint.port)
            if context.jsonOutput { context.printJSON(["listening": .string(bound.text), "port": .number(endpoint.port)]) }
            else { context.print("listening on \(bound.text)") }
        }
        context.logger.info("link-listening")
        let tally = LinkListener(context: context, store: store, deadlines: deadlines, slots: slots, maxConnections: maxConnections)
            .run(endpoint, idleExit: idleExit)
        store.stop()
        if store.isReplaced {
            context.logger.error("link-store-replaced")
            throw StoreFileIdentity.replaced
        }
        let written = store.writer.statistics
        context.logger.info("link-stopped", ["connections": .int(tally.admitted), "refused": .int(tally.refused),
                                             "evicted": .int(tally.evicted), "writes": .int(written.requests),
                                             "commits": .int(written.commits)])
    }

    /// The UDP socket systemd passed: fd 3 when `LISTEN_FDS=1` names this process, else stdin if it is a datagram
    /// socket; nil otherwise.
    static func activatedSocket() -> Int32? {
        let environment = ProcessInfo.processInfo.environment
        if environment["LISTEN_FDS"] == "1", environment["LISTEN_PID"].flatMap(Int32.init) == getpid(), isDatagramSocket(3) { return 3 }
        return isDatagramSocket(0) ? dup(0) : nil
    }

    private static func isDatagramSocket(_ fd: Int32) -> Bool {
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == Int32(SOCK_DGRAM.rawValue)
    }

    /// Lifts the soft open-file limit toward the hard one: while many connections read at once, more read connections
    /// (the database, WAL and shared-memory files each) are open than the pool keeps.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 65_536))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
