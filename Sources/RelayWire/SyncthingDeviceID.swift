/// The Syncthing Device ID as both ends of the relay API write it: the homeserver helper reads its own from
/// Syncthing and sends it in a trigger; the relay receives it in registrations and triggers.
///
/// Errors never echo the value: callers say which field was malformed, not what it held.
package enum SyncthingDeviceID {
    /// A Syncthing Device ID: 56 base32 characters (A–Z, 2–7), usually in eight dash-separated groups of
    /// seven. Returns the canonical upper-case, dashed form, or nil.
    package static func canonical(_ text: String) -> String? {
        let compact = text.uppercased().filter { $0 != "-" }
        guard compact.count == 56, text.count == 56 || text.count == 63,
              compact.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("2"..."7").contains($0) }) else { return nil }
        if text.count == 63 {
            // Dashes must sit between the groups, nowhere else.
            let groups = text.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.count == 8, groups.allSatisfy({ $0.count == 7 }) else { return nil }
        }
        var groups: [String] = []
        var rest = Substring(compact)
        while !rest.isEmpty {
            groups.append(String(rest.prefix(7)))
            rest = rest.dropFirst(7)
        }
        return groups.joined(separator: "-")
    }
}
