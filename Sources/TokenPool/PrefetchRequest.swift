import Runner

/// The New Activity prefetch call to Endorser: `POST /api/v2/report/plansLastUpdatedBetween` with a Bearer token
/// and body `{"planIds":[…],"afterId":"…"}` (reference, "How Endorser verifies").
package struct PrefetchRequest: Sendable, Equatable {
    package static let path = "/api/v2/report/plansLastUpdatedBetween"
    /// Most plan ids accepted in the setting.
    static let maximumPlanIDs = 1000

    package let planIDs: [String]
    package let afterID: String
    /// While paging a `hitLimit` answer: only rows older than this.
    package let beforeID: String?

    package init(planIDs: [String], afterID: String, beforeID: String? = nil) {
        self.planIDs = planIDs
        self.afterID = afterID
        self.beforeID = beforeID
    }

    /// Parses the settings' text forms (already validated when set).
    package init(planIDsSetting: String, afterID: String, beforeID: String? = nil) {
        planIDs = planIDsSetting.isEmpty ? [] : planIDsSetting.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        self.afterID = afterID
        self.beforeID = beforeID
    }

    /// `{"planIds":[…],"afterId":"…"}` (with `"beforeId"` while paging), compact.
    package var bodyJSON: [UInt8] {
        var pairs: [(String, JSON)] = [("planIds", .array(planIDs.map(JSON.string))), ("afterId", .string(afterID))]
        if let beforeID { pairs.append(("beforeId", .string(beforeID))) }
        return Array(JSON.object(pairs).rendered().utf8)
    }

    /// The full URL for an Endorser base URL (`https://api.endorser.ch`, with or without a trailing slash).
    package static func url(base: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    /// Validation for `prefetch.plan-ids`: empty, or comma-separated ids of 1–500 visible ASCII characters.
    @Sendable static func planIDsProblem(_ value: String) -> String? {
        if value.isEmpty { return nil }
        let ids = value.split(separator: ",", omittingEmptySubsequences: false)
        guard ids.count <= maximumPlanIDs else { return "holds more than \(maximumPlanIDs) ids" }
        for id in ids {
            guard (1...500).contains(id.utf8.count), id.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                return "must be comma-separated ids of visible ASCII characters, without spaces or empty entries"
            }
        }
        return nil
    }

    /// Validation for `prefetch.after-id`: empty (unset) or a 26-character ULID (Crockford base32).
    @Sendable static func afterIDProblem(_ value: String) -> String? {
        if value.isEmpty || isULID(value) { return nil }
        return "must be a 26-character ULID (Crockford base32, e.g. 01HZX3Y4J6M8P9Q0R1S2T3V4W5)"
    }

    /// Whether `text` is a canonical ULID: 26 Crockford base32 characters (upper case), first at most `7`.
    static func isULID(_ text: String) -> Bool {
        let alphabet = Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
        let bytes = Array(text.utf8)
        return bytes.count == 26 && bytes.allSatisfy(alphabet.contains) && bytes[0] <= UInt8(ascii: "7")
    }
}
