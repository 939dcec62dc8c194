import Foundation

/// Named integer counts of what a pass did (`lapsed`, `purged`, `pushed` …), in the order first touched.
package struct Counts: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public private(set) var entries: [(key: String, value: Int)] = []

    package init() {}
    package init(dictionaryLiteral elements: (StaticString, Int)...) {
        for (key, value) in elements { self["\(key)"] = value }
    }

    /// The count named `key` (0 when never set). Keys are fixed words chosen by the job.
    package subscript(key: String) -> Int {
        get { entries.first { $0.key == key }?.value ?? 0 }
        set {
            if let index = entries.firstIndex(where: { $0.key == key }) { entries[index].value = newValue }
            else { entries.append((key, newValue)) }
        }
    }

    /// Adds `amount` to the count named `key`.
    package mutating func add(_ key: StaticString, _ amount: Int = 1) { self["\(key)"] += amount }

    /// The counts as a JSON object.
    package var json: JSON { .object(entries.map { ($0.key, JSON.int(Int64($0.value))) }) }

    package static func == (a: Counts, b: Counts) -> Bool {
        a.entries.map(\.key) == b.entries.map(\.key) && a.entries.map(\.value) == b.entries.map(\.value)
    }

    /// Reads back the flat `{"key":n,…}` object that `json.rendered()` wrote to the ledger; nil if it is not one.
    package init?(ledgerText text: String) {
        self.init()
        let body = text.trimmingCharacters(in: .whitespaces)
        guard body.hasPrefix("{"), body.hasSuffix("}") else { return nil }
        let inner = body.dropFirst().dropLast()
        if inner.trimmingCharacters(in: .whitespaces).isEmpty { return }
        for pair in inner.split(separator: ",") {
            let parts = pair.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            guard key.count >= 2, key.hasPrefix("\""), key.hasSuffix("\""),
                  let value = Int(parts[1].trimmingCharacters(in: .whitespaces)) else { return nil }
            self[String(key.dropFirst().dropLast())] = value
        }
    }
}
