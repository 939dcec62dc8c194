import Testing
@testable import MeshMedia

/// A small run of the `fuzz-media` mutation loop in the tests: every decoder stays total and round-trips.
@Suite(.timeLimit(.minutes(15))) struct FuzzCorpusTests {
    @Test func twentyThousandMutatedInputsProduceOnlyTypedErrorsAndRoundTrips() throws {
        let fuzzer = try WireFuzzer(seed: 7)
        let findings = fuzzer.run(iterations: 20_000)
        #expect(findings == 0)
        for name in WireFuzzer.decoderNames {
            let tally = fuzzer.tallies[name]
            #expect((tally?.inputs ?? 0) > 100, "decoder \(name) was barely exercised")
            #expect((tally?.rejected ?? 0) > 0, "decoder \(name) rejected nothing")
        }
        // Mutations keep enough structure for some inputs to decode.
        #expect((fuzzer.tallies["BitchatPacket"]?.accepted ?? 0) > 0)
        #expect((fuzzer.tallies["FilePacket"]?.accepted ?? 0) > 0)
    }

    @Test func theRunIsReproducibleFromItsSeed() throws {
        #expect(try WireFuzzer.input(seed: 11, at: 500) == WireFuzzer.input(seed: 11, at: 500))
        #expect(try WireFuzzer.input(seed: 11, at: 500) != WireFuzzer.input(seed: 12, at: 500))
    }
}
