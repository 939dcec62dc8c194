import Runner
import Testing

/// The one terminal escaper every command uses for text someone else chose (a contact's ticket, a sender's file
/// name or nickname): each class of unsafe character is escaped, ordinary text of any script is kept.
@Suite(.timeLimit(.minutes(15))) struct TerminalTextTests {
    @Test(arguments: [
        ("C0 escape", "\u{1B}", #"\u{1B}"#), ("C0 bell", "\u{07}", #"\u{7}"#), ("newline", "\n", #"\u{A}"#), ("DEL", "\u{7F}", #"\u{7F}"#),
        ("C1 CSI", "\u{9B}", #"\u{9B}"#),
        ("right-to-left override", "\u{202E}", #"\u{202E}"#), ("isolate", "\u{2066}", #"\u{2066}"#), ("Arabic letter mark", "\u{061C}", #"\u{61C}"#),
        ("left-to-right mark", "\u{200E}", #"\u{200E}"#),
        ("zero-width space", "\u{200B}", #"\u{200B}"#), ("zero-width joiner", "\u{200D}", #"\u{200D}"#),
        ("byte-order mark", "\u{FEFF}", #"\u{FEFF}"#), ("language tag", "\u{E0001}", #"\u{E0001}"#),
        ("line separator", "\u{2028}", #"\u{2028}"#), ("paragraph separator", "\u{2029}", #"\u{2029}"#),
    ])
    func eachClassOfUnsafeCharacterIsShownEscaped(_ name: String, _ character: String, _ shown: String) {
        #expect(TerminalText.escaped("a\(character)b") == "a\(shown)b", "\(name)")
    }

    @Test func ordinaryTextOfAnyScriptIsKeptAsItIs() {
        for text in ["plain ticket-1234", "Grüße, Ünïcødé", "日本語のファイル名.png", "עברית", "emoji 🙂", "tab-less, spaces  kept"] {
            #expect(TerminalText.escaped(text) == text)
        }
    }
}
