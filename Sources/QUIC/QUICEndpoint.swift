import CQUIC
import Elapsed
import Foundation
import Glibc

/// What a serving endpoint asks its owner about connections (called on the event-loop thread; keep it quick).
package protocol QUICServerDelegate: AnyObject, Sendable {
    /// A connection from the validated `address` wants a slot (the caps): asked when an Initial carrying our Retry's
    /// token arrives, or when a handshake started without one completes (which proves the address too). False drops
    /// the datagram, or closes the completed handshake. When the whole table is full, the endpoint ends its oldest
    /// validated half-open handshake, or else the connection `makeRoom` names, and asks again, once.
    func admit(_ address: QUICAddress) -> QUICAdmission
    /// The whole table is full and no half-open handshake holds a slot: the delegate may name one connection it was
    /// handed (`accepted`) to end for the newcomer from `address`, having freed that connection's slot already. The
    /// endpoint closes it at once; its worker hears `closed`. Nil: the newcomer is refused.
    func makeRoom(for address: QUICAddress) -> QUICConnection?
    /// A connection from `address` was refused a slot for good (the caps, after any eviction).
    func refused(_ address: QUICAddress)
    /// A connection from `address` ended before it was handed over: `heldSlot` says whether `admit` had given it a
    /// slot (free again now); `error` says how it ended, nil when its first datagram was not an acceptable Initial
    /// after all, or the caps refused it on completion (not worth a log line).
    func abandoned(_ address: QUICAddress, because error: QUICError?, heldSlot: Bool)
    /// A connection completed its handshake: serve it (on another thread), then `close` it and free its slot.
    func accepted(_ connection: QUICConnection)
}

extension QUICServerDelegate {
    /// By default nothing served is ended to make room.
    package func makeRoom(for address: QUICAddress) -> QUICConnection? { nil }
}

/// Timeouts a connection runs under inside the endpoint.
package struct QUICTimeouts: Sendable {
    /// From the first packet to the end of the handshake.
    package var handshakeSeconds: TimeInterval
    /// QUIC idle timeout (transport parameter): a silent peer's connection ends after it.
    package var idleSeconds: TimeInterval
    /// Serving: how many handshakes started without address validation may be half-open at once. They hold no slot
    /// (`QUICServerDelegate.admit` is asked only once the handshake completes), so a spoofed source address cannot
    /// take one; once this many are half-open, a first Initial without a token is answered with a stateless Retry,
    /// and only a client that receives packets at its address goes on. 0: always.
    package var validateAbove: Int

    package init(handshakeSeconds: TimeInterval, idleSeconds: TimeInterval, validateAbove: Int = 8) {
        self.handshakeSeconds = handshakeSeconds
        self.idleSeconds = idleSeconds
        self.validateAbove = validateAbove
    }
}

