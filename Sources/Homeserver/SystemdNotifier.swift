import Foundation

/// The service manager's notification socket (`sd_notify`): `READY=1`, `WATCHDOG=1`, `STOPPING=1`, `STATUS=…`
/// as datagrams to `NOTIFY_SOCKET` (a path, or `@name` for an abstract socket). Without `NOTIFY_SOCKET` every
/// call does nothing, so the same binary runs by hand.
final class SystemdNotifier: @unchecked Sendable {
    private let socketAddress: String?
    /// Half of `WATCHDOG_USEC` (seconds), when systemd watches this process; nil otherwise.
    let watchdogInterval: Double?

    init(environment: [String: String]) {
        let address = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketAddress = address
        var interval: Double?
        if let text = environment["WATCHDOG_USEC"], let usec = Double(text), usec > 0 {
            // WATCHDOG_PID, when set, names the process meant; another process ignores it.
            if let pid = environment["WATCHDOG_PID"], let value = Int32(pid), value != getpid() { interval = nil } else { interval = usec / 2_000_000 }
        }
        watchdogInterval = interval
    }

    var isEnabled: Bool { socketAddress != nil }

    /// Sends `state` (newline-separated `KEY=VALUE` lines); false when there is no socket or the send failed.
    @discardableResult
    func notify(_ state: String) -> Bool {
        guard let path = socketAddress else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            if !abstract { raw[bytes.count] = 0 }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let payload = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, payload.count, Int32(MSG_NOSIGNAL), sockaddrPointer, length) }
            }
        }
        return sent == payload.count
    }
}
