import Elapsed
import Foundation
import Runner

/// `serve-link`'s store, shared by every connection it serves: one `GroupCommitWriter` for all writes and a small
/// pool of read connections.
///
/// Each connection used to open a store connection of its own, so every offer compiled its statements, read its
/// pages and paid durable commits of its own (about three per offer). Here the writes of all connections go to the
/// one writer, which commits many of them together, and `write` returns only once the commit holding the write
/// returned: a peer is answered after that, so an offer it saw acknowledged is never lost to a crash
/// (docs/group-commit.md). Reads check a connection out of the pool for one read and give it back.
///
/// The store file this server opened is checked (device and inode of the store and its `-wal`,
/// `StoreFileIdentity`) before and after each write and every second (`checkIdentity`); once it is no longer at its
/// path, every write is refused and the server stops with `store-replaced` (73), so nothing more is acknowledged
/// into a file no path leads to.
final class LinkStore: @unchecked Sendable {
    // @unchecked: `idle`, `replaced` and `lastLook` are touched only under `lock`; a checked-out read connection is used by one
    // thread alone; the writer is thread-safe; the rest is immutable and Sendable.
    let writer: GroupCommitWriter
    /// The context the read connections are opened from.
    let base: JobContext.Reopening
    let vault: Vault
    let identity: NodeIdentity
    let clock: Clock
    /// The clock the identity check's cadence is timed on.
    let monotonic: MonotonicClock
    /// Idle read connections kept at most (more are opened while more readers are busy, then closed).
    let keep: Int
    private let fileIdentity: StoreFileIdentity?
    private var idle: [(context: JobContext, node: Node)] = []
    private var replaced = false
    private var lastLook: MonotonicInstant
    private let lock = NSLock()

    /// The store of `context` (whose node is `node`), writing through a writer that lets at most `maxBatch` requests
    /// share one commit.
    init(context: JobContext, node: Node, maxBatch: Int, keep: Int = 8) {
        base = context.reopening()
        vault = node.vault
        identity = node.identity
        clock = context.clock
        monotonic = context.monotonic
        lastLook = context.monotonic.now()
        self.keep = keep
        fileIdentity = StoreFileIdentity.current(path: context.storePath)
        let path = context.storePath
        writer = GroupCommitWriter(maxBatch: maxBatch, clock: context.monotonic, open: {
            do { return try Database(path: path) } catch { throw StoreFailure.jobError(for: error) }
        })
    }

    var logger: Logger { base.logger }
    /// The injected "now" in Unix milliseconds.
    var nowMilliseconds: Int64 { clock.now().unixMilliseconds }

    /// True once the store file was found no longer at its path; looks at the path again when the last look is a
    /// second old (the serving loop asks this every few milliseconds: this is the timer's check).
    var isReplaced: Bool {
        let due = lock.withLock { () -> Bool in
            guard !replaced, monotonic.seconds(since: lastLook) >= 1 else { return false }
            lastLook = monotonic.now()
            return true
        }
        if due { checkIdentity() }
        return lock.withLock { replaced }
    }

    /// Checks that the store file this server opened is still the one at its path; false (and from then on every
    /// write refused) when it is not.
    @discardableResult
    func checkIdentity() -> Bool {
        if lock.withLock({ replaced }) { return false }
        guard let fileIdentity, !fileIdentity.isStillAtPath() else { return true }
        lock.withLock { replaced = true }
        return false
    }

    /// Runs `body` as one write over the writer's connection (a savepoint of the next batch: all of it or none of it
    /// is kept), and returns once the commit holding it returned. Throws `store-replaced` when the store file is no
    /// longer at its path, before or after the commit: the caller then answers nothing.
    func write<T>(_ body: @escaping (Node) throws -> T) throws -> T {
        guard checkIdentity() else { throw StoreFileIdentity.replaced }
        let (vault, identity) = (vault, identity)
        let result = try writer.perform { database in
            try database.write { database in try body(Node(database: database, vault: vault, identity: identity)) }
        }
        guard checkIdentity() else { throw StoreFileIdentity.replaced }
        return result
    }

    /// Runs `body` on a read connection of its own (a context over it, for settings, and its node). `body` must not
    /// write: writes go through `write`.
    func read<T>(_ body: (JobContext, Node) throws -> T) throws -> T {
        let reader = try lock.withLock({ idle.popLast() }) ?? openReader()
        defer { lock.withLock { if idle.count < keep { idle.append(reader) } } }
        return try body(reader.context, reader.node)
    }

    /// A new read connection; never one that would create an empty store where the opened one was.
    private func openReader() throws -> (context: JobContext, node: Node) {
        guard checkIdentity() else { throw StoreFileIdentity.replaced }
        let context = try base.open()
        return (context, Node(database: context.database, vault: vault, identity: identity))
    }

    /// Refuses new writes once the queued ones are answered, and closes the read connections.
    func stop() {
        writer.stop()
        lock.withLock { idle = [] }
    }
}
