import Foundation
import NetAddress

/// Finding Syncthing's `config.xml` and reading its GUI section: where the REST API listens and its key.
///
/// Candidate order is Syncthing's own: `$SYNCTHING_CONFIG` (an explicit file), `$STCONFDIR`, `$STHOMEDIR`,
/// the legacy `${XDG_CONFIG_HOME:-~/.config}/syncthing` (only if a config.xml exists there), then
/// `${XDG_STATE_HOME:-~/.local/state}/syncthing`, then the container and system paths.
package enum SyncthingConfigFile {
    /// The candidate files in precedence order. `explicit` is true for `$SYNCTHING_CONFIG`, which must exist.
    package static func candidates(environment env: [String: String]) -> [(path: String, explicit: Bool)] {
        func value(_ key: String) -> String? { env[key].flatMap { $0.isEmpty ? nil : $0 } }
        if let explicit = value("SYNCTHING_CONFIG") {
            // A directory is accepted too: its config.xml.
            return [(explicit.hasSuffix(".xml") ? explicit : explicit + "/config.xml", true)]
        }
        let home = value("HOME") ?? NSHomeDirectory()
        var dirs: [String] = []
        if let dir = value("STCONFDIR") { dirs.append(dir) }
        if let dir = value("STHOMEDIR") { dirs.append(dir) }
        dirs.append((value("XDG_CONFIG_HOME") ?? home + "/.config") + "/syncthing")
        dirs.append((value("XDG_STATE_HOME") ?? home + "/.local/state") + "/syncthing")
        dirs += ["/var/syncthing/config", "/config", "/var/syncthing", "/var/lib/syncthing", "/etc/syncthing"]
        return dirs.map { ($0 + "/config.xml", false) }
    }

    /// The first candidate that exists, or nil. Throws `missingExplicit` when `$SYNCTHING_CONFIG` names no file.
    package static func locate(environment: [String: String], exists: (String) -> Bool = { FileManager.default.isReadableFile(atPath: $0) }) throws -> String? {
        for candidate in candidates(environment: environment) {
            if exists(candidate.path) { return candidate.path }
            if candidate.explicit { throw LocateError.missingExplicit }
        }
        return nil
    }

    package enum LocateError: Error { case missingExplicit }

    /// The `<gui>` element's settings.
    package struct GUI: Equatable, Sendable {
        package var enabled = true
        package var tls = false
        package var address = ""
        package var apiKey = ""
    }

    /// Reads the `<gui>` section of a config.xml; nil when the document is not XML or has no `<gui>`.
    ///
    /// Syncthing writes config.xml as UTF-8 with no processing instruction but the XML declaration; anything else
    /// is refused. The document is read by `ConfigXMLReader`, not Foundation's XMLParser, which on Linux leaks on
    /// every parse and traps on names that are not UTF-8 or on `<?pi?>` (both found by `job-bench fuzz`).
    package static func parseGUI(_ data: Data) -> GUI? {
        guard data.count <= maximumBytes, let text = String(validating: data, as: UTF8.self), hasOnlyTheXMLDeclaration(text) else { return nil }
        var gui = GUI()
        var found = false
        var reader = ConfigXMLReader(Array(data))
        let wellFormed = reader.read(ConfigXMLReader.Events(
            start: { path, attributes in
                guard path == ["configuration", "gui"] else { return }
                found = true
                gui.tls = attributes["tls"]?.lowercased() == "true"
                gui.enabled = attributes["enabled"]?.lowercased() != "false"
            },
            text: { path, text in
                if path == ["configuration", "gui", "address"] { gui.address += text }
                if path == ["configuration", "gui", "apikey"] { gui.apiKey += text }
            }))
        guard wellFormed, found else { return nil }
        gui.address = gui.address.trimmingCharacters(in: .whitespacesAndNewlines)
        gui.apiKey = gui.apiKey.trimmingCharacters(in: .whitespacesAndNewlines)
        return gui
    }

    /// A config.xml larger than this is not Syncthing's (real ones are a few KiB to a few hundred).
    static let maximumBytes = 16 << 20

    /// True when the only `<?` in `text` opens the XML declaration at its very start (`<?xml` and a space).
    static func hasOnlyTheXMLDeclaration(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "<") && bytes[index + 1] == UInt8(ascii: "?") {
                let declaration = Array("<?xml".utf8)
                guard index == 0, bytes.count > 5, Array(bytes[0..<5]) == declaration,
                      [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")].contains(bytes[5]) else { return false }
            }
            index += 1
        }
        return true
    }

    /// Why a GUI address cannot be used over TCP.
    package enum AddressProblem: Error, Equatable { case unixSocket, malformed }

    /// The REST base URL for a GUI address: `https` when `tls`; empty → `127.0.0.1:8384`; a wildcard or
    /// empty host → `127.0.0.1`; an address with a scheme is used as is; a unix socket is refused.
    package static func inferURL(address: String, tls: Bool) throws(AddressProblem) -> String {
        var text = address.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("unix://") || text.hasPrefix("/") || text.hasPrefix("@") { throw .unixSocket }
        if text.contains("://") {
            while text.hasSuffix("/") { text.removeLast() }
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else { throw .malformed }
            return text
        }
        if text.isEmpty { text = "127.0.0.1:8384" }
        // An empty host (`:8384`, `[]:8384`) is Syncthing's wildcard.
        if text.hasPrefix("[]:") { text.removeFirst(2) }
        if text.hasPrefix(":") { text = "0.0.0.0" + text }
        guard var address = try? SocketAddress.parse(text) else { throw .malformed }
        if address.host == "0.0.0.0" || address.host == "::" { address = SocketAddress(host: "127.0.0.1", port: address.port) }
        return (tls ? "https" : "http") + "://" + address.text
    }
}
