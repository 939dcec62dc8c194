import Foundation
import Testing
import TestSupport
@testable import HTTPClient

@Suite(.tags(.process), .timeLimit(.minutes(15))) struct HTTP2Tests {
    @Test func aThousandMultiplexedRequestsShareOneTLSConnection() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("h2_server.py", arguments: ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey,
                                                                    "--max-streams", "128"])
        defer { peer.stop() }
        let client = HTTPClient(options: .init(totalTimeout: 60, httpVersion: .http2, tls: TLSOptions(caFile: certificates.caCertificate)))
        let requests = (0..<1000).map { index in
            HTTPRequest(method: "POST", url: peer.url("https", path: "/3/device/\(index)?status=200&header=apns-id:\(index)"),
                        headers: [("apns-push-type", "background"), ("apns-priority", "5")],
                        body: Array("{\"aps\":{\"content-available\":1}}".utf8))
        }
        let outcome = client.batchWithStatistics(requests, maxConcurrentStreams: 100)
        #expect(outcome.results.count == 1000)
        var connectionIDs = Set<String>()
        var mostConnectionsSeen = 0
        for (index, result) in outcome.results.enumerated() {
            let response = try result.get()
            #expect(response.status == 200)
            #expect(response.httpVersion == .http2)
            #expect(response.header("apns-id") == "\(index)")  // results are in request order
            connectionIDs.insert(response.header("x-peer-connection-id") ?? "none")
            mostConnectionsSeen = max(mostConnectionsSeen, Int(response.header("x-peer-connections") ?? "") ?? 0)
        }
        #expect(outcome.connectionsOpened == 1)
        #expect(connectionIDs == ["1"])
        #expect(mostConnectionsSeen == 1)
        #expect(peer.stop().contains("CONNECTIONS 1\n"))
    }

    @Test func h2cPriorKnowledgeSpeaksHTTP2OverPlainTCP() throws {
        let peer = try PythonPeer.start("h2_server.py", arguments: ["--h2c"])
        defer { peer.stop() }
        let client = HTTPClient(options: .init(httpVersion: .http2PriorKnowledge))
        let response = try client.send(HTTPRequest(method: "POST", url: peer.url(path: "/echo?echo=1&status=201"),
                                                   headers: [("X-Token-Kind", "test")], body: Array("ping".utf8)))
        #expect(response.status == 201)
        #expect(response.httpVersion == .http2)
        let echo = try Echo(response)
        #expect(echo.method == "POST")
        #expect(echo.body == "ping")
        #expect(echo.header("x-token-kind") == "test")
    }

    @Test func aLargeBodyArrivesWholeOverHTTP2FlowControl() throws {
        let peer = try PythonPeer.start("h2_server.py", arguments: ["--h2c"])
        defer { peer.stop() }
        let client = HTTPClient(options: .init(httpVersion: .http2PriorKnowledge))
        let response = try client.send(HTTPRequest(url: peer.url(path: "/big?body_size=300000")))
        #expect(response.body.count == 300_000)
        let capped = HTTPClient(options: .init(maxResponseBodyBytes: 100_000, httpVersion: .http2PriorKnowledge))
        #expect(sendError(capped, HTTPRequest(url: peer.url(path: "/big?body_size=300000"))) == .bodyTooLarge(limit: 100_000))
    }

    @Test func aBatchKeepsEachRequestsOwnOutcomeInOrder() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("h2_server.py", arguments: ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey])
        defer { peer.stop() }
        let client = HTTPClient(options: .init(totalTimeout: 2, maxResponseBodyBytes: 1000, httpVersion: .http2,
                                               tls: TLSOptions(caFile: certificates.caCertificate)))
        let requests = [
            HTTPRequest(url: peer.url("https", path: "/ok?body=first")),
            HTTPRequest(url: peer.url("https", path: "/gone?status=410&body=%7B%22reason%22%3A%22Unregistered%22%7D")),
            HTTPRequest(url: peer.url("https", path: "/big?body_size=5000")),
            HTTPRequest(url: peer.url("https", path: "/slow?delay=8")),
            HTTPRequest(url: peer.url("https", path: "/bad"), headers: [("X-Broken", "a\r\nInjected: yes")]),
            HTTPRequest(url: peer.url("https", path: "/ok?body=last")),
        ]
        let results = client.batch(requests)
        #expect(results.count == 6)
        #expect((try? results[0].get().bodyText) == "first")
        #expect((try? results[1].get().status) == 410)
        #expect((try? results[1].get().bodyText) == "{\"reason\":\"Unregistered\"}")
        #expect(throws: HTTPError.bodyTooLarge(limit: 1000)) { try results[2].get() }
        #expect(throws: HTTPError.transport(kind: .timeout, curlCode: 28)) { try results[3].get() }
        #expect(throws: HTTPError.invalidRequest(.invalidHeader)) { try results[4].get() }
        #expect((try? results[5].get().bodyText) == "last")
        #expect(client.batch([]).isEmpty)
    }

    @Test func aCancelledBatchStartsNoFurtherRequestButFinishesTheOneInFlight() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("h2_server.py", arguments: ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey])
        defer { peer.stop() }
        let client = HTTPClient(options: .init(httpVersion: .http2, tls: TLSOptions(caFile: certificates.caCertificate)))
        let requests = [HTTPRequest(url: peer.url("https", path: "/first?delay=0.8&body=finished"))]
            + (1..<5).map { HTTPRequest(url: peer.url("https", path: "/later?body=\($0)")) }
        let cancelAt = Date().addingTimeInterval(0.3)
        // One stream at a time: the first request is in flight when cancellation arrives.
        let results = client.batch(requests, maxConcurrentStreams: 1, isCancelled: { Date() >= cancelAt })
        #expect((try? results[0].get().bodyText) == "finished")
        for result in results.dropFirst() {
            #expect(throws: HTTPError.cancelled) { try result.get() }
        }
        #expect(client.batch(requests, isCancelled: { true }).allSatisfy { (try? $0.get()) == nil })
    }

    @Test func anH2CBatchAnswersEveryRequest() throws {
        let peer = try PythonPeer.start("h2_server.py", arguments: ["--h2c"])
        defer { peer.stop() }
        let client = HTTPClient(options: .init(httpVersion: .http2PriorKnowledge))
        let results = client.batch((0..<10).map { HTTPRequest(url: peer.url(path: "/n?body=\($0)")) }, maxConcurrentStreams: 4)
        #expect(results.map { try? $0.get().bodyText } == (0..<10).map { "\($0)" })
        #expect(results.allSatisfy { (try? $0.get().httpVersion) == .http2 })
    }
}
