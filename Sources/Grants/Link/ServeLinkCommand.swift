import CShims
import Foundation
import Runner

/// `job serve-link`: answers peers over the authenticated link.
///
/// Without options it answers exactly one connection on stdin (systemd socket activation with `Accept=yes`, see
/// `jobs/serve-link.socket`). With `--listen HOST:PORT` it accepts connections itself and answers them at once on
/// threads of their own, up to `link.max-connections` in all and `link.max-connections-per-address` per source,
/// printing the bound address first (port 0 picks a free port); `--max-connections N` and `--idle-exit SECONDS`
/// end it. Either way the handshake, each message and the connection have deadlines (`LinkDeadlines`).
struct ServeLinkCommand: Command {
    let path = ["serve-link"]
    let summary = "answer peers' offers, pulls and revoke notices over mutual TLS 1.3 (one connection on stdin, or --listen)"
    let options: [OptionSpec] = [
        .value("--listen", "HOST:PORT", "accept connections on this address instead of answering stdin"),
        .value("--max-connections", "N", "with --listen: exit after answering N connections"),
        .value("--idle-exit", "SECONDS", "with --listen: exit after SECONDS with no connection open"),
    ]
    let discussion = """
        Each connection is mutual TLS 1.3 with self-signed Ed25519 certificates; the client's key is its endpoint id.
        ALPN picks /vnidrop/offer/1 (a live offer), /vnidrop/pull/1 (collect held offers), /vnidrop/revoke/1 or /vnidrop/cancel/1.
        Offers and pulls first prove a grant this node issued; blocked, unknown, expired and forged proofs all get the
        same 'lapsed' answer; only the grant's own holder hears 'revoked'. Offers are stored pending the user's decision, never
        accepted automatically, and raise a notification (JOB_NOTIFY_COMMAND when set).
        With --listen HOST:PORT the first stdout line is 'listening on HOST:PORT' (port 0 picks a free port);
        connections are answered at once, up to link.max-connections in all and link.max-connections-per-address
        from one IPv4 address or IPv6 /64; more are closed at once. Every connection must finish its TLS handshake
        within link.handshake-timeout-seconds, each message within link.message-timeout-seconds and the whole
        connection within link.connection-timeout-seconds (on stdin too).
        """

    func run(_ context: JobContext) throws {
        let maxConnections = try context.arguments.value("--max-connections").map { try positive($0, "--max-connections") }
        let idleExit = try context.arguments.value("--idle-exit").map { try positive($0, "--idle-exit") }
        let listen = try context.arguments.value("--listen").map(LinkAddress.parseListen)
        if listen == nil && (maxConnections != nil || idleExit != nil) {
            throw JobError.usage("--max-connections and --idle-exit need --listen")
        }
        let node = try Node(context)
        let tls = try TLSContext(identity: node.identity, role: .server)
        let deadlines = try LinkDeadlines.serving(context.settings)
        guard let listen else {
            var type: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(0, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else {
                throw JobError.usage("stdin is not a socket; run serve-link from serve-link.socket (Accept=yes) or give --listen HOST:PORT")
            }
            LinkServer(node: node, context: context).serve(fd: dup(0), tls: tls, deadlines: deadlines)
            return
        }
        let slots = LinkSlots(maxTotal: try context.settings.int(GrantsSettings.maxConnections),
                              maxPerSource: try context.settings.int(GrantsSettings.maxConnectionsPerAddress))
        // Loaded here, once: each serving thread's own store connection shares it.
        _ = try context.keyring()
        ServeLinkCommand.raiseDescriptorLimit()
        let (listener, port) = try Socket.listen(listen)
        defer { close(listener) }
        shim_install_termination_handlers()
        // A parent may have started us with SIGTERM blocked (the mask survives exec); this loop must hear it.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        sigprocmask(SIG_UNBLOCK, &stopSignals, nil)
        let bound = LinkAddress(host: listen.host, port: port)
        if context.jsonOutput { context.printJSON(["listening": .string(bound.text), "port": .number(port)]) }
        else { context.print("listening on \(bound.text)") }
        context.logger.info("link-listening")
        let tally = LinkListener(context: context, tls: tls, deadlines: deadlines, slots: slots)
            .run(listener, maxConnections: maxConnections, idleExit: idleExit)
        context.logger.info("link-stopped", ["connections": .int(tally.admitted), "refused": .int(tally.refused)])
    }

    /// Lifts the soft open-file limit toward the hard one: each open connection holds a socket, and each
    /// authenticated one its own store connection (the database, WAL and shared-memory files).
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 65_536))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    private func positive(_ text: String, _ name: String) throws -> Int {
        guard let value = Int(text), value > 0 else { throw JobError.usage("\(name) needs a whole number above 0") }
        return value
    }
}

extension LinkAddress {
    /// Parses a `--listen` address, where port 0 (pick a free port) is allowed.
    static func parseListen(_ text: String) throws -> LinkAddress {
        if text.hasSuffix(":0") {
            let parsed = try LinkAddress.parse(String(text.dropLast()) + "1")
            return LinkAddress(host: parsed.host, port: 0)
        }
        return try LinkAddress.parse(text)
    }
}
