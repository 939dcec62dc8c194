import Foundation
import Testing

/// The code explains itself with this repository's own docs: no comment or string in Sources, Tests, scripts, .ci
/// or jobs points at a document outside it (a design file, a requirements seed, a reference file, an issue, a path
/// on some machine).
@Suite(.timeLimit(.minutes(15))) struct NoOutsidePointersTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// What a pointer out of the repository looks like. Spelled in pieces so this file does not match itself.
    static let patterns: [(name: String, regex: String)] = [
        ("a design section", "DES" + "IGN §"),
        ("a seed section", "[Ss]e" + "ed §"),
        ("a seed by number", "[Ss]e" + "ed 00[0-9]"),
        ("the seed as a document", "the se" + "ed's (table|send|endpoints|rule|debounce|`)|as the se" + "ed (says|shows|specifies)|of the se" + "ed\\b"),
        ("a reference file", "(^|[^/])refe" + "rence/[a-z-]+\\.(md|json)"),
        ("a shared folder", "\\.\\./sha" + "red|/work/sha" + "red"),
        ("an issue number", "\\b[Ii]ss" + "ue [0-9]+|iss" + "ues/[0-9]+"),
    ]

    /// Every text file under the folders the code lives in.
    static func files() -> [String] {
        var found: [String] = []
        for folder in ["Sources", "Tests", "scripts", ".ci", "jobs"] {
            let root = repository.appendingPathComponent(folder).path
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            for case let relative as String in walker where !relative.contains("Fixtures/") {
                let path = root + "/" + relative
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue { found.append(path) }
            }
        }
        return found + [repository.appendingPathComponent("Package.swift").path]
    }

    @Test func noFilePointsOutsideTheRepository() throws {
        let regexes = try Self.patterns.map { ($0.name, try NSRegularExpression(pattern: $0.regex, options: [.anchorsMatchLines])) }
        var hits: [String] = []
        for path in Self.files() {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = String(line)
                for (name, regex) in regexes where regex.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil {
                    hits.append("\(path.dropFirst(Self.repository.path.count + 1)):\(number + 1): \(name)")
                }
            }
        }
        #expect(hits.isEmpty, "cite docs/ instead:\n\(hits.joined(separator: "\n"))")
        #expect(Self.files().count > 100, "the scan found too few files to mean anything")
    }

    @Test func thePatternsRecogniseThePointersTheyAreFor() throws {
        let samples = ["(DES" + "IGN §4)", "(se" + "ed §3.5)", "Se" + "ed 002, the pool", "exactly as the se" + "ed's table says",
                       "// refe" + "rence/jwt-pool.md vector 1", "under /work/sha" + "red/reference", "(iss" + "ue 11, item 6)"]
        for (sample, pattern) in zip(samples, Self.patterns) {
            let regex = try NSRegularExpression(pattern: pattern.regex, options: [.anchorsMatchLines])
            #expect(regex.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)) != nil, "\(pattern.name) misses \(sample)")
        }
        let fine = "docs/refe" + "rence/commands.md, a PRNG se" + "ed, --se" + "ed 42"
        for pattern in Self.patterns {
            let regex = try NSRegularExpression(pattern: pattern.regex, options: [.anchorsMatchLines])
            #expect(regex.firstMatch(in: fine, range: NSRange(fine.startIndex..., in: fine)) == nil, "\(pattern.name) flags \(fine)")
        }
    }
}
