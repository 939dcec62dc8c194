import Foundation

/// Seeded random `job` command lines: command words, global and command options, and values of every shape a
/// person or a script might type — above all store paths (`x`, `0`, `d/s.sqlite`, `./y`, `e//f/`, `/dev/null`, a
/// folder, a FIFO …), which once trapped. Deterministic in its seed.
package struct ArgvFuzzer {
    /// Store and file path shapes: one character, relative and nested, repeated and trailing slashes, dots, the
    /// root, devices, very long, spaces, non-ASCII, option-like, empty.
    package static let pathShapes: [String] = [
        "x", "0", "y", "-", ".", "..", "./y", "../z", "d/s.sqlite", "d/e/f/s.sqlite", "e//f/", "g/", "//", "/", "/dev/null", "/dev/zero",
        "/proc/self/fd/0", "/nonexistent/dir/s.sqlite", "a/../b", "~", "$HOME", "", " ", "s p a c e.sqlite", "é/ü.sqlite", "𝄞",
        "--store", "-x", String(repeating: "a", count: 300), String(repeating: "d/", count: 200) + "s", "fifo", "folder", "file.sqlite",
        "postgresql://", "service=", "host=/tmp dbname=x", "file:x?mode=ro", "x\u{7f}",
    ]

    /// Values that are not paths: times, numbers, words.
    package static let values: [String] = [
        "", "0", "-1", "1", "999999999999999999999", "@0", "@-1", "@1e3", "@253402300800", "2026-02-30T00:00:00Z", "2026-03-01T00:00:00Z",
        "yesterday", "text", "json", "xml", "bash", "zsh", "fish", "tcsh", "on", "off", "true", "%s%n", "a=b", "--", "-h", "--help",
    ]

    /// Global options: (name, takes a value, the value is a path).
    static let globals: [(String, Bool, Bool)] = [("--store", true, true), ("--now", true, false), ("--json", false, false), ("--log-format", true, false),
                                                 ("--metrics-dir", true, true), ("--help", false, false), ("--version", false, false)]

    private var random: ChaosRandom
    /// Command words to start a line with (`status`, `grants issue`, …) and each one's options.
    let commands: [(words: [String], options: [String])]

    package init(seed: UInt64, commands: [(words: [String], options: [String])]) {
        random = ChaosRandom(seed: seed)
        self.commands = commands
    }

    /// The next command line (without the program name).
    package mutating func next() -> [String] {
        var line: [String] = []
        func value(path: Bool) -> String {
            let pool = path || Int.random(in: 0..<3, using: &random) == 0 ? Self.pathShapes : Self.values
            return pool[Int.random(in: 0..<pool.count, using: &random)]
        }
        for _ in 0..<Int.random(in: 0...3, using: &random) {
            let (name, takesValue, isPath) = Self.globals[Int.random(in: 0..<Self.globals.count, using: &random)]
            if takesValue && Int.random(in: 0..<4, using: &random) == 0 { line.append(name + "=" + value(path: isPath)); continue }
            line.append(name)
            if takesValue && Int.random(in: 0..<10, using: &random) > 0 { line.append(value(path: isPath)) }
        }
        if !commands.isEmpty && Int.random(in: 0..<10, using: &random) > 0 {
            let command = commands[Int.random(in: 0..<commands.count, using: &random)]
            line += command.words
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                if !command.options.isEmpty && Int.random(in: 0..<3, using: &random) > 0 {
                    line.append(command.options[Int.random(in: 0..<command.options.count, using: &random)])
                }
                if Int.random(in: 0..<3, using: &random) > 0 { line.append(value(path: Int.random(in: 0..<2, using: &random) == 0)) }
            }
        } else if Int.random(in: 0..<2, using: &random) == 0 {
            line.append(value(path: false))
        }
        // Sometimes shuffle: options after the command, the command after its options.
        if line.count > 1 && Int.random(in: 0..<6, using: &random) == 0 { line.swapAt(0, Int.random(in: 0..<line.count, using: &random)) }
        return line
    }
}
