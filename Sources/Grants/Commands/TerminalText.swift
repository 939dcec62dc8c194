import Foundation

/// Text a peer chose, made safe to print on a terminal: control characters (C0, DEL, C1) and the bidirectional
/// overrides and isolates are shown as `\u{XX}`, so a contact's ticket cannot drive the terminal (escape sequences,
/// title changes, clearing the screen) or reorder what the user sees. Output to a pipe or file stays exact.
enum TerminalText {
    /// Whether the process's stdout is a terminal.
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// `text` with every control or bidi-control scalar escaped.
    static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) { result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" }
            else { result.unicodeScalars.append(scalar) }
        }
        return result
    }

    /// `text` as it should reach stdout: escaped on a terminal, exact otherwise.
    static func forStdout(_ text: String) -> String { stdoutIsTerminal ? escaped(text) : text }

    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.properties.generalCategory == .control { return true }
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
