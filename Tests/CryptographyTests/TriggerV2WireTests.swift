import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct TriggerV2WireTests {
    @Test func eachVectorsSignedMessageIsTheOneWeBuild() throws {
        let (_, _, vectors) = try TriggerV2Fixtures.vectors()
        for vector in vectors where vector.refusal != "certificate-too-large" {
            let request = try TriggerV2.parse(vector.body)
            #expect(request.signedMessage == hex(vector.messageHex), "\(vector.name)")
        }
    }

    @Test func theValidVectorsAuthenticateAndEachInvalidOneIsRefusedWithItsWord() throws {
        let (now, _, vectors) = try TriggerV2Fixtures.vectors()
        #expect(vectors.filter(\.valid).count == 3)
        for vector in vectors {
            do {
                let request = try TriggerV2.parse(vector.body)
                #expect(TriggerV2.isFresh(request.timestampMilliseconds, now: now * 1000))
                try TriggerV2.authenticate(request)
                #expect(vector.valid, "\(vector.name) was accepted")
            } catch {
                #expect(!vector.valid, "\(vector.name) was refused: \(error.word)")
                #expect(error.word == vector.refusal, "\(vector.name)")
            }
        }
    }

    @Test func aBodyWeSignIsParsedBackAndAuthenticates() throws {
        for name in TriggerV2Fixtures.keyNames {
            let key = try TriggerV2Fixtures.signingKey(name)
            let nonce = [UInt8](repeating: 7, count: 16)
            let request = try TriggerV2.parse(TriggerV2.body(key: key, nowSeconds: 1_796_300_000, nonce: nonce))
            #expect(request.deviceID == key.deviceID && request.nonce == nonce && request.timestampMilliseconds == 1_796_300_000_000)
            try TriggerV2.authenticate(request)
        }
    }

    @Test func theSyntaxStageRefusesEachMalformedPart() throws {
        let key = try TriggerV2Fixtures.signingKey("openssl-p256")
        let good = String(decoding: try TriggerV2.body(key: key, nowSeconds: 1_796_300_000, nonce: [UInt8](repeating: 1, count: 16)),
                          as: UTF8.self)
        func refusal(_ text: String) -> TriggerV2.Refusal? {
            do { _ = try TriggerV2.parse(Array(text.utf8)); return nil } catch { return error }
        }
        #expect(refusal(good) == nil)
        #expect(refusal("{") == .malformedJSON)
        #expect(refusal(String(good.dropLast()) + ",\"extra\":\"x\"}") == .unexpectedMember)
        #expect(refusal(String(good.dropLast()) + ",\"ttl\":5}") == .unexpectedMember)
        #expect(refusal(good.replacingOccurrences(of: "\"ts\":\"1796300000\",", with: "")) == .missingMember)
        #expect(refusal(good.replacingOccurrences(of: key.deviceID, with: key.deviceID.lowercased())) == .badDeviceID)
        #expect(refusal(good.replacingOccurrences(of: "1796300000", with: "01796300000")) == .badTimestamp)
        #expect(refusal(good.replacingOccurrences(of: "1796300000", with: "-1")) == .badTimestamp)
        #expect(refusal(good.replacingOccurrences(of: "AQEBAQEBAQEBAQEBAQEBAQ==", with: "AQEBAQEBAQEBAQEBAQEB")) == .badNonce)
        #expect(refusal(good.replacingOccurrences(of: "\"cert\":\"", with: "\"cert\":\"!")) == .badCertificateEncoding)
        let huge = StrictBase64.encode([UInt8](repeating: 0x30, count: 4097))
        let certStart = try #require(good.range(of: "\"cert\":\""))
        let certEnd = try #require(good[certStart.upperBound...].firstIndex(of: "\""))
        #expect(refusal(good.replacingCharacters(in: certStart.upperBound..<certEnd, with: huge)) == .certificateTooLarge)
        #expect(refusal(good + String(repeating: " ", count: 8192)) == .bodyTooLarge)
        #expect(refusal(good.replacingOccurrences(of: "\"sig\":\"", with: "\"sig\":\"=")) == .badSignatureEncoding)
    }

    @Test func aTimestampTwoMinutesOffIsFreshAndOneMillisecondMoreIsNot() {
        let now: Int64 = 1_796_300_000_000
        #expect(TriggerV2.isFresh(now - 120_000, now: now))
        #expect(TriggerV2.isFresh(now + 120_000, now: now))
        #expect(!TriggerV2.isFresh(now - 120_001, now: now))
        #expect(!TriggerV2.isFresh(now + 300_000, now: now))
    }

    @Test func everyRefusalHasAStatusAndADistinctWord() {
        let words = TriggerV2.Refusal.allCases.map(\.word)
        #expect(Set(words).count == words.count)
        #expect(TriggerV2.Refusal.allCases.allSatisfy { [400, 401, 409, 413].contains($0.status) })
    }
}
