import Foundation
import HTTPClient

/// The relay module's decoders of outside bytes, as one public table for `job-bench fuzz` and the fuzz tests.
///
/// Each entry decodes one input the way the module does when the bytes arrive (APNs answers) and returns whether
/// it was accepted; rejection is a normal outcome, a crash or a hang is a finding. `seeds` are well-formed
/// examples for a mutation fuzzer to start from. The homeserver helper's decoders are `HomeserverFuzzing`.
public enum RelayFuzzing {
    public struct Decoder: Sendable {
        public let name: String
        public let seeds: [[UInt8]]
        public let decode: @Sendable ([UInt8]) -> Bool
    }

    public static let decoders: [Decoder] = [
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
    ]
}