/// A QUIC endpoint over one UDP socket: one event-loop thread owns the socket and every ngtcp2 connection on it.
///
/// Serving, it demultiplexes datagrams by destination connection id (ours all start with an 8-byte prefix per
/// connection; a client's first Initials by the id it chose), admits new connections through the delegate's caps,
/// ends those whose handshake misses its deadline, and hands each completed one to the delegate as a
/// `QUICConnection` for a worker thread. Datagrams that do not parse as QUIC v1, or Initials that ngtcp2 does not
/// accept, are dropped before any state is made. Dialling, the endpoint has its own socket and loop for its one
/// connection and ends with it.
package final class QUICEndpoint: @unchecked Sendable {
    // @unchecked: the socket and connection tables are used only by the event-loop thread; `stopRequested` only under `stateLock`.
    private let fd: Int32
    private let wakeFD: Int32
    private let identity: QUICIdentity
    private let timeouts: QUICTimeouts
    private let shouldStop: @Sendable () -> Bool
    private let local: QUICAddress
    private let isServer: Bool
    private let alpns: [String]
    private weak var delegate: QUICServerDelegate?

    // Owned by the loop thread.
    private final class Entry {
        let conn: OpaquePointer
        let handle: QUICConnection
        let remote: QUICAddress
        let prefix: [UInt8]
        let odcid: [UInt8]
        let handshakeDeadline: MonotonicInstant
        var handedOver = false
        var unreachable = false
        var timedOut = false
        /// A datagram arrived for it since it was last serviced.
        var touched = true
        /// Its source address is validated (a Retry token, or a completed handshake); until then it holds no slot.
        var validated: Bool
        /// Holds a slot from `QUICServerDelegate.admit`.
        var holdsSlot: Bool
        /// Ended to make room for a newer connection when the table was full.
        var evicted = false
        init(conn: OpaquePointer, handle: QUICConnection, remote: QUICAddress, prefix: [UInt8], odcid: [UInt8], handshakeDeadline: MonotonicInstant, validated: Bool) {
            self.validated = validated
            self.holdsSlot = validated
            self.conn = conn
            self.handle = handle
            self.remote = remote
            self.prefix = prefix
            self.odcid = odcid
            self.handshakeDeadline = handshakeDeadline
        }
    }
    private var entries: [Entry] = []
    private var byPrefix: [[UInt8]: Entry] = [:]
    private var byODCID: [[UInt8]: Entry] = [:]
    /// Ids of connections that ended recently, with when to forget them: their late or retransmitted packets
    /// (a client's repeated Initials above all) are dropped instead of starting a connection again.
    private var ended: [[UInt8]: MonotonicInstant] = [:]
    private var lastPurge = QUICConnection.clock.now()
    /// Server connections whose handshake has not completed.
    /// Half-open handshakes whose address is not validated (they hold no slot).
    private var unvalidated = 0
    /// Seals Retry tokens; fresh per endpoint.
    private let retrySecret: [UInt8] = {
        var secret = [UInt8](repeating: 0, count: Int(VQ_RETRY_SECRET_LENGTH))
        arc4random_buf(&secret, secret.count)
        return secret
    }()

    private let stateLock = NSLock()
    private var stopRequested = false
    private let finished = DispatchSemaphore(value: 0)

    /// The UDP port the socket is bound to.
    package var port: UInt16 { local.port }

    private init(fd: Int32, local: QUICAddress, identity: QUICIdentity, timeouts: QUICTimeouts, alpns: [String], isServer: Bool,
                 shouldStop: @escaping @Sendable () -> Bool) throws {
        let wakeFD = vq_eventfd()
        guard wakeFD >= 0 else { Glibc.close(fd); throw QUICError.io }
        self.fd = fd
        self.wakeFD = wakeFD
        self.local = local
        self.identity = identity
        self.timeouts = timeouts
        self.alpns = alpns
        self.isServer = isServer
        self.shouldStop = shouldStop
    }

    deinit {
        Glibc.close(fd)
        Glibc.close(wakeFD)
    }

    // MARK: Serving

    /// A serving endpoint on `address` (port 0 picks a free port) speaking the protocols `alpns`. Call `start`.
    package static func listen(on address: QUICAddress, identity: QUICIdentity, alpns: [String], timeouts: QUICTimeouts,
                              shouldStop: @escaping @Sendable () -> Bool) throws -> QUICEndpoint {
        let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw QUICError.io }
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0 else { Glibc.close(fd); throw QUICError.unreachable }
        widenReceiveBuffer(fd)
        return try QUICEndpoint(fd: fd, local: try boundAddress(fd), identity: identity, timeouts: timeouts, alpns: alpns,
                                isServer: true, shouldStop: shouldStop)
    }

    /// Asks for a 4 MiB receive buffer (the kernel caps it at net.core.rmem_max): a burst of first packets from many
    /// clients at once should queue, not be dropped, while the loop works.
    private static func widenReceiveBuffer(_ fd: Int32) {
        var size: Int32 = 4 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A serving endpoint on a socket it is given (systemd `ListenDatagram=`, file descriptor 3 or stdin).
    package static func adopt(socket fd: Int32, identity: QUICIdentity, alpns: [String], timeouts: QUICTimeouts,
                             shouldStop: @escaping @Sendable () -> Bool) throws -> QUICEndpoint {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        widenReceiveBuffer(fd)
        return try QUICEndpoint(fd: fd, local: try boundAddress(fd), identity: identity, timeouts: timeouts, alpns: alpns,
                                isServer: true, shouldStop: shouldStop)
    }

    /// Starts the event loop on its own thread.
    package func start(delegate: QUICServerDelegate) {
        self.delegate = delegate
        let thread = Thread { [self] in
            self.runLoop()
            self.finished.signal()
        }
        thread.start()
    }

    /// Stops the loop and waits for it to end: open connections are closed, half-open ones dropped (reported to the
    /// delegate as abandoned without an error), and workers waiting on a connection hear `stopped`.
    package func stop() {
        stateLock.lock()
        stopRequested = true
        stateLock.unlock()
        signalWake()
        finished.wait()
    }

    // MARK: Dialling

    /// Dials the endpoint whose key is `expected` at `address` with protocol `alpn`; returns once the handshake
    /// completed and the exchange's stream is open. Throws `unreachable`, `timeout` (at `handshakeDeadline`),
    /// `wrongPeer` when another key answers, `handshake` when TLS is refused, `stopped`. `source`, when given, is
    /// the local address to send from (tests dial from several loopback addresses).
    package static func dial(_ address: QUICAddress, from source: QUICAddress? = nil, expected: [UInt8], alpn: String, identity: QUICIdentity,
                            timeouts: QUICTimeouts, handshakeDeadline: MonotonicInstant, shouldStop: @escaping @Sendable () -> Bool) throws -> QUICConnection {
        let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw QUICError.io }
        if let source, source.withSockaddr({ bind(fd, $0, $1) }) != 0 { Glibc.close(fd); throw QUICError.unreachable }
        // A connected socket: the kernel reports ICMP port-unreachable as ECONNREFUSED, so a dead address fails fast.
        guard address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else { Glibc.close(fd); throw QUICError.unreachable }
        let endpoint = try QUICEndpoint(fd: fd, local: try boundAddress(fd), identity: identity, timeouts: timeouts, alpns: [alpn],
                                        isServer: false, shouldStop: shouldStop)
        let handle = QUICConnection(remoteAddress: address, wake: { [weak endpoint] in endpoint?.signalWake() }, shouldStop: shouldStop)
        let conn: OpaquePointer? = endpoint.local.withSockaddr { localPointer, localLength in
            address.withSockaddr { remotePointer, remoteLength in
                vq_client_new(identity.creds, localPointer, localLength, remotePointer, remoteLength, expected, alpn,
                              UInt64(timeouts.idleSeconds * 1000), UInt64(max(1, handshakeDeadline - QUICConnection.clock.now()) * 1000))
            }
        }
        guard let conn else { throw QUICError.io }
        let entry = Entry(conn: conn, handle: handle, remote: address, prefix: [], odcid: [], handshakeDeadline: handshakeDeadline, validated: true)
        endpoint.entries.append(entry)
        let thread = Thread { endpoint.runLoop() }
        thread.start()
        do {
            try handle.waitEstablished(until: handshakeDeadline)
        } catch {
            handle.abort()
            throw error
        }
        return handle
    }

    // MARK: The loop

    private func signalWake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    private var stopping: Bool {
        stateLock.lock(); defer { stateLock.unlock() }
        return stopRequested
    }

    private func runLoop() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var out = [UInt8](repeating: 0, count: 1500)
        // A dialled connection's first flight goes out at once, before the first wait.
        for entry in entries { service(entry, out: &out, now: QUICConnection.clock.now()) }
        while true {
            if isServer ? stopping : entries.isEmpty { break }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, nextTimeoutMilliseconds())
            if fds[1].revents != 0 {
                var value: UInt64 = 0
                _ = Glibc.read(wakeFD, &value, 8)
            }
            if fds[0].revents != 0 { receive(&buffer) }
            let now = QUICConnection.clock.now()
            if now - lastPurge >= 1 {
                lastPurge = now
                ended = ended.filter { $0.value > now }
            }
            let nanoseconds = vq_now()
            // Only connections with something to do: a datagram, a worker's request, a timer, the handshake deadline.
            for entry in entries where entry.touched || entry.handle.hasRequests || vq_expiry(entry.conn) <= nanoseconds
                || (!entry.handedOver && now >= entry.handshakeDeadline) {
                entry.touched = false
                service(entry, out: &out, now: now)
            }
            entries.removeAll { entry in
                guard vq_ended(entry.conn) != 0 || entry.unreachable else { return false }
                retire(entry)
                return true
            }
        }
        for entry in entries {
            vq_close(entry.conn, 0)
            flush(entry, out: &out)
            retire(entry, stopping: true)
        }
        entries.removeAll()
    }

    /// Milliseconds until the earliest timer (at most 250, so stop requests and deadlines are noticed).
    private func nextTimeoutMilliseconds() -> Int32 {
        let now = vq_now()
        var earliest = now + 250_000_000
        for entry in entries {
            let expiry = vq_expiry(entry.conn)
            if expiry < earliest { earliest = expiry }
        }
        return earliest <= now ? 0 : Int32((earliest - now + 999_999) / 1_000_000)
    }

    /// Reads every waiting datagram (at most 256 a round) and hands each to its connection.
    private func receive(_ buffer: inout [UInt8]) {
        for _ in 0..<256 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            if count < 0 {
                if errno == ECONNREFUSED && !isServer { entries.forEach { $0.unreachable = true } }
                return
            }
            let remote = QUICAddress(storage: storage, length: length)
            buffer.withUnsafeBufferPointer { dispatch(UnsafeBufferPointer(rebasing: $0[0..<count]), from: remote) }
        }
    }

    private func dispatch(_ packet: UnsafeBufferPointer<UInt8>, from remote: QUICAddress) {
        guard let base = packet.baseAddress else { return }
        let entry: Entry
        if !isServer {
            guard let only = entries.first else { return }
            entry = only
        } else {
            var dcid = [UInt8](repeating: 0, count: 20)
            var dcidLength = 0
            var initial: Int32 = 0
            guard vq_decode_dcid(base, packet.count, &dcid, &dcidLength, &initial) == 0 else { return }
            let id = Array(dcid[0..<dcidLength])
            if dcidLength == Int(VQ_CID_LENGTH), ended[Array(id[0..<Int(VQ_CID_PREFIX)])] != nil { return }
            if ended[id] != nil { return }
            if dcidLength == Int(VQ_CID_LENGTH), let found = byPrefix[Array(id[0..<Int(VQ_CID_PREFIX)])] {
                entry = found
            } else if let found = byODCID[id] {
                entry = found
            } else if initial != 0 {
                let hasToken = vq_initial_has_token(base, packet.count) != 0
                if !hasToken && unvalidated >= timeouts.validateAbove {
                    retry(packet, to: remote)
                    return
                }
                guard let made = accept(packet, from: remote, odcid: id, validated: hasToken) else { return }
                entry = made
            } else {
                return
            }
        }
        entry.touched = true
        _ = local.withSockaddr { localPointer, localLength in
            remote.withSockaddr { remotePointer, remoteLength in
                vq_read(entry.conn, base, packet.count, localPointer, localLength, remotePointer, remoteLength)
            }
        }   // an ending connection is noticed (and its close sent) when it is serviced
    }

    /// A slot for a validated connection from `remote`. When the whole table is full, the oldest validated half-open
    /// handshake is ended to make room (a handshake that completes holds its slot only until its hello is late), or
    /// else the served connection the delegate names (`makeRoom`), so a crowd of slow handshakes or idle connections
    /// cannot keep a prompt client out; over the per-address cap nothing is evicted.
    ///
    /// Ended connections are only closed here and forgotten by the loop's next sweep (never freed while the loop may
    /// still be walking its copy of the table).
    private func takeSlot(for remote: QUICAddress) -> Bool {
        guard let delegate else { return false }
        var answer = delegate.admit(remote)
        if answer == .tableFull {
            var out = [UInt8](repeating: 0, count: 1500)
            if let oldest = entries.first(where: { $0.holdsSlot && !$0.handedOver && vq_established($0.conn) == 0 && vq_ended($0.conn) == 0 }) {
                oldest.evicted = true
                oldest.holdsSlot = false
                vq_close(oldest.conn, 0)
                flush(oldest, out: &out)
                delegate.abandoned(oldest.remote, because: nil, heldSlot: true)
                answer = delegate.admit(remote)
            } else if let victim = delegate.makeRoom(for: remote) {
                if let served = entries.first(where: { $0.handle === victim }), vq_ended(served.conn) == 0 {
                    vq_close(served.conn, 0)
                    flush(served, out: &out)
                }
                answer = delegate.admit(remote)
            }
        }
        if answer != .admitted { delegate.refused(remote) }
        return answer == .admitted
    }

    /// Answers a first Initial with a stateless Retry (no connection, no slot).
    private func retry(_ packet: UnsafeBufferPointer<UInt8>, to remote: QUICAddress) {
        var out = [UInt8](repeating: 0, count: 1500)
        let count = remote.withSockaddr { pointer, length in
            vq_write_retry(packet.baseAddress, packet.count, pointer, length, retrySecret, &out, out.count)
        }
        guard count > 0 else { return }
        _ = out.withUnsafeBytes { raw in remote.withSockaddr { sendto(fd, raw.baseAddress, count, 0, $0, $1) } }
    }

    /// A new server connection for a first Initial, if ngtcp2 accepts the packet (a token it carries must be our
    /// Retry's, for this address) and, for a `validated` one, the caps admit its source; an unvalidated one takes
    /// no slot until its handshake completes.
    private func accept(_ packet: UnsafeBufferPointer<UInt8>, from remote: QUICAddress, odcid: [UInt8], validated: Bool) -> Entry? {
        guard !stopping, let delegate else { return nil }
        if validated && !takeSlot(for: remote) { return nil }
        var prefix = [UInt8](repeating: 0, count: Int(VQ_CID_PREFIX))
        repeat { arc4random_buf(&prefix, prefix.count) } while byPrefix[prefix] != nil
        let names = alpns.joined(separator: "\0")
        let conn: OpaquePointer? = local.withSockaddr { localPointer, localLength in
            remote.withSockaddr { remotePointer, remoteLength in
                vq_server_new(identity.creds, localPointer, localLength, remotePointer, remoteLength, packet.baseAddress, packet.count,
                              prefix, retrySecret, names, alpns.count, UInt64(timeouts.idleSeconds * 1000), UInt64(timeouts.handshakeSeconds * 1000))
            }
        }
        guard let conn else {
            if validated { delegate.abandoned(remote, because: nil, heldSlot: true) }
            return nil
        }
        let handshakeDeadline = QUICConnection.clock.deadline(in: timeouts.handshakeSeconds)
        let handle = QUICConnection(remoteAddress: remote, handshakeDeadline: handshakeDeadline, wake: { [weak self] in self?.signalWake() },
                                    shouldStop: shouldStop)
        let entry = Entry(conn: conn, handle: handle, remote: remote, prefix: prefix, odcid: odcid,
                          handshakeDeadline: handshakeDeadline, validated: validated)
        entries.append(entry)
        if !validated { unvalidated += 1 }
        byPrefix[prefix] = entry
        byODCID[odcid] = entry
        return entry
    }

    /// Moves the worker's requests into ngtcp2, runs timers, sends what is due, and moves received bytes back.
    private func service(_ entry: Entry, out: inout [UInt8], now: MonotonicInstant) {
        let conn = entry.conn
        let requests = entry.handle.takeRequests()
        if !requests.bytes.isEmpty { _ = vq_send(conn, requests.bytes, requests.bytes.count) }
        if requests.credit > 0 { vq_consumed(conn, requests.credit) }
        if requests.finish { vq_send_fin(conn) }
        if let code = requests.close { vq_close(conn, code) }
        if vq_expiry(conn) <= vq_now() { _ = vq_handle_expiry(conn) }
        if vq_established(conn) == 0 && now >= entry.handshakeDeadline && vq_ended(conn) == 0 {
            // The handshake deadline: the half-open connection ends.
            entry.timedOut = true
            vq_close(conn, 0)
        }
        if isServer && vq_established(conn) != 0 && !entry.validated {
            // The completed handshake proves the address: only now does it ask for a slot.
            entry.validated = true
            unvalidated -= 1
            if takeSlot(for: entry.remote) {
                entry.holdsSlot = true
            } else if vq_ended(conn) == 0 {
                vq_close(conn, 0)
            }
        }
        if vq_established(conn) != 0 && !entry.handedOver && (!isServer || entry.holdsSlot) {
            entry.handedOver = true
            var key = [UInt8](repeating: 0, count: 32)
            var name = [CChar](repeating: 0, count: 256)
            _ = vq_peer_key(conn, &key)
            let length = vq_alpn(conn, &name, name.count)
            if !isServer { _ = vq_open_stream(conn) }
            entry.handle.markEstablished(remoteKey: key, protocolName: String(decoding: name[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
            if isServer { delegate?.accepted(entry.handle) }
        }
        flush(entry, out: &out)
        var received: [UInt8] = []
        let buffered = vq_recv_buffered(conn)
        if buffered > 0 {
            received = [UInt8](repeating: 0, count: buffered)
            _ = vq_recv_take(conn, &received, buffered)
        }
        let finished = vq_recv_finished(conn)
        entry.handle.deliver(received, finished: finished == 1, unacked: vq_send_unacked(conn))
        if finished == 2 { entry.handle.markEnded(.closed) }
    }

    /// Sends every datagram the connection has ready.
    private func flush(_ entry: Entry, out: inout [UInt8]) {
        for _ in 0..<512 {
            let count = vq_write(entry.conn, &out, out.count)
            guard count > 0 else { return }
            let sent = out.withUnsafeBytes { raw in
                isServer ? entry.remote.withSockaddr { sendto(fd, raw.baseAddress, count, 0, $0, $1) } : send(fd, raw.baseAddress, count, 0)
            }
            if sent < 0 && errno == ECONNREFUSED && !isServer { entry.unreachable = true }
        }
    }

    /// Forgets an ended connection, telling its worker (or the delegate, if no worker ever had it) why it ended.
    private func retire(_ entry: Entry, stopping: Bool = false) {
        entry.handle.markEnded(stopping ? .stopped : endError(entry))
        let forgetAt = QUICConnection.clock.deadline(in: max(10, timeouts.handshakeSeconds))
        if !entry.prefix.isEmpty { byPrefix[entry.prefix] = nil; ended[entry.prefix] = forgetAt }
        if !entry.odcid.isEmpty { byODCID[entry.odcid] = nil; ended[entry.odcid] = forgetAt }
        if isServer && !entry.handedOver {
            if !entry.validated { unvalidated -= 1 }
            let dropped = vq_end_reason(entry.conn) == Int32(VQ_END_DROPPED.rawValue)
            let refused = entry.validated && !entry.holdsSlot
            delegate?.abandoned(entry.remote, because: dropped || stopping || refused || entry.evicted ? nil : endError(entry), heldSlot: entry.holdsSlot)
        }
        vq_conn_free(entry.conn)
    }

    private func endError(_ entry: Entry) -> QUICError {
        if entry.unreachable { return .unreachable }
        if entry.timedOut { return .timeout }
        let established = vq_established(entry.conn) != 0
        let code = vq_end_code(entry.conn)
        switch Int32(vq_end_reason(entry.conn)) {
        case Int32(VQ_END_WRONG_PEER.rawValue): return .wrongPeer
        case Int32(VQ_END_LOCAL_TLS.rawValue): return .handshake(alert: nil)
        case Int32(VQ_END_PEER_TRANSPORT.rawValue) where !established:
            return (0x100...0x1ff).contains(code) ? .handshake(alert: UInt8(code - 0x100)) : .handshake(alert: nil)
        case Int32(VQ_END_HANDSHAKE_TIMEOUT.rawValue): return .timeout
        case Int32(VQ_END_IDLE.rawValue): return established ? .closed : .timeout
        default: return .closed
        }
    }

    private static func boundAddress(_ fd: Int32) throws -> QUICAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { Glibc.close(fd); throw QUICError.io }
        return QUICAddress(storage: storage, length: length)
    }
}
