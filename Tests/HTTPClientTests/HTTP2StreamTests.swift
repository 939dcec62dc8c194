import Foundation
import Testing
import TestSupport
@testable import HTTPClient

@Suite(.tags(.process), .timeLimit(.minutes(15))) struct HTTP2StreamTests {
    private static func tlsPeer(_ certificates: TestCertificates) throws -> PythonPeer {
        try PythonPeer.start("h2_server.py", arguments: ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey])
    }

    @Test func aStreamBuildsEachRequestOnlyWhenAStreamIsFreeAndAnswersEveryIndexOnceWithItsOwnAnswer() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try Self.tlsPeer(certificates)
        defer { peer.stop() }
        let client = HTTPClient(options: .init(totalTimeout: 20, httpVersion: .http2, tls: TLSOptions(caFile: certificates.caCertificate)))
        let count = 300, streams = 10
        var built = 0, answered = 0, mostAhead = 0
        var answers = [Int: Result<HTTPResponse, HTTPError>]()
        var duplicates = 0
        let connections = client.stream(count: count, maxConcurrentStreams: streams, request: { index in
            #expect(index == built)  // built in index order, each once
            built += 1
            mostAhead = max(mostAhead, built - answered)
            let path: String
            switch index {
            case 5: path = "/3/device/5?status=410&body=%7B%22reason%22%3A%22Unregistered%22%2C%22timestamp%22%3A1700000000000%7D"
            case 7: path = "/3/device/7?status=429&header=Retry-After:30&body=%7B%22reason%22%3A%22TooManyRequests%22%7D"
            default: path = "/3/device/\(index)?header=apns-id:\(index)"
            }
            return HTTPRequest(method: "POST", url: peer.url("https", path: path), body: Array("{}".utf8))
        }) { index, answer in
            if answers[index] != nil { duplicates += 1 }
            answers[index] = answer
            answered += 1
        }
        #expect(built == count)
        #expect(duplicates == 0)
        #expect(answers.count == count)
        #expect(mostAhead <= streams)  // never more requests built than streams in flight
        #expect(connections == 1)
        #expect((try? answers[5]?.get().status) == 410)
        #expect((try? answers[5]?.get().bodyText) == "{\"reason\":\"Unregistered\",\"timestamp\":1700000000000}")
        #expect((try? answers[7]?.get().status) == 429)
        #expect((try? answers[7]?.get().header("retry-after")) == "30")
        for index in 0..<count where index != 5 && index != 7 {
            #expect((try? answers[index]?.get().header("apns-id")) == "\(index)")
        }
    }

    @Test func aConnectionDroppedMidStreamFailsOnlyTheStreamsInFlightOnItAndTheRestGoOnANewConnection() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try Self.tlsPeer(certificates)
        defer { peer.stop() }
        let client = HTTPClient(options: .init(totalTimeout: 20, httpVersion: .http2, tls: TLSOptions(caFile: certificates.caCertificate)))
        // Four streams at a time: 0–3 answer at once; 4, 5 and 7 are slow and still in flight when the peer drops the
        // connection on 6; 8 and later start only then, on a new connection.
        var answers = [Int: Result<HTTPResponse, HTTPError>]()
        let connections = client.stream(count: 20, maxConcurrentStreams: 4, request: { index in
            let query: String
            switch index {
            case 4, 5, 7: query = "delay=3"
            case 6: query = "delay=0.3&drop=1"
            default: query = "body=\(index)"
            }
            return HTTPRequest(url: peer.url("https", path: "/n?\(query)"))
        }) { index, answer in
            #expect(answers[index] == nil)
            answers[index] = answer
        }
        #expect(answers.count == 20)
        for index in [4, 5, 6, 7] {
            guard case .failure(.transport) = answers[index] else {
                Issue.record("stream \(index) on the dropped connection: \(String(describing: answers[index]))")
                continue
            }
        }
        for index in Array(0..<4) + Array(8..<20) {
            #expect((try? answers[index]?.get().bodyText) == "\(index)")
        }
        #expect(connections == 2)
    }

    @Test func aStreamCancelledPartWayReportsEveryRequestNeverStartedAsCancelledInIndexOrder() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try Self.tlsPeer(certificates)
        defer { peer.stop() }
        let client = HTTPClient(options: .init(totalTimeout: 20, httpVersion: .http2, tls: TLSOptions(caFile: certificates.caCertificate)))
        var order: [Int] = []
        var cancelledOnes: [Int] = []
        var built = 0
        client.stream(count: 50, maxConcurrentStreams: 2, isCancelled: { order.count >= 6 },
                      mayStart: { $0 != 3 }, request: { index in
            built += 1
            return HTTPRequest(url: peer.url("https", path: "/n?body=\(index)"))
        }) { index, answer in
            order.append(index)
            if case .failure(.cancelled) = answer { cancelledOnes.append(index) }
        }
        #expect(Set(order).count == 50 && order.count == 50)
        // 3 is refused by mayStart (not built, reported at once); the rest stop once six were reported.
        #expect(cancelledOnes.first == 3)
        let tail = Array(cancelledOnes.dropFirst())
        #expect(tail == tail.sorted() && tail.last == 49)
        #expect(built + cancelledOnes.count == 50)
        #expect(built <= 8)
    }
}
