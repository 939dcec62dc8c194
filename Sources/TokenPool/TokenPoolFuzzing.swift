/// The token-pool module's decoder of outside bytes, as a public table for `job-bench fuzz` and the fuzz
/// tests: Endorser's answers to the prefetch request (`EndorserClient.classify`), read for every status the
/// client distinguishes. Returns whether the answer was accepted as a fetch; rejection is normal, a crash or
/// a hang is a finding.
package enum TokenPoolFuzzing {
    package struct Decoder: Sendable {
        package let name: String
        package let seeds: [[UInt8]]
        package let decode: @Sendable ([UInt8]) -> Bool
    }

    package static let decoders: [Decoder] = [
        Decoder(name: "Endorser prefetch answer", seeds: [
            Array(#"{"data":[{"id":"01H","claim":{"@type":"GiveAction"}},{"id":"01J"}],"hitLimit":false}"#.utf8),
            Array(#"{"data":[],"hitLimit":true}"#.utf8),
            Array(#"{"error":{"code":"JWT_VERIFY_FAILED","message":"bad"}}"#.utf8),
        ], decode: { body in
            var fetched = false
            for status in [200, 400, 401, 429, 503] {
                if case .fetched = EndorserClient.classify(status: status, body: body) { fetched = true }
            }
            return fetched
        }),
    ]
}
