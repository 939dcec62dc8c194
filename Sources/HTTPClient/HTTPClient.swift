import CCurl
import CShims

/// An HTTP client on libcurl: HTTP/1.1 and HTTP/2 (ALPN or prior knowledge), timeouts, a response
/// body cap, TLS verification with an optional extra CA file and public-key pin.
///
/// Thread-safe: the client holds only immutable options; every `send`, `batch` and `stream` uses its own
/// libcurl handles and frees them before returning. `send` opens a new connection per call; `batch` and
/// `stream` multiplex their requests over one connection per host.
package final class HTTPClient: Sendable {
    package let options: Options

    package init(options: Options = Options()) {
        _ = curlGlobalInitResult
        self.options = options
    }

    /// Sends one request and waits for the whole response. Any HTTP status is a response, not an error.
    ///
    /// Once SIGTERM or SIGINT has been recorded (a pass's termination handler), the transfer is aborted within about
    /// a second and fails with `HTTPError.cancelled`, instead of running on to its timeout.
    package func send(_ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        guard curlGlobalInitResult == CURLE_OK else { throw .transport(kind: .other, curlCode: Int(curlGlobalInitResult.rawValue)) }
        guard let handle = curl_easy_init() else { throw .transport(kind: .other, curlCode: Int(CURLE_OUT_OF_MEMORY.rawValue)) }
        defer { curl_easy_cleanup(handle) }
        let state = TransferState(limit: options.maxResponseBodyBytes)
        let result: Result<HTTPResponse, HTTPError> = withExtendedLifetime(state) {
            do throws(HTTPError) {
                try configure(handle, request: request, options: options, state: state, multiplexing: false)
                let stop = shim_curl_easy_abort_on_termination(handle)
                guard stop == CURLE_OK else { throw HTTPError.transport(kind: .other, curlCode: Int(stop.rawValue)) }
            } catch {
                return .failure(error)
            }
            let code = curl_easy_perform(handle)
            return finish(handle, code: code, state: state, options: options)
        }
        return try result.get()
    }

    /// What a batch did.
    package struct BatchOutcome: Sendable {
        /// One result per request, in request order.
        package var results: [Result<HTTPResponse, HTTPError>]
        /// Connections libcurl opened for the batch (`CURLINFO_NUM_CONNECTS` summed over the transfers).
        package var connectionsOpened: Int
    }

    /// Sends many requests concurrently, multiplexed as HTTP/2 streams over one connection per host,
    /// and returns one result per request, in request order. See `stream`.
    package func batch(_ requests: [HTTPRequest], maxConcurrentStreams: Int = 100,
                      isCancelled: (() -> Bool)? = nil) -> [Result<HTTPResponse, HTTPError>] {
        batchWithStatistics(requests, maxConcurrentStreams: maxConcurrentStreams, isCancelled: isCancelled).results
    }

    /// `batch`, with the connections it opened. The results are collected from `stream`.
    package func batchWithStatistics(_ requests: [HTTPRequest], maxConcurrentStreams: Int = 100,
                                    isCancelled: (() -> Bool)? = nil) -> BatchOutcome {
        var results = [Result<HTTPResponse, HTTPError>](repeating: .failure(.cancelled), count: requests.count)
        let connections = stream(count: requests.count, maxConcurrentStreams: maxConcurrentStreams, isCancelled: isCancelled,
                                 request: { requests[$0] }, onResult: { results[$0] = $1 })
        return BatchOutcome(results: results, connectionsOpened: connections)
    }

    /// Sends `count` requests over libcurl's multi interface, building each one (`request(index)`) only when a stream
    /// is free for it and handing each answer to `onResult` as it arrives, so a caller holds neither all the requests
    /// nor all the answers: memory stays flat however many requests there are. Returns the connections libcurl
    /// opened (`CURLINFO_NUM_CONNECTS` summed over the transfers).
    ///
    /// `onResult` is called exactly once for every index in `0..<count`, on the calling thread, between libcurl
    /// steps: as each transfer finishes (in completion order), at once for a request refused by `mayStart` or one
    /// that could not be set up, and at the end, in index order, with `HTTPError.cancelled` for those never started.
    ///
    /// `CURLMOPT_PIPELINING = CURLPIPE_MULTIPLEX`, `CURLOPT_PIPEWAIT` on every transfer (wait for the first
    /// connection and multiplex on it rather than open another), at most one connection per host
    /// (`CURLMOPT_MAX_HOST_CONNECTIONS = 1`) and at most `maxConcurrentStreams` transfers in flight (also passed as
    /// `CURLMOPT_MAX_CONCURRENT_STREAMS`; the server's own SETTINGS limit applies too). Over HTTP/1.1 the same
    /// requests run one after the other on the one connection.
    ///
    /// At most `maxConcurrentStreams` easy handles exist; each is reset and reused for the next request.
    /// Per-request timeouts (`Options.totalTimeout`) start when a request is handed to libcurl.
    /// `maxConcurrentStreams` below 1 means 1.
    ///
    /// `isCancelled` (e.g. "SIGTERM arrived") is checked before each request is handed to libcurl and at
    /// least every 200 ms while waiting. Once it returns true no further request starts: those fail with
    /// `HTTPError.cancelled`; transfers already in flight finish (bounded by `Options.totalTimeout`), so a
    /// request is never left in an unknown half-sent state by the cancellation itself.
    ///
    /// `mayStart`, when given, is asked (on the calling thread) right before each request is built and handed to
    /// libcurl; a request it refuses is not sent and fails with `HTTPError.cancelled`, the others go on. With
    /// `startWithin`, a request libcurl would start writing later than that many seconds after it was handed over
    /// (waiting for the connection, or for a free stream on it) is abandoned with nothing written: it fails with a
    /// `.timeout` transport error carrying `CURLE_ABORTED_BY_CALLBACK`.
    @discardableResult
    package func stream(count: Int, maxConcurrentStreams: Int = 100, isCancelled: (() -> Bool)? = nil,
                       mayStart: ((Int) -> Bool)? = nil, startWithin: Double? = nil,
                       request: (Int) -> HTTPRequest, onResult: (Int, Result<HTTPResponse, HTTPError>) -> Void) -> Int {
        guard count > 0 else { return 0 }
        guard curlGlobalInitResult == CURLE_OK, let multi = curl_multi_init() else {
            let failure = HTTPError.transport(kind: .other, curlCode: Int(curlGlobalInitResult == CURLE_OK ? CURLE_OUT_OF_MEMORY.rawValue : curlGlobalInitResult.rawValue))
            for index in 0..<count { onResult(index, .failure(failure)) }
            return 0
        }
        defer { curl_multi_cleanup(multi) }
        var connections = 0
        let slotCount = max(1, min(maxConcurrentStreams, count))
        _ = shim_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = shim_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1)
        _ = shim_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, slotCount)

        var handles = [UnsafeMutableRawPointer?](repeating: nil, count: slotCount)
        let states = (0..<slotCount).map { _ in TransferState(limit: options.maxResponseBodyBytes) }
        var requestInSlot = [Int](repeating: -1, count: slotCount)
        var freeSlots = Array((0..<slotCount).reversed())
        defer {
            for case let handle? in handles { curl_easy_cleanup(handle) }
        }

        func release(slot: Int, handle: UnsafeMutableRawPointer) {
            _ = curl_multi_remove_handle(multi, handle)
            states[slot].reset(limit: options.maxResponseBodyBytes)
            requestInSlot[slot] = -1
            freeSlots.append(slot)
        }

        withExtendedLifetime(states) {
            var next = 0
            var active = 0
            var cancelled = false
            defer {
                // Requests never handed over (cancelled, or the multi handle failed): reported in index order.
                for index in next..<count { onResult(index, .failure(.cancelled)) }
            }
            while (next < count && !cancelled) || active > 0 {
                if !cancelled, next < count, let isCancelled, isCancelled() {
                    cancelled = true  // the requests from `next` on are reported as .cancelled
                }
                // Build and hand pending requests to libcurl while slots are free.
                while !cancelled, active < slotCount, next < count, let slot = freeSlots.popLast() {
                    let index = next
                    next += 1
                    if let mayStart, !mayStart(index) {
                        freeSlots.append(slot)
                        onResult(index, .failure(.cancelled))
                        continue
                    }
                    let handle: UnsafeMutableRawPointer
                    if let existing = handles[slot] {
                        curl_easy_reset(existing)
                        handle = existing
                    } else if let created = curl_easy_init() {
                        handles[slot] = created
                        handle = created
                    } else {
                        freeSlots.append(slot)
                        onResult(index, .failure(.transport(kind: .other, curlCode: Int(CURLE_OUT_OF_MEMORY.rawValue))))
                        continue
                    }
                    states[slot].reset(limit: options.maxResponseBodyBytes)
                    do throws(HTTPError) {
                        // The request lives only while it is configured: libcurl copies its strings and body.
                        try configure(handle, request: request(index), options: options, state: states[slot], multiplexing: true)
                        try checkSetPrivate(handle, slot: slot)
                        if let startWithin { try setStartDeadline(handle, state: states[slot], within: startWithin) }
                    } catch {
                        states[slot].reset(limit: options.maxResponseBodyBytes)
                        freeSlots.append(slot)
                        onResult(index, .failure(error))
                        continue
                    }
                    let added = curl_multi_add_handle(multi, handle)
                    guard added == CURLM_OK else {
                        states[slot].reset(limit: options.maxResponseBodyBytes)
                        freeSlots.append(slot)
                        onResult(index, .failure(.transport(kind: .other, curlCode: Int(CURLE_FAILED_INIT.rawValue))))
                        continue
                    }
                    requestInSlot[slot] = index
                    active += 1
                }
                if active == 0 { continue }

                var running: Int32 = 0
                let performed = curl_multi_perform(multi, &running)
                if performed != CURLM_OK {
                    // The multi handle is unusable: fail what is in flight and what is left.
                    let failure = HTTPError.transport(kind: .other, curlCode: Int(CURLE_FAILED_INIT.rawValue))
                    for slot in 0..<slotCount where requestInSlot[slot] >= 0 {
                        let index = requestInSlot[slot]
                        if let handle = handles[slot] { release(slot: slot, handle: handle) }
                        onResult(index, .failure(failure))
                    }
                    for index in next..<count { onResult(index, .failure(failure)) }
                    next = count
                    return
                }

                var completed = 0
                var queued: Int32 = 0
                while let message = curl_multi_info_read(multi, &queued) {
                    guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
                    let code = shim_curl_msg_result(message)
                    var privateValue: UnsafeMutableRawPointer?
                    _ = shim_curl_easy_getinfo_pointer(handle, CURLINFO_PRIVATE, &privateValue)
                    let slot = Int(bitPattern: privateValue) - 1
                    guard slot >= 0, slot < slotCount, requestInSlot[slot] >= 0 else { continue }
                    let finished = states[slot].startedTooLate
                        ? .failure(.transport(kind: .timeout, curlCode: Int(CURLE_ABORTED_BY_CALLBACK.rawValue)))
                        : finish(handle, code: code, state: states[slot], options: options)
                    let index = requestInSlot[slot]
                    connections += newConnections(handle)
                    release(slot: slot, handle: handle)
                    active -= 1
                    completed += 1
                    onResult(index, finished)
                }
                // Wait for socket activity unless finished transfers freed slots for waiting requests.
                if active > 0, !(completed > 0 && next < count && !cancelled) {
                    _ = curl_multi_poll(multi, nil, 0, 200, nil)
                }
            }
        }
        return connections
    }
}

private func checkSetPrivate(_ handle: UnsafeMutableRawPointer, slot: Int) throws(HTTPError) {
    let code = shim_curl_easy_setopt_pointer(handle, CURLOPT_PRIVATE, UnsafeRawPointer(bitPattern: slot + 1))
    guard code == CURLE_OK else { throw .transport(kind: .other, curlCode: Int(code.rawValue)) }
}
