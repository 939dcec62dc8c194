/// Public face of the strict JSON reader: validates a whole document (well-formed, UTF-8, one top-level object,
/// no duplicate member names, bounded nesting) and returns the top-level members whose values are strings.
///
/// Request bodies and signed payloads are checked with it before any lenient decoder reads them, so a
/// document that could mean two things (`{"device_id":"A","device_id":"B"}`) is refused outright.
package enum StrictJSONObject {
    /// The string-valued top-level members of `bytes`; throws `CryptoError.malformedInput` for anything not strict.
    package static func strings(_ bytes: [UInt8]) throws -> [String: String] {
        try StrictJSON.topLevelStrings(bytes)
    }

    /// The names of every top-level member of `bytes`, whatever their values; throws as `strings` does.
    package static func memberNames(_ bytes: [UInt8]) throws -> Set<String> {
        try StrictJSON.memberNames(bytes)
    }
}
