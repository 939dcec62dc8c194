import Chaos
import Grants
import Homeserver
import Relay
import TokenPool
import Testing

/// A small corpus run of the fuzz scenario (`job-bench fuzz` runs a million inputs per decoder): every
/// homeserver-helper and relay decoder gets seeded mutations; none may crash (which would end the test process) or hang. The
/// mesh codecs' corpus run is MeshMediaTests' `twentyThousandMutatedInputsProduceOnlyTypedErrorsAndRoundTrips`.
@Suite(.timeLimit(.minutes(15))) struct FuzzCorpusTests {
    @Test func everyRelayDecoderSurvivesMutatedInputs() {
        let decoders = HomeserverFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
            + RelayFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
        #expect(decoders.count >= 9)
        for (offset, decoder) in decoders.enumerated() {
            // The seeds themselves are well formed: each is accepted as it stands (the table is not vacuous).
            #expect(decoder.seeds.contains { decoder.decode($0) }, "\(decoder.name): no seed accepted")
            let report = MutationFuzzer(seed: 0xF022 &+ UInt64(offset)).run(decoder, inputs: 3_000)
            #expect(report.inputs == 3_000 && report.hangs == 0, "\(decoder.name)")
            #expect(report.accepted > 0 && report.rejected > 0, "\(decoder.name): mutations neither all accepted nor all rejected")
        }
    }

    @Test func theConfigXMLInputThatCrashedXMLParserIsRefused() {
        // The input `job-bench fuzz` found: an element name with bytes that are not UTF-8.
        let bytes = Array(#"<!DOCTYPE c [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><conf,<"#.utf8) + [0xfe, 0xbf]
            + Array("Kiguration><gui><address>&b;</address><apikey>&a;</apikey></gui></configuration>".utf8)
        let decoder = HomeserverFuzzing.decoders.first { $0.name.contains("config.xml") }
        #expect(decoder?.decode(bytes) == false)
    }
}

/// The same small corpus run over the grants and token-pool decoders (link frames, grant bundles, link
/// addresses, endpoint ids, Endorser answers).
@Suite(.timeLimit(.minutes(15))) struct GrantsAndPoolFuzzCorpusTests {
    @Test func everyGrantsAndPoolDecoderSurvivesMutatedInputs() {
        let targets = GrantsFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
            + TokenPoolFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
        #expect(targets.count >= 5)
        for (offset, target) in targets.enumerated() {
            let refused = target.seeds.filter { !target.decode($0) }.map { String(decoding: $0, as: UTF8.self) }
            #expect(refused.count < target.seeds.count, "\(target.name): every seed refused")
            #expect(refused.allSatisfy { $0.contains("JWT_VERIFY_FAILED") }, "\(target.name) refuses \(refused)")
            let report = MutationFuzzer(seed: 0x6A7 &+ UInt64(offset)).run(target, inputs: 3_000)
            #expect(report.inputs == 3_000 && report.hangs == 0, "\(target.name)")
            #expect(report.accepted > 0 && report.rejected > 0, "\(target.name): mutations neither all accepted nor all rejected")
        }
    }
}
