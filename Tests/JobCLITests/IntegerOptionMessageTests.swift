import Foundation
import Testing
import TestSupport

/// The commands that take whole-number options refuse a bad value with exit 64 and the wording they have always used.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct IntegerOptionMessageTests {
    let home = TemporaryDirectory("integer-options")

    func refusal(_ arguments: [String], _ extra: [String: String] = [:]) throws -> JobProcess.Result {
        try JobProcess.run(["--store", home.file("s.sqlite")] + arguments, environment: JobProcess.environment(home: home.path, extra))
    }

    @Test func badWholeNumberOptionsExit64WithEachCommandsMessage() throws {
        let storeKit = ["STOREKIT_BUNDLE_ID": "eu.vaultsync.app", "STOREKIT_PRODUCT_IDS": "p"]
        let cases: [([String], [String: String], String)] = [
            (["serve-relay", "--threads", "0"], storeKit, "--threads needs a whole number above 0"),
            (["serve-relay", "--header-timeout", "ten"], storeKit, "--header-timeout needs a whole number above 0"),
            (["serve-relay", "--max-connections-per-address", "-1"], storeKit, "--max-connections-per-address needs a whole number, 0 or more"),
            (["serve-relay", "--max-batch", "0"], storeKit, "--max-batch needs a whole number above 0"),
            (["serve-link", "--max-batch", "1.5"], [:], "--max-batch needs a whole number above 0"),
            (["serve-link", "--idle-exit", "0"], [:], "--idle-exit needs a whole number above 0"),
            (["mesh", "exchange", "--to", home.file("other.sqlite"), "--limit", "0"], [:], "--limit needs a positive whole number"),
            (["offers", "send", "--to", "x", "--ticket-file", "t", "--files", "-1", "--bytes", "1"], [:], "--files needs a whole number of at least 0"),
            (["offers", "send", "--to", "x", "--ticket-file", "t", "--files", "1", "--bytes", "9007199254740993"], [:],
             "--bytes needs a whole number of at least 0"),
        ]
        for (arguments, extra, message) in cases {
            let result = try refusal(arguments, extra)
            #expect(result.exitCode == 64 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}
