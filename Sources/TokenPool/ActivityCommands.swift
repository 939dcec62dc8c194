import Foundation
import Runner

/// `job activity list`: what background prefetch found, as the app's New Activity view would show it.
///
/// Rows are opened from the store on stdout only (they carry plan ids and names); nothing of them is logged.
struct ActivityListCommand: Command {
    let path = ["activity", "list"]
    let summary = "the New Activity rows background prefetch kept, newest first (plan, name, new or updated)"

    func run(_ context: JobContext) throws {
        let entries = try ActivityStore(database: context.database).all(keyring: try context.keyring())
        context.logger.info("activity.listed", ["rows": .int(entries.count)])
        if context.jsonOutput {
            context.printJSON(.array(entries.map { entry in
                let row = (try? JSONSerialization.jsonObject(with: Data(entry.row.json))).map(Self.json(from:)) ?? .null
                return ["jwt_id": .optional(entry.row.jwtID), "handle_id": .optional(entry.row.handleID), "name": .optional(entry.row.name),
                        "change": .string(entry.row.isUpdate ? "updated" : "new"),
                        "fetched_at": .string(Date(unixMilliseconds: entry.fetchedAt).rfc3339), "row": row]
            }))
            return
        }
        if entries.isEmpty { context.print("no new activity kept; prefetch keeps what Endorser returns"); return }
        for entry in entries {
            let title = entry.row.name ?? entry.row.handleID ?? "(unnamed plan)"
            context.print("\(entry.row.isUpdate ? "updated" : "new    ")  \(title)  \(entry.row.handleID ?? "")  \(entry.row.jwtID ?? "")")
        }
    }

    /// A decoded JSON value (from `JSONSerialization`) as output JSON, object keys sorted.
    static func json(from value: Any) -> JSON {
        switch value {
        case let text as String: return .string(text)
        case let number as NSNumber:
            if EndorserClient.isJSONBoolean(number) { return .bool(number.boolValue) }
            return number.doubleValue == Double(number.int64Value) ? .int(number.int64Value) : .double(number.doubleValue)
        case let array as [Any]: return .array(array.map(json(from:)))
        case let object as [String: Any]: return .object(object.keys.sorted().map { ($0, json(from: object[$0]!)) })
        default: return .null
        }
    }
}
