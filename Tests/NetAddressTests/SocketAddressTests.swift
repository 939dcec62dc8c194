import NetAddress
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(15)))
struct SocketAddressTests {
    @Test(arguments: [
        ("127.0.0.1:8080", "127.0.0.1", UInt16(8080)),
        ("relay.example:443", "relay.example", 443),
        ("localhost:1", "localhost", 1),
        ("10.0.0.1:65535", "10.0.0.1", 65535),
        ("[::1]:9000", "::1", 9000),
        ("[fe80::1%eth0]:80", "fe80::1%eth0", 80),
        ("host:0080", "host", 80),
    ])
    func acceptsHostPortAndBracketedIPv6(text: String, host: String, port: UInt16) throws {
        let address = try SocketAddress.parse(text)
        #expect(address == SocketAddress(host: host, port: port))
    }

    @Test(arguments: [
        "", "host", "host:", ":80", "[]:80", "[::1]", "[::1]80", "[::1:80", "::1:80", "a:b:80",
        "host:0", "host:65536", "host:99999", "host:+80", "host:-1", "host:8o", "host: 80", "host:٨٠",
        "my host:80", "a/b:80", String(repeating: "a", count: 254) + ":80",
    ])
    func refusesEveryOtherShape(text: String) {
        #expect(throws: SocketAddress.Malformed()) { try SocketAddress.parse(text) }
    }

    @Test func acceptsPortZeroOnlyWhenBindingAllowsIt() throws {
        #expect(throws: SocketAddress.Malformed()) { try SocketAddress.parse("127.0.0.1:0") }
        #expect(try SocketAddress.parse("127.0.0.1:0", allowingPortZero: true) == SocketAddress(host: "127.0.0.1", port: 0))
        #expect(try SocketAddress.parse("[::1]:0", allowingPortZero: true) == SocketAddress(host: "::1", port: 0))
        #expect(throws: SocketAddress.Malformed()) { try SocketAddress.parse("host:65536", allowingPortZero: true) }
    }

    @Test func formatsBackToTheTextItParsedWithBracketsOnlyForIPv6() throws {
        for text in ["127.0.0.1:8080", "relay.example:443", "[::1]:9000", "[2001:db8::2]:1"] {
            #expect(try SocketAddress.parse(text).text == text)
        }
        #expect(SocketAddress(host: "::", port: 0).text == "[::]:0")
        #expect(SocketAddress(host: "0.0.0.0", port: 53).text == "0.0.0.0:53")
    }
}
