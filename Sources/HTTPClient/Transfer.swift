import CCurl
import CShims
import Foundation

/// `curl_global_init` runs exactly once per process: Swift initialises globals lazily and thread-safely.
let curlGlobalInitResult: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

/// Whether this libcurl (8.0.0 or later) can reuse an HTTP/2 prior-knowledge connection.
let libcurlReusesPriorKnowledgeConnections: Bool = {
    // CURLVERSION_NOW is a macro Swift cannot import; version_num is present in every layout.
    guard let info = curl_version_info(CURLVERSION_FIRST) else { return false }
    return info.pointee.version_num >= 0x08_00_00
}()

/// The per-transfer receive state that libcurl's callbacks write into.
///
/// The callbacks receive it as an unretained pointer (`Unmanaged.passUnretained`): whoever configures
/// a handle with a state keeps that state alive until the handle is reset or cleaned up.
final class TransferState {
    var limit: Int
    var body: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    var bodyLimitExceeded = false
    /// The request's header list; owned here, freed by `reset` once libcurl no longer uses it.
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// The monotonic instant (`DispatchTime` nanoseconds) by which the request must start being sent; 0: no limit.
    var mustStartBy: UInt64 = 0
    /// The request was abandoned unsent: libcurl was about to write it after `mustStartBy`.
    var startedTooLate = false

    init(limit: Int) { self.limit = limit }

    func reset(limit: Int) {
        self.limit = limit
        body = []
        headers = []
        bodyLimitExceeded = false
        mustStartBy = 0
        startedTooLate = false
        freeHeaderList()
    }

    func freeHeaderList() {
        if let list = headerList { curl_slist_free_all(list) }
        headerList = nil
    }

    deinit { freeHeaderList() }

    func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if body.count + bytes.count > limit {
            bodyLimitExceeded = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    /// Reads one header line as libcurl hands it over, on its bytes (no Foundation string work: this runs for every
    /// header of every response).
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        if end == 0 { return }
        if end >= 5, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50, bytes[4] == 0x2F {  // "HTTP/"
            headers = []  // a new response begins (redirect hop, 1xx interim answer)
            return
        }
        if isBlank(bytes[0]) {  // obsolete line folding
            var start = 0
            while start < end, isBlank(bytes[start]) { start += 1 }
            var last = end
            while last > start, isBlank(bytes[last - 1]) { last -= 1 }
            if !headers.isEmpty {
                headers[headers.count - 1].value += " " + String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<last]), as: UTF8.self)
            }
            return
        }
        guard let colon = bytes[0..<end].firstIndex(of: 0x3A) else { return }
        var start = colon + 1
        while start < end, isBlank(bytes[start]) { start += 1 }
        var last = end
        while last > start, isBlank(bytes[last - 1]) { last -= 1 }
        headers.append((name: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<colon]), as: UTF8.self),
                        value: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<last]), as: UTF8.self)))
    }
}

private let writeCallback: shim_curl_data_callback = { buffer, size, count, userdata in
    let length = size * count
    guard let userdata else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(userdata).takeUnretainedValue()
    guard length > 0, let buffer else { return length }
    return state.appendBody(UnsafeRawBufferPointer(start: buffer, count: length)) ? length : 0
}

/// libcurl's `CURLOPT_PREREQFUNCTION` prototype: called once the connection is ready, right before the request is
/// written (for a multiplexed stream, when it gets its stream).
typealias PrereqCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32) -> Int32

/// Abandons a request that would start after its `mustStartBy` (`CURL_PREREQFUNC_ABORT`), nothing of it written.
let prereqCallback: PrereqCallback = { userdata, _, _, _, _ in
    guard let userdata else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(userdata).takeUnretainedValue()
    guard state.mustStartBy != 0, DispatchTime.now().uptimeNanoseconds > state.mustStartBy else { return 0 }
    state.startedTooLate = true
    return 1
}

