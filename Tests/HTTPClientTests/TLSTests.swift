import Foundation
import Testing
import TestSupport
@testable import HTTPClient

@Suite(.tags(.process), .timeLimit(.minutes(15))) struct TLSTests {
    @Test func anUntrustedCertificateFailsWithTLS() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("http1_server.py", arguments: ["--tls-cert", certificates.untrustedCertificate, "--tls-key", certificates.untrustedKey])
        defer { peer.stop() }
        let error = sendError(HTTPClient(), HTTPRequest(url: peer.url("https")))
        #expect(error == .transport(kind: .tls, curlCode: 60))  // CURLE_PEER_FAILED_VERIFICATION
        // Trusting another CA does not help either.
        let withCA = HTTPClient(options: .init(tls: TLSOptions(caFile: certificates.caCertificate)))
        #expect(sendError(withCA, HTTPRequest(url: peer.url("https")))?.transportKind == .tls)
    }

    @Test func aCertificateIssuedByTheGivenCAFileIsTrusted() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("http1_server.py", arguments: ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey])
        defer { peer.stop() }
        let client = HTTPClient(options: .init(tls: TLSOptions(caFile: certificates.caCertificate)))
        for host in ["127.0.0.1", "localhost"] {
            let response = try client.send(HTTPRequest(url: peer.url("https", host: host, path: "/secure?body=fine")))
            #expect(response.status == 200)
            #expect(response.bodyText == "fine")
        }
    }

    @Test func aPinnedKeyIsAcceptedWhileTheCertificateNameDoesNotMatch() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("http1_server.py", arguments: ["--tls-cert", certificates.foreignNameCertificate, "--tls-key", certificates.foreignNameKey])
        defer { peer.stop() }
        let request = HTTPRequest(url: peer.url("https", path: "/rest/system/status?body=pinned"))

        // The name really does not match: trusting the certificate itself still fails on the name.
        let byName = HTTPClient(options: .init(tls: TLSOptions(caFile: certificates.foreignNameCertificate)))
        #expect(sendError(byName, request) == .transport(kind: .tls, curlCode: 60))

        let pins: [PublicKeyPin] = [
            .sha256(try certificates.sha256Pin(of: certificates.foreignNameCertificate)),
            .sha256(try certificates.sha256Pin(of: certificates.untrustedCertificate) + ";" + certificates.sha256Pin(of: certificates.foreignNameCertificate)),
            .certificateFile(path: certificates.foreignNameCertificate),
            .publicKeyFile(path: try certificates.publicKeyFile(of: certificates.foreignNameCertificate)),
        ]
        for pin in pins {
            let client = HTTPClient(options: .init(tls: .pinnedKeyOnly(pin)))
            let response = try client.send(request)
            #expect(response.bodyText == "pinned", "\(pin)")
        }
        // Chain verification with the host name off also accepts it, with the pin on top.
        let chainNoName = HTTPClient(options: .init(tls: TLSOptions(verification: .chainWithoutHostName, caFile: certificates.foreignNameCertificate,
                                                                    pinnedPublicKey: .certificateFile(path: certificates.foreignNameCertificate))))
        #expect(try chainNoName.send(request).status == 200)
    }

    @Test func aWrongPinFailsWithTLS() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("http1_server.py", arguments: ["--tls-cert", certificates.foreignNameCertificate, "--tls-key", certificates.foreignNameKey])
        defer { peer.stop() }
        let request = HTTPRequest(url: peer.url("https"))
        for pin in [PublicKeyPin.sha256(try certificates.sha256Pin(of: certificates.untrustedCertificate)),
                    .certificateFile(path: certificates.serverCertificate)] {
            let client = HTTPClient(options: .init(tls: .pinnedKeyOnly(pin)))
            #expect(sendError(client, request) == .transport(kind: .tls, curlCode: 90))  // CURLE_SSL_PINNEDPUBKEYNOTMATCH
        }
        // A pin is checked on top of full verification too.
        let trusted = HTTPClient(options: .init(tls: TLSOptions(verification: .chainWithoutHostName, caFile: certificates.foreignNameCertificate,
                                                                pinnedPublicKey: .certificateFile(path: certificates.untrustedCertificate))))
        #expect(sendError(trusted, request) == .transport(kind: .tls, curlCode: 90))
    }

    @Test func pinOnlyVerificationWithoutAUsablePinIsRefusedBeforeSending() throws {
        let missingPin = HTTPClient(options: .init(tls: TLSOptions(verification: .pinnedKeyOnly)))
        #expect(sendError(missingPin, HTTPRequest(url: "https://127.0.0.1:9/")) == .invalidRequest(.unusablePin))
        let unreadable = HTTPClient(options: .init(tls: .pinnedKeyOnly(.certificateFile(path: "/nonexistent/https-cert.pem"))))
        #expect(sendError(unreadable, HTTPRequest(url: "https://127.0.0.1:9/")) == .invalidRequest(.unusablePin))
    }

    @Test func aClientCertificateIsPresentedWhenTheServerRequiresOne() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("http1_server.py", arguments: ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey,
                                                                       "--client-ca", certificates.caCertificate])
        defer { peer.stop() }
        let request = HTTPRequest(url: peer.url("https", path: "/mtls?body=hello"))
        let withCertificate = HTTPClient(options: .init(tls: TLSOptions(caFile: certificates.caCertificate, clientCertificateFile: certificates.clientCertificate,
                                                                        clientKeyFile: certificates.clientKey)))
        #expect(try withCertificate.send(request).bodyText == "hello")
        let without = HTTPClient(options: .init(tls: TLSOptions(caFile: certificates.caCertificate)))
        // TLS 1.3 rejects the missing certificate after the client's handshake is done, so libcurl reports
        // a send or receive failure (curl 55/56, kind .other) rather than a handshake error.
        #expect(sendError(without, request)?.transportKind != nil)
    }

    @Test func requiredHTTP2FailsAgainstAnHTTP1OnlyServerAndFallbackSucceeds() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let peer = try PythonPeer.start("http1_server.py", arguments: ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey])
        defer { peer.stop() }
        let tls = TLSOptions(caFile: certificates.caCertificate)
        let strict = HTTPClient(options: .init(httpVersion: .http2, tls: tls))
        #expect(sendError(strict, HTTPRequest(url: peer.url("https"))) == .http2NotNegotiated(negotiated: .http1_1))
        let lenient = HTTPClient(options: .init(httpVersion: .http2OrHTTP1_1, tls: tls))
        #expect(try lenient.send(HTTPRequest(url: peer.url("https"))).httpVersion == .http1_1)
    }
}
