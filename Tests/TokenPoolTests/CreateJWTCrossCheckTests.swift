import Cryptography
import Foundation
import Testing
import TestSupport
@testable import TokenPool

/// Pool tokens against an independent pure-Python re-implementation of did-jwt's `createJWT`
/// (`Tests/Peers/didjwt_reference.py`: its own RFC 6979, secp256k1, Keccak-256 and EIP-55), byte for byte.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct CreateJWTCrossCheckTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers/didjwt_reference.py").path

    struct Case { let key: String; let iat: Int64; let window: DayWindow }

    /// Runs the reference over `cases`; returns its (did, token) per case.
    static func reference(_ cases: [Case]) throws -> [(did: String, token: String)] {
        let input = cases.map { #"{"key":"\#($0.key)","iat":\#($0.iat),"nbf":\#($0.window.notBefore),"exp":\#($0.window.expires)}"# }
            .joined(separator: "\n") + "\n"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let text = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("didjwt_reference.py failed") }
        return text.split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            return (String(parts[0]), String(parts[1]))
        }
    }

    @Test func theReferenceItselfReproducesTheDidJwtVectors() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, "selftest"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "selftest ok\n")
    }

    @Test func randomKeysDaysAndSlacksGiveTheSameBytesAsTheReference() throws {
        var cases = [Case(key: PoolHarness.keyA, iat: 1_767_139_200, window: DayWindow(day: 20_454, slackSeconds: 300))]
        for index in 0..<40 {
            let key = Hex.encode(try Secp256k1PrivateKey.generate().rawRepresentation.copyBytes())
            let day = 19_000 + Int64(try SecureRandom.uniform(below: 30_000))
            let slack = [0, 1, 300, 3_600, 21_599][index % 5]
            let iat = day * 86_400 - Int64(try SecureRandom.uniform(below: 200 * 86_400))
            cases.append(Case(key: key, iat: iat, window: DayWindow(day: day, slackSeconds: slack)))
        }
        let expected = try Self.reference(cases)
        #expect(expected.count == cases.count)
        for (testCase, reference) in zip(cases, expected) {
            let minter = DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(testCase.key))))
            #expect(minter.issuer == reference.did)
            #expect(try minter.token(for: testCase.window, issuedAt: testCase.iat) == reference.token)
        }
    }

    @Test func aPoolMintedByTheJobIsByteIdenticalToTheReference() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyB)
        try harness.setting("pool.size", "31")
        try harness.setting("pool.slack-seconds", "450")
        let now = instant("2028-02-15T21:07:13Z")
        #expect(try harness.pass("mint-pool", now: now).exitCode == .success)
        let tokens = try harness.exportedTokens()
        let firstDay = PoolCalendar.epochDay(unixSeconds: Int64(now.timeIntervalSince1970))
        let cases = tokens.indices.map { slot -> Case in
            let day = PoolPlan(firstDay: firstDay, size: 31).day(inSlot: slot)
            return Case(key: PoolHarness.keyB, iat: Int64(now.timeIntervalSince1970), window: DayWindow(day: day, slackSeconds: 450))
        }
        let expected = try Self.reference(cases)
        #expect(tokens == expected.map(\.token))
        #expect(expected.allSatisfy { $0.did == PoolHarness.didB })
    }
}
