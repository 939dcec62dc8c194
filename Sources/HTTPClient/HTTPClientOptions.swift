/// Which HTTP version to ask libcurl for.
package enum HTTPVersion: Sendable, Equatable {
    /// HTTP/1.1 only (no ALPN `h2` offered).
    case http1_1
    /// HTTP/2 over TLS, negotiated with ALPN `h2`, and **required**: if the server picks anything else,
    /// `send` fails with `HTTPError.http2NotNegotiated` (in a batch, that request's result does).
    /// libcurl has no hook between the handshake and the request, so the check runs when the transfer
    /// ends: the request has then been sent over HTTP/1.1 and its answer is discarded. A plain `http://`
    /// URL never negotiates HTTP/2 this way and therefore always fails; use `.http2PriorKnowledge` for h2c.
    /// For APNs, which speaks HTTP/2 only.
    case http2
    /// HTTP/2 over TLS when the server offers it (ALPN `h2`), HTTP/1.1 otherwise (and for `http://`).
    case http2OrHTTP1_1
    /// HTTP/2 without negotiation (h2c prior knowledge over plain TCP; over TLS, h2 without ALPN fallback).
    /// Meant for tests and private h2c endpoints. With libcurl older than 8.0.0 (Debian 12 ships 7.88.1) a
    /// reused prior-knowledge connection fails (curl issue #10634), so there every transfer gets its own
    /// connection and a `batch` is neither multiplexed nor concurrent.
    case http2PriorKnowledge
}

/// A server public-key pin (libcurl `CURLOPT_PINNEDPUBLICKEY`).
///
/// libcurl compares the server certificate's SubjectPublicKeyInfo against the pin after the TLS
/// handshake, whatever `TLSOptions.verification` says, and fails with `CURLE_SSL_PINNEDPUBKEYNOTMATCH`
/// (`HTTPError.transport(kind: .tls, curlCode: 90)`) when it does not match.
package enum PublicKeyPin: Sendable, Equatable {
    /// One or more `sha256//<base64 of SHA-256(DER SubjectPublicKeyInfo)>` entries separated by `;`,
    /// exactly as libcurl takes them (`sha256//` prefixes included).
    case sha256(String)
    /// A file holding the public key itself (PEM `BEGIN PUBLIC KEY` or DER), handed to libcurl as a path.
    case publicKeyFile(path: String)
    /// A PEM certificate file (e.g. Syncthing's `https-cert.pem`): its public key is hashed when each
    /// request is configured, so a regenerated certificate is picked up. An unreadable file or one that
    /// holds no certificate fails the request with `HTTPError.invalidRequest(.unusablePin)`.
    case certificateFile(path: String)
}

/// TLS settings.
package struct TLSOptions: Sendable, Equatable {
    /// What is checked about the server.
    package enum Verification: Sendable, Equatable {
        /// The certificate chains to a trusted root (the system store, plus `caFile`), is valid now,
        /// and names the host of the URL. The pin, if set, must match too. The default.
        case full
        /// As `.full` but the host name is not compared with the certificate.
        case chainWithoutHostName
        /// Only the pin is checked (the pin is then required, else `.invalidRequest(.unusablePin)`):
        /// the server must present a certificate whose public key matches the pin, and the TLS handshake
        /// proves it holds the matching private key. Chain, issuer, validity dates and names are not
        /// checked. This is how a self-signed Syncthing GUI certificate (issued to the machine's host
        /// name, reached at 127.0.0.1) is trusted.
        case pinnedKeyOnly
    }

    package var verification: Verification
    /// A PEM bundle of CA certificates used as libcurl's `CURLOPT_CAINFO`: it replaces libcurl's default
    /// CA bundle file; libcurl's default CA directory (Debian: `/etc/ssl/certs`) is still consulted.
    package var caFile: String?
    package var pinnedPublicKey: PublicKeyPin?
    /// Client certificate (PEM) and its key (PEM, unencrypted) for mutual TLS.
    package var clientCertificateFile: String?
    package var clientKeyFile: String?

    package init(verification: Verification = .full, caFile: String? = nil, pinnedPublicKey: PublicKeyPin? = nil,
                clientCertificateFile: String? = nil, clientKeyFile: String? = nil) {
        self.verification = verification
        self.caFile = caFile
        self.pinnedPublicKey = pinnedPublicKey
        self.clientCertificateFile = clientCertificateFile
        self.clientKeyFile = clientKeyFile
    }

    /// Trust exactly the key in `pin`, nothing else (see `Verification.pinnedKeyOnly`).
    package static func pinnedKeyOnly(_ pin: PublicKeyPin) -> TLSOptions {
        TLSOptions(verification: .pinnedKeyOnly, pinnedPublicKey: pin)
    }
}

extension HTTPClient {
    /// Client-wide settings; every request sent by one client uses them.
    package struct Options: Sendable, Equatable {
        /// Longest time for name resolution plus TCP connect plus TLS handshake (seconds).
        /// Timeouts are always bounded: zero or negative values mean 1 ms, never "no timeout".
        package var connectTimeout: Double
        /// Longest time for a whole transfer, connect included (seconds). In a batch it runs per request
        /// from the moment the request is handed to libcurl.
        package var totalTimeout: Double
        /// Largest response body accepted. A larger body (announced by Content-Length, or as it
        /// arrives) aborts the transfer with `HTTPError.bodyTooLarge`.
        package var maxResponseBodyBytes: Int
        /// Follow 3xx `Location` answers (http and https only). Off by default: the 3xx is returned.
        package var followRedirects: Bool
        /// With `followRedirects`, more than this many hops fail with `.transport(kind: .tooManyRedirects, …)`.
        package var maxRedirects: Int
        package var httpVersion: HTTPVersion
        package var tls: TLSOptions
        /// Sent as `User-Agent` unless the request sets one. `nil`: no User-Agent header.
        package var userAgent: String?

        package init(connectTimeout: Double = 10, totalTimeout: Double = 30, maxResponseBodyBytes: Int = 8 << 20,
                    followRedirects: Bool = false, maxRedirects: Int = 5, httpVersion: HTTPVersion = .http1_1,
                    tls: TLSOptions = TLSOptions(), userAgent: String? = nil) {
            self.connectTimeout = connectTimeout
            self.totalTimeout = totalTimeout
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.followRedirects = followRedirects
            self.maxRedirects = maxRedirects
            self.httpVersion = httpVersion
            self.tls = tls
            self.userAgent = userAgent
        }
    }
}
