import Foundation

/// One row of Endorser's New Activity answer: a plan that changed, as the app's New Activity view shows it.
///
/// Kept whole (the row's JSON, keys sorted) so nothing the app would show is lost; the fields the listing needs are
/// read from it. `jwtID` (the plan's `jwtId`, a ULID) orders rows and moves the prefetch cursor; a row without a
/// valid one is kept but moves nothing.
package struct ActivityRow: Sendable, Equatable {
    package let json: [UInt8]
    package let jwtID: String?
    package let handleID: String?
    package let name: String?
    /// Whether Endorser sent the plan's previous claim (`wrappedClaimBefore`): an update rather than a new plan.
    package let isUpdate: Bool

    /// Parses a row from its JSON bytes; nil when it is not an object.
    package init?(json: [UInt8]) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else { return nil }
        self.init(object: object)
    }

    /// A row from a decoded `data` element; nil when it is not an object.
    init?(object: [String: Any]) {
        guard let bytes = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return nil }
        json = Array(bytes)
        let plan = object["plan"] as? [String: Any]
        jwtID = (plan?["jwtId"] as? String).flatMap { PrefetchRequest.isULID($0) ? $0 : nil }
        handleID = plan?["handleId"] as? String
        name = plan?["name"] as? String
        isUpdate = object["wrappedClaimBefore"].map { !($0 is NSNull) } ?? false
    }

    /// The rows of a 200 answer's `data` array (elements that are not objects are skipped).
    static func rows(ofAnswer body: [UInt8]) -> [ActivityRow] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let data = object["data"] as? [Any] else { return [] }
        return data.compactMap { ($0 as? [String: Any]).flatMap(ActivityRow.init(object:)) }
    }
}
