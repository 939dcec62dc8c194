/// Why a byte string is not a valid wire value: every decoder in `Wire/` throws this and nothing else.
///
/// Cases are fixed words (usable as log categories); none carries the offending bytes.
package enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ends before a header, length or value it announces.
    case truncated
    /// A version the codec does not speak.
    case unsupportedVersion
    /// A type byte outside the codec's table.
    case unknownType
    /// A field has a length its definition forbids (a 31-byte key, a 9-byte capability set).
    case badLength
    /// A value exceeds a size bound (file content above 1 MiB, a payload above its frame budget).
    case tooLarge
    /// A required field is missing or empty.
    case missingField
    /// A field appears twice where it may appear once.
    case duplicateField
    /// A value is not in canonical (minimal) form where canonical form is required.
    case nonCanonical
    /// Compressed data is corrupt or expands beyond the allowed ratio or size.
    case badCompression
    /// Bytes left over after a complete value where none may follow.
    case trailingBytes
    /// The value cannot be encoded (a field too long for its length field).
    case unencodable

    package var description: String {
        switch self {
        case .truncated: return "truncated"
        case .unsupportedVersion: return "unsupported-version"
        case .unknownType: return "unknown-type"
        case .badLength: return "bad-length"
        case .tooLarge: return "too-large"
        case .missingField: return "missing-field"
        case .duplicateField: return "duplicate-field"
        case .nonCanonical: return "non-canonical"
        case .badCompression: return "bad-compression"
        case .trailingBytes: return "trailing-bytes"
        case .unencodable: return "unencodable"
        }
    }
}
