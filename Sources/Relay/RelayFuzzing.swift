import Cryptography
import Foundation
import HTTPClient

/// The relay module's decoders of outside bytes, as one public table for `job-bench fuzz` and the fuzz tests.
///
/// Each entry decodes one input the way the module does when the bytes arrive (Syncthing's config.xml, the
/// Syncthing REST answers, the relay's health answer and `Retry-After`, APNs answers) and returns whether it
/// was accepted; rejection is a normal outcome, a crash or a hang is a finding. `seeds` are well-formed
/// examples for a mutation fuzzer to start from.
public enum RelayFuzzing {
    public struct Decoder: Sendable {
        public let name: String
        public let seeds: [[UInt8]]
        public let decode: @Sendable ([UInt8]) -> Bool
    }

    static let deviceID = "MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-BONSGYY-LTMRWAD"
    static let fixedNow = Date(timeIntervalSince1970: 1_780_000_000)

    /// Two authenticated-trigger bodies from Tests/Fixtures/trigger-v2/vectors.json (a Syncthing P-384 and an openssl P-256
    /// certificate: public keys, nothing secret).
    static let triggerV2Seeds: [[UInt8]] = [
        Array(#"{"device_id":"GNPQVMN-GI34MOJ-OUCUZPP-RALZWKP-SA7YRTF-QKVZ6TC-XGCLSQL-UIS2SAS","cert":"MIICHjCCAaOgAwIBAgIJAPd5ZsMjSUdwMAoGCCqGSM49BAMCMEoxEjAQBgNVBAoTCVN5bmN0aGluZzEgMB4GA1UECxMXQXV0b21hdGljYWxseSBHZW5lcmF0ZWQxEjAQBgNVBAMTCXN5bmN0aGluZzAeFw0yNjEyMDMwMDAwMDBaFw00NjExMjgwMDAwMDBaMEoxEjAQBgNVBAoTCVN5bmN0aGluZzEgMB4GA1UECxMXQXV0b21hdGljYWxseSBHZW5lcmF0ZWQxEjAQBgNVBAMTCXN5bmN0aGluZzB2MBAGByqGSM49AgEGBSuBBAAiA2IABHMbzul+2R7TT74Iqf/0NTc+Ytb6FFdI4Gz+t4YryBnpLV+woadWKQd1adVOF87OwkEJUssDgMOb3VEkVP2yIXESrrCNzx7xZKb65K23hfu0vTPT7oCf8EgtM/iOH6+KzqNVMFMwDgYDVR0PAQH/BAQDAgWgMB0GA1UdJQQWMBQGCCsGAQUFBwMBBggrBgEFBQcDAjAMBgNVHRMBAf8EAjAAMBQGA1UdEQQNMAuCCXN5bmN0aGluZzAKBggqhkjOPQQDAgNpADBmAjEA4GpjTVSVKKvBaAmQZIrKGZv63tIyFTUxzW3iNkrsbJFN9kFS3mVLT5LcXTIiOOISAjEAxVHruS1nw/DLgesXZXyTMkP5IIZmahouQvf7hD2flNze8IEhc77B8mLp5Yo6ekEW","ts":"1796300000","nonce":"AAECAwQFBgcICQoLDA0ODw==","sig":"0hNhkOhNBPNX2HlBR/GlK1HPWwuoHcXmPeZzmAWO18KbJfhe+Hmqzsvxr/daOHmHZ/jz3KiepjNhxDw4PwOJ6LzdmboEDxwDjfvIsIzXsm0UMrT/9r4MgeQuFSsg3BLt"}"#.utf8),
        Array(#"{"device_id":"56CCZML-KAZWE3E-7CTEOEQ-CAJBLU3-YKSRAAB-YHVO4DR-FTFPLCV-JOPSEQF","cert":"MIIB6jCCAY+gAwIBAgIUDANmXrJPAJBxjJmZAxMy0Pv3PL0wCgYIKoZIzj0EAwIwSjESMBAGA1UECgwJU3luY3RoaW5nMSAwHgYDVQQLDBdBdXRvbWF0aWNhbGx5IEdlbmVyYXRlZDESMBAGA1UEAwwJc3luY3RoaW5nMB4XDTI2MTIwMzA1MzYyM1oXDTQ2MTEyODA1MzYyM1owSjESMBAGA1UECgwJU3luY3RoaW5nMSAwHgYDVQQLDBdBdXRvbWF0aWNhbGx5IEdlbmVyYXRlZDESMBAGA1UEAwwJc3luY3RoaW5nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEaxLrn0X8rl+5dnJDuyklAp9o3nghLZLMqQFM48UpRRzlhc4DwECbA6me0+jJLCE43t2MwG0Es5CgJhMjdsp+9qNTMFEwHQYDVR0OBBYEFDIBaWvnSr5qNIBJ39zKWHUFcatzMB8GA1UdIwQYMBaAFDIBaWvnSr5qNIBJ39zKWHUFcatzMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhANSO/uzNsmdlVdVT+8IMfkv2QNe0sGVd8hdDWgwRK9/vAiEAxQnGqurqhNUakPB0gqq51Nax0vincL5NMb0wvTjBWWg=","ts":"1796300000","nonce":"EBESExQVFhcYGRobHB0eHw==","sig":"masOb+CCChhXz5LsGoeHuR4VgN18AOhrNYjJDQ+16dBHmSKoCAHJhKh9FUl7739vHapurT471iUeuMGOLmJrcA=="}"#.utf8),
    ]

    public static let decoders: [Decoder] = [
        Decoder(name: "syncthing config.xml", seeds: [
            Array("""
                <configuration version="37"><folder id="abcd-1234" path="/data"><device id="\(deviceID)"></device></folder>
                <gui enabled="true" tls="false" debugging="false"><address>127.0.0.1:8384</address><apikey>k3yK3yk3yK3y</apikey><theme>default</theme></gui>
                <options><listenAddress>default</listenAddress></options></configuration>
                """.utf8),
            Array(#"<?xml version="1.0"?><configuration><gui tls="true"><address>/run/st.sock</address><apikey> a </apikey></gui></configuration>"#.utf8),
            Array(#"<!DOCTYPE c [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><configuration><gui><address>&b;</address><apikey>&a;</apikey></gui></configuration>"#.utf8),
        ], decode: { bytes in
            guard let gui = SyncthingConfigFile.parseGUI(Data(bytes)) else { return false }
            return (try? SyncthingConfigFile.inferURL(address: gui.address, tls: gui.tls)) != nil
        }),
        Decoder(name: "syncthing /rest/system/status", seeds: [
            Array(#"{"myID":"\#(deviceID)","uptime":10,"alloc":123}"#.utf8), Array(#"{"myID":"x"}"#.utf8),
        ], decode: { (try? SyncthingClient.myID(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/config/devices", seeds: [
            Array(#"[{"deviceID":"\#(deviceID)","name":"a","paused":false},{"deviceID":"\#(deviceID)","paused":true}]"#.utf8),
        ], decode: { (try? SyncthingClient.devices(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/config/folders", seeds: [
            Array(#"[{"id":"abcd-1234","label":"Vault","paused":false,"devices":[{"deviceID":"\#(deviceID)"},{"deviceID":"X"}]}]"#.utf8),
        ], decode: { (try? SyncthingClient.folders(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/db/completion", seeds: [
            Array(#"{"completion":100,"globalBytes":1024,"needBytes":0,"needDeletes":0,"needItems":0,"remoteState":"valid","sequence":12}"#.utf8),
            Array(#"{"needBytes":1e300,"needDeletes":-1,"needItems":9223372036854775807}"#.utf8),
        ], decode: { (try? SyncthingClient.completion(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/system/connections", seeds: [
            Array(#"{"connections":{"\#(deviceID)":{"connected":true,"paused":false,"address":"1.2.3.4:22000"}},"total":{"inBytesTotal":1}}"#.utf8),
        ], decode: { (try? SyncthingClient.connectedDevices(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "relay /api/v1/health", seeds: [Array(#"{"status":"ok","version":"1.2.0"}"#.utf8)],
                decode: { RelayClient.isHealthyAnswer(status: 200, body: $0) }),
        Decoder(name: "Retry-After (relay 429)", seeds: [Array("120".utf8), Array("Wed, 21 Oct 2026 07:28:00 GMT".utf8), Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8)],
                decode: { bytes in
                    guard case .rateLimited = RelayAnswer.classify(status: 429, retryAfter: String(decoding: bytes, as: UTF8.self), now: fixedNow) else { return false }
                    return RetryAfter.parse(String(decoding: bytes, as: UTF8.self), now: fixedNow) != nil
                }),
        Decoder(name: "APNs answer", seeds: [
            Array(#"{"reason":"Unregistered","timestamp":1780000000000}"#.utf8), Array(#"{"reason":"BadDeviceToken"}"#.utf8),
            Array(#"{"reason":"TooManyRequests"}"#.utf8),
        ], decode: { bytes in
            var accepted = false
            for status in [400, 403, 410, 429, 500] {
                let response = HTTPResponse(status: status, headers: [("content-type", "application/json")], body: bytes, httpVersion: .http2)
                if APNsPush.result(.success(response)).reason != nil { accepted = true }
            }
            return accepted
        }),
        // docs/protocols/trigger-v2.md: the syntax stage, then (for a body that parses) the certificate and signature
        // checks — a mutated certificate usually fails the hash, so the certificate parser has a target of its own.
        Decoder(name: "relay /api/v2/trigger body", seeds: triggerV2Seeds, decode: { bytes in
            guard let request = try? TriggerV2.parse(bytes) else { return false }
            return (try? TriggerV2.authenticate(request)) != nil
        }),
        Decoder(name: "device certificate (DER)", seeds: triggerV2Seeds.compactMap { body in
            (try? TriggerV2.parse(body)).map(\.certificateDER)
        }, decode: { (try? DeviceCertificate(der: $0)) != nil }),
    ]
}
