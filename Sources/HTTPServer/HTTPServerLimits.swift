/// The server's caps: what one request and one client may take, so slow or greedy clients cannot hold it.
///
/// Connections are served by an epoll thread pool: a slow client holds a connection slot, never a worker
/// thread. `idleTimeoutSeconds` closes a connection that sends nothing; `headerTimeoutSeconds` and
/// `requestTimeoutSeconds` are absolute deadlines from the start of a connection's wait for a request (its
/// accept, or the previous response sent) to the end of its headers and of its body, so trickled bytes cannot
/// extend them (`ConnectionDeadlines`).
package struct HTTPServerLimits: Sendable, Equatable {
    /// Largest request body accepted; larger ones get 413 (at once when `Content-Length` says so).
    package var maxBodyBytes: Int
    /// Memory for one connection's request line and headers (libmicrohttpd answers 431/413 beyond it).
    package var maxHeaderBytes: Int
    /// Open connections in all; more are refused at accept.
    package var maxConnections: Int
    /// Open connections from one address (0: no per-address cap, as behind a local reverse proxy).
    package var maxConnectionsPerAddress: Int
    /// A connection that sends nothing for this long is closed.
    package var idleTimeoutSeconds: Int
    /// A connection whose request's headers are not complete this long after it began waiting for them is cut.
    package var headerTimeoutSeconds: Int
    /// A connection whose request (headers and body) is not complete this long after it began waiting for it is cut.
    package var requestTimeoutSeconds: Int
    /// Worker threads that run the handler on complete requests (the epoll I/O threads are half as many, 1 to 4).
    package var threads: Int
    /// How long `stop` waits for the handlers to answer the requests they hold; those still held then get 503.
    package var drainTimeoutSeconds: Double

    package init(maxBodyBytes: Int = 16 << 10, maxHeaderBytes: Int = 32 << 10, maxConnections: Int = 1024, maxConnectionsPerAddress: Int = 0,
                idleTimeoutSeconds: Int = 15, headerTimeoutSeconds: Int = 10, requestTimeoutSeconds: Int = 15, threads: Int = 4,
                drainTimeoutSeconds: Double = 10) {
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.requestTimeoutSeconds = requestTimeoutSeconds
        self.threads = threads
        self.drainTimeoutSeconds = drainTimeoutSeconds
    }
}
