import Runner

/// Every endpoint this node knows — contacts, holders of grants it issued, blocked endpoints — with the user's label
/// for each, so commands can take a label or a fingerprint prefix instead of a 64-hex id no listing shows.
struct PeerDirectory {
    /// One known endpoint and the user's label for it (a contact's label first, then the label given at issue).
    struct Entry {
        let endpoint: EndpointID
        let label: String?
    }

    let entries: [Entry]
    /// Each endpoint's place in `entries`.
    private let places: [EndpointID: Int]

    init(node: Node, now: Int64) throws {
        var seen: [EndpointID: Int] = [:]
        var entries: [Entry] = []
        func add(_ endpoint: EndpointID, _ label: String?) {
            if let index = seen[endpoint] {
                if entries[index].label == nil, let label { entries[index] = Entry(endpoint: endpoint, label: label) }
                return
            }
            seen[endpoint] = entries.count
            entries.append(Entry(endpoint: endpoint, label: label))
        }
        for contact in try node.contacts.all() { add(contact.endpoint, contact.label) }
        for grant in try node.issued.list(now: now) { add(grant.peer, grant.label) }
        for blocked in try node.blocks.all() { add(blocked.endpoint, nil) }
        self.entries = entries
        places = seen
    }

    /// The user's label for `endpoint`, if any.
    func label(_ endpoint: EndpointID) -> String? { places[endpoint].flatMap { entries[$0].label } }

    /// Resolves what the user typed: a 64-hex endpoint id (known or not), a label naming one endpoint, or a prefix
    /// (at least 4 hex digits, dashes optional) of exactly one known endpoint's fingerprint.
    func resolve(_ text: String) throws -> EndpointID {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.utf8.count == 64, trimmed.allSatisfy(\.isHexDigit) { return try EndpointID(hex: trimmed.lowercased()) }
        let byLabel = Set(entries.filter { $0.label == trimmed }.map(\.endpoint))
        if byLabel.count == 1 { return byLabel.first! }
        if byLabel.count > 1 {
            throw JobError.badInput("peer-ambiguous", "several devices share that label; name one by a longer fingerprint prefix or its endpoint id")
        }
        let digits = trimmed.lowercased().filter { $0 != "-" }
        guard digits.count >= 4, digits.count <= 16, digits.allSatisfy(\.isHexDigit) else {
            throw JobError.badInput("peer-unknown", "no known device has that label; name it by label, fingerprint (or its first 4+ digits) or endpoint id")
        }
        let matches = entries.filter { $0.endpoint.fingerprint.filter { $0 != "-" }.hasPrefix(digits) }
        guard let first = matches.first else {
            throw JobError.badInput("peer-unknown", "no known device has a fingerprint starting with those digits; see 'job contacts list', 'job grants list' or 'job block list'")
        }
        guard matches.count == 1 else {
            throw JobError.badInput("peer-ambiguous", "several known devices have fingerprints starting with those digits; give more of the fingerprint")
        }
        return first.endpoint
    }
}
