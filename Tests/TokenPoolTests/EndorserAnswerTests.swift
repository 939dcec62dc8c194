import Testing
@testable import TokenPool

/// How Endorser's answers are classified, and the exact request body.
@Suite(.timeLimit(.minutes(15))) struct EndorserAnswerTests {
    static func classify(_ status: Int, _ body: String) -> EndorserClient.Outcome {
        EndorserClient.classify(status: status, body: Array(body.utf8))
    }

    @Test func onlyTheDocumentedShapeCountsAsAFetch() {
        #expect(Self.classify(200, #"{"data":[{"a":1},{"b":2}],"hitLimit":true}"#) == .fetched(status: 200, rows: 2, hitLimit: true))
        #expect(Self.classify(200, #"{"data":[],"hitLimit":false}"#) == .fetched(status: 200, rows: 0, hitLimit: false))
        for body in [#"{"data":[],"hitLimit":1}"#, #"{"data":{},"hitLimit":false}"#, #"{"hitLimit":false}"#, #"{"data":[]}"#,
                     "[]", "not json", "", #"{"data":[],"hitLimit":"false"}"#] {
            #expect(Self.classify(200, body) == .badResponse(status: 200), "body \(body)")
        }
    }

    @Test func credentialFailuresAreToldApartFromOtherRefusals() {
        #expect(Self.classify(400, #"{"error":{"message":"JWT has expired","code":"JWT_VERIFY_FAILED"}}"#) == .credentialRejected(status: 400))
        #expect(Self.classify(400, #"{"error":{"message":"planIds and afterId are required"}}"#) == .refused(status: 400))
        #expect(Self.classify(400, "garbage") == .refused(status: 400))
        #expect(Self.classify(401, "") == .credentialRejected(status: 401))
        #expect(Self.classify(403, "") == .credentialRejected(status: 403))
        #expect(Self.classify(404, "") == .refused(status: 404))
        #expect(Self.classify(302, "") == .refused(status: 302))
        #expect(Self.classify(429, "") == .transient(status: 429))
        #expect(Self.classify(500, "") == .transient(status: 500))
        #expect(Self.classify(599, "") == .transient(status: 599))
    }

    @Test func theBodyIsPlanIdsThenAfterIdCompact() {
        let request = PrefetchRequest(planIDsSetting: #"https://endorser.ch/entity/01A,odd"quote\slash"#, afterID: "01HZX3Y4J6M8P9Q0R1S2T3V4W5")
        #expect(String(decoding: request.bodyJSON, as: UTF8.self)
                == #"{"planIds":["https://endorser.ch/entity/01A","odd\"quote\\slash"],"afterId":"01HZX3Y4J6M8P9Q0R1S2T3V4W5"}"#)
        #expect(String(decoding: PrefetchRequest(planIDsSetting: "", afterID: "01HZX3Y4J6M8P9Q0R1S2T3V4W5").bodyJSON, as: UTF8.self)
                == #"{"planIds":[],"afterId":"01HZX3Y4J6M8P9Q0R1S2T3V4W5"}"#)
        #expect(PrefetchRequest.url(base: "https://api.endorser.ch//") == "https://api.endorser.ch/api/v2/report/plansLastUpdatedBetween")
    }

    @Test func settingsAcceptOnlyULIDsAndCleanPlanLists() {
        #expect(PrefetchRequest.afterIDProblem("01HZX3Y4J6M8P9Q0R1S2T3V4W5") == nil)
        #expect(PrefetchRequest.afterIDProblem("") == nil)
        for bad in ["01hzx3y4j6m8p9q0r1s2t3v4w5", "81HZX3Y4J6M8P9Q0R1S2T3V4W5", "01HZX3Y4J6M8P9Q0R1S2T3V4WU", "01HZX3Y4J6M8P9Q0R1S2T3V4W"] {
            #expect(PrefetchRequest.afterIDProblem(bad) != nil, "\(bad)")
        }
        #expect(PrefetchRequest.planIDsProblem("a,b,c") == nil)
        for bad in ["a,,b", ",a", "a b", "a,\u{7f}", String(repeating: "x", count: 501)] {
            #expect(PrefetchRequest.planIDsProblem(bad) != nil, "\(bad)")
        }
    }
}
