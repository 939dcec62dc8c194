import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import HTTPClient

/// The error `send` threw, or nil when it returned a response.
func sendError(_ client: HTTPClient, _ request: HTTPRequest) -> HTTPError? {
    do {
        _ = try client.send(request)
        return nil
    } catch {
        return error
    }
}

/// A TCP socket bound to an ephemeral 127.0.0.1 port, listening or not; returns the descriptor and the port.
private func loopbackSocket(listening: Bool) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ready = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
            bind(fd, pointer, length) == 0 && (!listening || listen(fd, 16) == 0) && getsockname(fd, pointer, &length) == 0
        }
    }
    guard ready else {
        close(fd)
        throw POSIXError(.EADDRINUSE)
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A loopback port that accepts TCP connections (the kernel completes them into the backlog) but never
/// reads or answers: a TLS handshake against it stalls.
final class SilentListener {
    let port: Int
    private let fd: Int32

    init() throws { (fd, port) = try loopbackSocket(listening: true) }

    deinit { close(fd) }
}

/// A loopback port that refuses connections: a TCP socket bound to 127.0.0.1 that never listens,
/// held open so no one else can take the port while a test uses it.
final class RefusingPort {
    let port: Int
    private let fd: Int32

    init() throws { (fd, port) = try loopbackSocket(listening: false) }

    deinit { close(fd) }
}

/// Decodes the JSON the peers answer with `echo=1`.
struct Echo: Decodable {
    let method: String
    let path: String
    let headers: [[String]]
    let body: String

    init(_ response: HTTPResponse) throws {
        self = try JSONDecoder().decode(Echo.self, from: Data(response.body))
    }

    func header(_ name: String) -> String? {
        headers.first { $0.count == 2 && $0[0].lowercased() == name.lowercased() }?[1]
    }
}
