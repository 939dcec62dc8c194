import Cryptography
import Foundation
import HTTPClient

/// The relay module's decoders of outside bytes, as one public table for `job-bench fuzz` and the fuzz tests.
///
/// Each entry decodes one input the way the module does when the bytes arrive (APNs answers) and returns whether
/// it was accepted; rejection is a normal outcome, a crash or a hang is a finding. `seeds` are well-formed
/// examples for a mutation fuzzer to start from. The homeserver helper's decoders are `HomeserverFuzzing`.
package enum RelayFuzzing {
    package struct Decoder: Sendable {
        package let name: String
        package let seeds: [[UInt8]]
        package let decode: @Sendable ([UInt8]) -> Bool
    }

    /// Two authenticated-trigger bodies from Tests/Fixtures/trigger-v2/vectors.json (a Syncthing P-384 and an openssl P-256
    /// certificate: public keys, nothing secret).
    static let triggerV2Seeds: [[UInt8]] = [
        Array(#"{"device_id":"GNPQVMN-GI34MOJ-OUCUZPP-RALZWKP-SA7YRTF-QKVZ6TC-XGCLSQL-UIS2SAS","cert":"MIICHjCCAaOgAwIBAgIJAPd5ZsMjSUdwMAoGCCqGSM49BAMCMEoxEjAQBgNVBAoTCVN5bmN0aGluZzEgMB4GA1UECxMXQXV0b21hdGljYWxseSBHZW5lcmF0ZWQxEjAQBgNVBAMTCXN5bmN0aGluZzAeFw0yNjEyMDMwMDAwMDBaFw00NjExMjgwMDAwMDBaMEoxEjAQBgNVBAoTCVN5bmN0aGluZzEgMB4GA1UECxMXQXV0b21hdGljYWxseSBHZW5lcmF0ZWQxEjAQBgNVBAMTCXN5bmN0aGluZzB2MBAGByqGSM49AgEGBSuBBAAiA2IABHMbzul+2R7TT74Iqf/0NTc+Ytb6FFdI4Gz+t4YryBnpLV+woadWKQd1adVOF87OwkEJUssDgMOb3VEkVP2yIXESrrCNzx7xZKb65K23hfu0vTPT7oCf8EgtM/iOH6+KzqNVMFMwDgYDVR0PAQH/BAQDAgWgMB0GA1UdJQQWMBQGCCsGAQUFBwMBBggrBgEFBQcDAjAMBgNVHRMBAf8EAjAAMBQGA1UdEQQNMAuCCXN5bmN0aGluZzAKBggqhkjOPQQDAgNpADBmAjEA4GpjTVSVKKvBaAmQZIrKGZv63tIyFTUxzW3iNkrsbJFN9kFS3mVLT5LcXTIiOOISAjEAxVHruS1nw/DLgesXZXyTMkP5IIZmahouQvf7hD2flNze8IEhc77B8mLp5Yo6ekEW","ts":"1796300000","nonce":"AAECAwQFBgcICQoLDA0ODw==","sig":"0hNhkOhNBPNX2HlBR/GlK1HPWwuoHcXmPeZzmAWO18KbJfhe+Hmqzsvxr/daOHmHZ/jz3KiepjNhxDw4PwOJ6LzdmboEDxwDjfvIsIzXsm0UMrT/9r4MgeQuFSsg3BLt"}"#.utf8),
        Array(#"{"device_id":"56CCZML-KAZWE3E-7CTEOEQ-CAJBLU3-YKSRAAB-YHVO4DR-FTFPLCV-JOPSEQF","cert":"MIIB6jCCAY+gAwIBAgIUDANmXrJPAJBxjJmZAxMy0Pv3PL0wCgYIKoZIzj0EAwIwSjESMBAGA1UECgwJU3luY3RoaW5nMSAwHgYDVQQLDBdBdXRvbWF0aWNhbGx5IEdlbmVyYXRlZDESMBAGA1UEAwwJc3luY3RoaW5nMB4XDTI2MTIwMzA1MzYyM1oXDTQ2MTEyODA1MzYyM1owSjESMBAGA1UECgwJU3luY3RoaW5nMSAwHgYDVQQLDBdBdXRvbWF0aWNhbGx5IEdlbmVyYXRlZDESMBAGA1UEAwwJc3luY3RoaW5nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEaxLrn0X8rl+5dnJDuyklAp9o3nghLZLMqQFM48UpRRzlhc4DwECbA6me0+jJLCE43t2MwG0Es5CgJhMjdsp+9qNTMFEwHQYDVR0OBBYEFDIBaWvnSr5qNIBJ39zKWHUFcatzMB8GA1UdIwQYMBaAFDIBaWvnSr5qNIBJ39zKWHUFcatzMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhANSO/uzNsmdlVdVT+8IMfkv2QNe0sGVd8hdDWgwRK9/vAiEAxQnGqurqhNUakPB0gqq51Nax0vincL5NMb0wvTjBWWg=","ts":"1796300000","nonce":"EBESExQVFhcYGRobHB0eHw==","sig":"masOb+CCChhXz5LsGoeHuR4VgN18AOhrNYjJDQ+16dBHmSKoCAHJhKh9FUl7739vHapurT471iUeuMGOLmJrcA=="}"#.utf8),
    ]

    package static let decoders: [Decoder] = [
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
        // Accepted means "passed the syntax stage"; the certificate hash, parse and signature checks run on every such
        // input too (nearly every mutation of a signed body fails them, so their verdict would hide the parser's).
        Decoder(name: "relay /api/v2/trigger body", seeds: triggerV2Seeds, decode: { bytes in
            guard let request = try? TriggerV2.parse(bytes) else { return false }
            _ = try? TriggerV2.authenticate(request)
            return true
        }),
        Decoder(name: "device certificate (DER)", seeds: triggerV2Seeds.compactMap { body in
            (try? TriggerV2.parse(body)).map(\.certificateDER)
        }, decode: { (try? DeviceCertificate(der: $0)) != nil }),
    ]
}
