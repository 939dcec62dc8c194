import Foundation

/// Text someone else chose (a contact's ticket, a sender's file name or nickname), made safe to print on a
/// terminal: every control character (C0, DEL, C1), every format character (the bidirectional overrides and
/// isolates, zero-width spaces and joiners, the byte-order mark, tag characters) and the line and paragraph
/// separators U+2028 and U+2029 are shown as `\u{XX}`, so the text cannot drive the terminal (escape sequences,
/// title changes, clearing the screen), reorder or hide what the user sees, or break a line where none is shown.
package enum TerminalText {
    /// Whether the process's stdout is a terminal.
    package static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// `text` with every unsafe scalar escaped.
    package static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) { result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" }
            else { result.unicodeScalars.append(scalar) }
        }
        return result
    }

    /// `text` as it should reach stdout: escaped on a terminal, exact otherwise (a pipe or a file).
    package static func forStdout(_ text: String) -> String { stdoutIsTerminal ? escaped(text) : text }

    /// Whether `scalar` is shown escaped: a control (Cc) or format (Cf) character, or a line or paragraph separator.
    package static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
