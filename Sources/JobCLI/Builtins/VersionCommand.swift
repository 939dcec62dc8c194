import Foundation
import Runner

/// `job version` (and `job --version`): this program's version, commit and the libraries it runs on.
struct VersionCommand: BuiltinCommand {
    let name = "version"
    let summary = "the version, commit and library versions (also --version)"

    func run(_ context: BuiltinContext) throws {
        context.output.write(Self.text(json: context.invocation.jsonOutput))
    }

    /// `job version` / `job --version`: one line, or one JSON object with `--json`.
    static func text(json: Bool) -> String {
        let commit = BuildInfo.commit(executablePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        if json {
            return JSON.object([
                ("version", .string(BuildInfo.version)), ("commit", .optional(commit)), ("swift", .string(BuildInfo.swift)),
                ("libraries", .object(BuildInfo.libraries.map { ($0.name, JSON.string($0.version)) })),
            ]).rendered() + "\n"
        }
        let libraries = BuildInfo.libraries.map { "\($0.name) \($0.version)" }.joined(separator: ", ")
        return "job \(BuildInfo.version)\(commit.map { " (\($0.prefix(12)))" } ?? "") — Swift \(BuildInfo.swift), \(libraries)\n"
    }
}
