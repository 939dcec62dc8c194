/// The version of the `--json` output shapes documented in README "JSON output"; raised when a shape changes incompatibly.
enum JSONSchema {
    static let version = 1
}
