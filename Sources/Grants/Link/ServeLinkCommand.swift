import CShims
import Foundation
import Runner

/// `job serve-link`: answers peers over the authenticated link.
///
/// Without options it answers exactly one connection on stdin (systemd socket activation with `Accept=yes`, see
/// `jobs/serve-link.socket`). With `--listen HOST:PORT` it accepts connections itself, one at a time, printing the
/// bound address first (port 0 picks a free port); `--max-connections N` and `--idle-exit SECONDS` end it.
struct ServeLinkCommand: Command {
    let path = ["serve-link"]
    let summary = "answer peers' offers, pulls and revoke notices over mutual TLS 1.3 (one connection on stdin, or --listen)"
    let options: [OptionSpec] = [
        .value("--listen", "HOST:PORT", "accept connections on this address instead of answering stdin"),
        .value("--max-connections", "N", "with --listen: exit after N connections"),
        .value("--idle-exit", "SECONDS", "with --listen: exit after SECONDS without a connection"),
    ]
    let discussion = """
        Each connection is mutual TLS 1.3 with self-signed Ed25519 certificates; the client's key is its endpoint id.
        ALPN picks /vnidrop/offer/1 (a live offer), /vnidrop/pull/1 (collect held offers) or /vnidrop/revoke/1.
        Offers and pulls first prove a grant this node issued; blocked, unknown, expired and forged proofs all get the
        same 'lapsed' answer, revoked grants get 'revoked'. Offers are stored pending the user's decision, never
        accepted automatically, and raise a notification (JOB_NOTIFY_COMMAND when set).
        With --listen HOST:PORT the first stdout line is 'listening on HOST:PORT' (port 0 picks a free port).
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
        let server = LinkServer(node: node, context: context)
        guard let listen else {
            var type: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(0, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else {
                throw JobError.usage("stdin is not a socket; run serve-link from serve-link.socket (Accept=yes) or give --listen HOST:PORT")
            }
            server.serve(fd: dup(0), tls: tls)
            return
        }
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
        var served = 0
        var idleSince = Date()
        while maxConnections.map({ served < $0 }) ?? true {
            if shim_termination_signal() != 0 { break }
            if let idleExit, Date().timeIntervalSince(idleSince) >= Double(idleExit) { break }
            guard let fd = Socket.accept(listener, waitMilliseconds: 250) else { continue }
            server.serve(fd: fd, tls: tls)
            served += 1
            idleSince = Date()
        }
        context.logger.info("link-stopped", ["connections": .int(served)])
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