/// Sets `CURLOPT_PREREQFUNCTION` (a function pointer, passed through the pointer-typed variadic shim) and its data.
func setStartDeadline(_ handle: UnsafeMutableRawPointer, state: TransferState, within seconds: Double) throws(HTTPError) {
    state.mustStartBy = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
    let function = unsafeBitCast(prereqCallback, to: UnsafeRawPointer.self)
    for (option, value) in [(CURLOPT_PREREQFUNCTION, function), (CURLOPT_PREREQDATA, UnsafeRawPointer(Unmanaged.passUnretained(state).toOpaque()))] {
        let code = shim_curl_easy_setopt_pointer(handle, option, value)
        guard code == CURLE_OK else { throw .transport(kind: .other, curlCode: Int(code.rawValue)) }
    }
}

private let headerCallback: shim_curl_data_callback = { buffer, size, count, userdata in
    let length = size * count
    guard let userdata else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(userdata).takeUnretainedValue()
    if length > 0, let buffer {
        state.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: length))
    }
    return length
}

private func isToken(_ text: String) -> Bool {
    guard !text.isEmpty else { return false }
    return text.utf8.allSatisfy { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

private func isValidHeaderValue(_ text: String) -> Bool {
    !text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
}

/// Checks the parts of a request libcurl would otherwise send as given or reject late.
func validate(_ request: HTTPRequest) throws(HTTPError) {
    guard isToken(request.method) else { throw .invalidRequest(.invalidMethod) }
    let lower = request.url.lowercased()
    guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { throw .invalidRequest(.unsupportedScheme) }
    guard !request.url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { throw .invalidRequest(.malformedURL) }
    for header in request.headers {
        guard isToken(header.name), isValidHeaderValue(header.value) else { throw .invalidRequest(.invalidHeader) }
    }
}

private func check(_ code: CURLcode) throws(HTTPError) {
    guard code == CURLE_OK else {
        if code == CURLE_UNKNOWN_OPTION || code == CURLE_NOT_BUILT_IN || code == CURLE_UNSUPPORTED_PROTOCOL {
            throw .invalidRequest(.unsupportedOption)
        }
        throw .transport(kind: .other, curlCode: Int(code.rawValue))
    }
}

private func setLong(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) throws(HTTPError) {
    try check(shim_curl_easy_setopt_long(handle, option, value))
}

/// Sets a string option; libcurl copies string options (7.17+), so the C string only lives for the call.
private func setString(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: String) throws(HTTPError) {
    let code = value.withCString { shim_curl_easy_setopt_pointer(handle, option, $0) }
    try check(code)
}

private func setPointer(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: UnsafeRawPointer?) throws(HTTPError) {
    try check(shim_curl_easy_setopt_pointer(handle, option, value))
}

private func milliseconds(_ seconds: Double) -> Int {
    guard seconds.isFinite, seconds > 0 else { return 1 }
    return max(1, Int(min(seconds * 1000, Double(Int32.max))))
}

/// `sha256//<base64>` for the first certificate in a PEM file.
func pinString(forCertificateFile path: String) -> String? {
    guard let pem = FileManager.default.contents(atPath: path), !pem.isEmpty else { return nil }
    var digest = [UInt8](repeating: 0, count: 32)
    let ok = pem.withUnsafeBytes { raw in
        shim_pem_certificate_spki_sha256(raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count, &digest)
    }
    guard ok == 1 else { return nil }
    return "sha256//" + Data(digest).base64EncodedString()
}

/// Configures a fresh (or freshly reset) easy handle for one request. On success the handle points at
/// `state` (unretained) and `state.headerList`, so `state` must outlive the transfer.
func configure(_ handle: UnsafeMutableRawPointer, request: HTTPRequest, options: HTTPClient.Options, state: TransferState,
               multiplexing: Bool) throws(HTTPError) {
    try validate(request)
    _ = curlGlobalInitResult

    try setString(handle, CURLOPT_URL, request.url)
    try setString(handle, CURLOPT_PROTOCOLS_STR, "http,https")
    try setString(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
    try setLong(handle, CURLOPT_NOSIGNAL, 1)
    try setLong(handle, CURLOPT_CONNECTTIMEOUT_MS, milliseconds(options.connectTimeout))
    try setLong(handle, CURLOPT_TIMEOUT_MS, milliseconds(options.totalTimeout))
    try setLong(handle, CURLOPT_FOLLOWLOCATION, options.followRedirects ? 1 : 0)
    try setLong(handle, CURLOPT_MAXREDIRS, max(0, options.maxRedirects))
    try check(shim_curl_easy_setopt_offt(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(max(0, options.maxResponseBodyBytes))))

    let version: Int
    switch options.httpVersion {
    case .http1_1: version = Int(CURL_HTTP_VERSION_1_1)
    case .http2, .http2OrHTTP1_1: version = Int(CURL_HTTP_VERSION_2TLS)
    case .http2PriorKnowledge: version = Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
    }
    try setLong(handle, CURLOPT_HTTP_VERSION, version)
    if multiplexing { try setLong(handle, CURLOPT_PIPEWAIT, 1) }
    if options.httpVersion == .http2PriorKnowledge, !libcurlReusesPriorKnowledgeConnections {
        // libcurl before 8.0.0 fails a transfer that reuses an h2c prior-knowledge connection with
        // CURLE_HTTP2 "Error in the HTTP2 framing layer" (curl issue #10634, fixed by PR #10643):
        // give every such transfer its own connection instead.
        try setLong(handle, CURLOPT_FRESH_CONNECT, 1)
        try setLong(handle, CURLOPT_FORBID_REUSE, 1)
    }

    // TLS
    let tls = options.tls
    var pin: String?
    switch tls.pinnedPublicKey {
    case nil: pin = nil
    case .sha256(let pins): pin = pins
    case .publicKeyFile(let path): pin = path
    case .certificateFile(let path):
        guard let computed = pinString(forCertificateFile: path) else { throw .invalidRequest(.unusablePin) }
        pin = computed
    }
    if let pin {
        guard !pin.isEmpty else { throw .invalidRequest(.unusablePin) }
        try setString(handle, CURLOPT_PINNEDPUBLICKEY, pin)
    }
    switch tls.verification {
    case .full:
        try setLong(handle, CURLOPT_SSL_VERIFYPEER, 1)
        try setLong(handle, CURLOPT_SSL_VERIFYHOST, 2)
    case .chainWithoutHostName:
        try setLong(handle, CURLOPT_SSL_VERIFYPEER, 1)
        try setLong(handle, CURLOPT_SSL_VERIFYHOST, 0)
    case .pinnedKeyOnly:
        guard pin != nil else { throw .invalidRequest(.unusablePin) }
        try setLong(handle, CURLOPT_SSL_VERIFYPEER, 0)
        try setLong(handle, CURLOPT_SSL_VERIFYHOST, 0)
    }
    if let caFile = tls.caFile { try setString(handle, CURLOPT_CAINFO, caFile) }
    if let certificate = tls.clientCertificateFile {
        try setString(handle, CURLOPT_SSLCERT, certificate)
        try setString(handle, CURLOPT_SSLCERTTYPE, "PEM")
    }
    if let key = tls.clientKeyFile {
        try setString(handle, CURLOPT_SSLKEY, key)
        try setString(handle, CURLOPT_SSLKEYTYPE, "PEM")
    }

    // Method and body
    let method = request.method
    if let body = request.body {
        try check(shim_curl_easy_setopt_offt(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
        // COPYPOSTFIELDS copies the bytes now; a zero-length body still needs a valid pointer.
        let code: CURLcode = body.isEmpty
            ? "".withCString { shim_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, $0) }
            : body.withUnsafeBytes { shim_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
        try check(code)
        if method != "POST" { try setString(handle, CURLOPT_CUSTOMREQUEST, method) }
    } else if method == "GET" {
        try setLong(handle, CURLOPT_HTTPGET, 1)
    } else if method == "HEAD" {
        try setLong(handle, CURLOPT_NOBODY, 1)
    } else {
        try setString(handle, CURLOPT_CUSTOMREQUEST, method)
    }

    // Headers
    state.freeHeaderList()
    var lines: [String] = []
    var hasContentType = false, hasExpect = false, hasUserAgent = false
    for header in request.headers {
        if asciiCaseInsensitiveEquals(header.name, "Content-Type") { hasContentType = true }
        if asciiCaseInsensitiveEquals(header.name, "Expect") { hasExpect = true }
        if asciiCaseInsensitiveEquals(header.name, "User-Agent") { hasUserAgent = true }
        // libcurl sends "Name;" as a header with an empty value ("Name:" would remove it).
        lines.append(header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)")
    }
    if request.body != nil {
        if !hasContentType { lines.append("Content-Type:") }  // drop libcurl's form-urlencoded default
        if !hasExpect { lines.append("Expect:") }  // no 100-continue round trip
    }
    if !hasUserAgent, let agent = options.userAgent, isValidHeaderValue(agent) { lines.append("User-Agent: \(agent)") }
    for line in lines {
        guard let appended = line.withCString({ curl_slist_append(state.headerList, $0) }) else {
            throw .transport(kind: .other, curlCode: Int(CURLE_OUT_OF_MEMORY.rawValue))
        }
        state.headerList = appended
    }
    try setPointer(handle, CURLOPT_HTTPHEADER, UnsafeRawPointer(state.headerList))

    // Receiving
    let opaqueState = UnsafeRawPointer(Unmanaged.passUnretained(state).toOpaque())
    try check(shim_curl_easy_setopt_write_callback(handle, writeCallback))
    try setPointer(handle, CURLOPT_WRITEDATA, opaqueState)
    try check(shim_curl_easy_setopt_header_callback(handle, headerCallback))
    try setPointer(handle, CURLOPT_HEADERDATA, opaqueState)
}

private func getLong(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> Int {
    var value = 0
    _ = shim_curl_easy_getinfo_long(handle, info, &value)
    return value
}

/// New connections libcurl opened for the last transfer on `handle`.
func newConnections(_ handle: UnsafeMutableRawPointer) -> Int { getLong(handle, CURLINFO_NUM_CONNECTS) }

/// Turns a finished transfer into a result; the body moves out of `state`.
func finish(_ handle: UnsafeMutableRawPointer, code: CURLcode, state: TransferState, options: HTTPClient.Options) -> Result<HTTPResponse, HTTPError> {
    if state.bodyLimitExceeded || code == CURLE_FILESIZE_EXCEEDED {
        return .failure(.bodyTooLarge(limit: options.maxResponseBodyBytes))
    }
    // Only the termination callback aborts a transfer (the body cap is handled above): the process was asked to stop.
    if code == CURLE_ABORTED_BY_CALLBACK { return .failure(.cancelled) }
    guard code == CURLE_OK else { return .failure(.fromCurl(code, bodyLimit: options.maxResponseBodyBytes)) }
    let version: HTTPProtocolVersion
    switch getLong(handle, CURLINFO_HTTP_VERSION) {
    case Int(CURL_HTTP_VERSION_1_0): version = .http1_0
    case Int(CURL_HTTP_VERSION_1_1): version = .http1_1
    case Int(CURL_HTTP_VERSION_2_0): version = .http2
    case Int(CURL_HTTP_VERSION_3): version = .http3
    default: version = .unknown
    }
    if options.httpVersion == .http2, version != .http2 {
        return .failure(.http2NotNegotiated(negotiated: version))
    }
    let response = HTTPResponse(status: getLong(handle, CURLINFO_RESPONSE_CODE), headers: state.headers,
                                body: state.body, httpVersion: version)
    state.body = []
    state.headers = []
    return .success(response)
}
