import CCurl

/// Why a request produced no response.
///
/// HTTP statuses are never errors here: a 404 or a 429 is an `HTTPResponse`.
///
/// Privacy (docs/design.md §5): no case carries, and `description` never prints, any part of the
/// request — no URL (not even the host), query string, header, body or token. It prints the
/// failure kind, libcurl's code and libcurl's fixed text for that code (`curl_easy_strerror`,
/// which never contains request data). libcurl's per-transfer error buffer, which can name the
/// host, is not used.
package enum HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The transfer failed below HTTP: name resolution, connection, TLS, timeout, redirects, …
    case transport(kind: TransportKind, curlCode: Int)
    /// The response body exceeded `HTTPClient.Options.maxResponseBodyBytes`; the transfer was aborted.
    case bodyTooLarge(limit: Int)
    /// The request was refused before anything was sent.
    case invalidRequest(InvalidRequestReason)
    /// `HTTPVersion.http2` was required but the server did not negotiate HTTP/2 (ALPN `h2`).
    /// The request has been sent and answered over the negotiated version; that response is discarded.
    case http2NotNegotiated(negotiated: HTTPProtocolVersion)
    /// Not sent, or not finished: the batch was cancelled before this request was handed to libcurl, or SIGTERM or
    /// SIGINT arrived while `send` was transferring it (aborted within about a second).
    case cancelled

    package enum TransportKind: String, Sendable, Equatable {
        case dns, connect, tls, timeout, tooManyRedirects, other
    }

    package enum InvalidRequestReason: String, Sendable, Equatable {
        /// Only `http` and `https` URLs are accepted.
        case unsupportedScheme
        /// libcurl could not parse the URL, or it contains whitespace or control characters.
        case malformedURL
        /// The method is not an HTTP token.
        case invalidMethod
        /// A header name is not a token, or a value contains CR, LF or NUL.
        case invalidHeader
        /// `TLSOptions.Verification.pinnedKeyOnly` without a pin, or a pin that could not be read.
        case unusablePin
        /// libcurl refused an option (for example an unsupported HTTP version in this build).
        case unsupportedOption
    }

    /// The transport kind, if this is a transport failure.
    package var transportKind: TransportKind? {
        if case .transport(let kind, _) = self { return kind }
        return nil
    }

    package var description: String {
        switch self {
        case .transport(let kind, let code):
            let text = curl_easy_strerror(CURLcode(UInt32(truncatingIfNeeded: code))).map { String(cString: $0) } ?? "unknown"
            return "HTTP transport failure (\(kind.rawValue)): curl \(code): \(text)"
        case .bodyTooLarge(let limit):
            return "HTTP response body exceeded the limit of \(limit) bytes"
        case .invalidRequest(let reason):
            return "invalid HTTP request: \(reason.rawValue)"
        case .http2NotNegotiated(let negotiated):
            return "HTTP/2 required but the server negotiated \(negotiated)"
        case .cancelled:
            return "HTTP request cancelled: not sent, or stopped by SIGTERM or SIGINT"
        }
    }

    /// Maps a failed libcurl transfer to an error. `CURLE_OK` is not a failure and must not be passed.
    static func fromCurl(_ code: CURLcode, bodyLimit: Int) -> HTTPError {
        switch code {
        case CURLE_FILESIZE_EXCEEDED:
            return .bodyTooLarge(limit: bodyLimit)
        case CURLE_UNSUPPORTED_PROTOCOL:
            return .invalidRequest(.unsupportedScheme)
        case CURLE_URL_MALFORMAT:
            return .invalidRequest(.malformedURL)
        default:
            return .transport(kind: kind(of: code), curlCode: Int(code.rawValue))
        }
    }

    static func kind(of code: CURLcode) -> TransportKind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dns
        case CURLE_COULDNT_CONNECT:
            return .connect
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_TOO_MANY_REDIRECTS:
            return .tooManyRedirects
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT, CURLE_USE_SSL_FAILED:
            return .tls
        default:
            return .other
        }
    }
}
