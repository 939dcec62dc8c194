import CShims
import Foundation
import Runner

/// The accept loop of `serve-link --listen`: one thread per admitted connection, each with its own store
/// connection, under the connection caps; connections over a cap are closed at once.
///
/// A serving thread does the TLS handshake first and opens the store only for a peer that completed it; each
/// connection ends by its deadlines (`LinkDeadlines`), or within 250 ms of SIGTERM at its next wait on the peer.
struct LinkListener {
    let context: JobContext
    let tls: TLSContext
    let deadlines: LinkDeadlines
    let slots: LinkSlots

    /// What one run of the loop did.
    struct Tally {
        var admitted = 0
        var refused = 0
    }

    /// Accepts on `listener` until SIGTERM/SIGINT, `maxConnections` admitted, or `idleExit` seconds with no open
    /// connection; then waits for the open connections to end.
    func run(_ listener: Int32, maxConnections: Int?, idleExit: Int?) -> Tally {
        var tally = Tally()
        var lastRefusalLog = Date.distantPast
        var refusedSinceLog = 0
        while maxConnections.map({ tally.admitted < $0 }) ?? true {
            if shim_termination_signal() != 0 { break }
            if let idleExit, let since = slots.idleSince, Date().timeIntervalSince(since) >= Double(idleExit) { break }
            guard let (fd, source) = Socket.acceptWithSource(listener, waitMilliseconds: 250) else { continue }
            let start = Date()
            guard slots.take(source) else {
                close(fd)
                tally.refused += 1
                refusedSinceLog += 1
                // At most one line a minute, however fast connections are refused.
                if Date().timeIntervalSince(lastRefusalLog) >= 60 {
                    context.logger.warn("link-connections-refused", ["reason": "cap-reached", "count": .int(refusedSinceLog)])
                    lastRefusalLog = Date()
                    refusedSinceLog = 0
                }
                continue
            }
            tally.admitted += 1
            let (reopening, tls, deadlines, slots) = (context.reopening(), tls, deadlines, slots)
            let thread = Thread {
                defer { slots.release(source) }
                LinkListener.serve(fd: fd, start: start, context: reopening, tls: tls, deadlines: deadlines)
            }
            thread.start()
        }
        // Every open connection ends by its connection deadline at the latest, sooner once SIGTERM was heard.
        while slots.active > 0 { usleep(20_000) }
        return tally
    }

    /// One admitted connection, on its own thread: handshake, then the exchange over a store connection of its own.
    static func serve(fd: Int32, start: Date, context: JobContext.Reopening, tls: TLSContext, deadlines: LinkDeadlines) {
        guard let connection = LinkServer.handshake(fd: fd, tls: tls, deadlines: deadlines, start: start, logger: context.logger) else { return }
        let own: JobContext
        let node: Node
        do {
            own = try context.open()
            node = try Node(own)
        } catch {
            connection.close()
            LinkServer.log(error, stage: "store", logger: context.logger)
            return
        }
        LinkServer(node: node, context: own).serve(connection)
    }
}
