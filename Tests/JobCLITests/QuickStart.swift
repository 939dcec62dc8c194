import Foundation

/// One ```` ```sh quickstart ```` block of `README.md`, read as a transcript: each `$ ` line is a command, and the
/// lines after it are what the command prints on stdout, where `…` stands for any text (ids, durations, keys).
struct QuickStart: Sendable {
    /// One command and the output shape it must print.
    struct Step: Sendable {
        let command: String
        let expected: [String]
    }

    /// The heading the block sits under (`Quick start: token pool`).
    let title: String
    let steps: [Step]

    /// Every quickstart block of `markdown`, in order.
    static func parse(_ markdown: String) -> [QuickStart] {
        var blocks: [QuickStart] = []
        var title = ""
        var steps: [Step]? = nil
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if steps == nil {
                if line.hasPrefix("## ") { title = String(line.dropFirst(3)) }
                if line == "```sh quickstart" { steps = [] }
                continue
            }
            if line == "```" {
                blocks.append(QuickStart(title: title, steps: steps!))
                steps = nil
            } else if line.hasPrefix("$ ") {
                steps!.append(Step(command: String(line.dropFirst(2)), expected: []))
            } else if let last = steps!.popLast() {
                steps!.append(Step(command: last.command, expected: last.expected + [line]))
            }
        }
        return blocks
    }

    /// The shell script that runs the steps in one shell, printing a marker line before each step's output.
    var script: String {
        var text = "exec 2>>stderr.log\n"
        for (index, step) in steps.enumerated() {
            text += "printf '\\n@@step \(index)@@\\n'\n\(step.command)\n"
        }
        return text + "printf '\\n@@end@@\\n'\nkill $(jobs -p) 2>/dev/null\nexit 0\n"
    }

    /// Each step's stdout lines (empty lines dropped), split at the markers of `script`.
    func outputs(of stdout: String) -> [[String]] {
        var result: [[String]] = Array(repeating: [], count: steps.count)
        var current: Int? = nil
        for line in stdout.split(separator: "\n").map(String.init) {
            if line.hasPrefix("@@step "), let index = Int(line.dropFirst(7).dropLast(2)) { current = index; continue }
            if line == "@@end@@" { current = nil; continue }
            if let current { result[current].append(line) }
        }
        return result
    }

    /// True when `actual` has the shape of `expected`: the same text, with each `…` matching any run of characters.
    static func matches(_ actual: String, shape expected: String) -> Bool {
        let pieces = expected.components(separatedBy: "…")
        guard pieces.count > 1 else { return actual == expected }
        guard actual.hasPrefix(pieces.first!), actual.hasSuffix(pieces.last!),
              actual.count >= pieces.first!.count + pieces.last!.count else { return false }
        var rest = Substring(actual.dropFirst(pieces.first!.count).dropLast(pieces.last!.count))
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let range = rest.range(of: piece) else { return false }
            rest = rest[range.upperBound...]
        }
        return true
    }
}
