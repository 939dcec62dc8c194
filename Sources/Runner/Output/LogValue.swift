/// A value a log line may carry: numbers, booleans and fixed words — never free text.
///
/// There is deliberately no way to build a `LogValue` from an arbitrary runtime `String`: identifiers and
/// secrets (docs/design.md §5) therefore cannot reach a log line by accident. Words come from string literals or
/// from `LogWord` enums whose raw values are fixed in the source.
package enum LogValue: Sendable, Equatable, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral, ExpressibleByStringLiteral {
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case word(FixedWord)

    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(stringLiteral value: StaticString) { self = .word(FixedWord(value)) }

    /// An integer count, size, status code or duration.
    package static func int<I: BinaryInteger>(_ value: I) -> LogValue { .integer(Int64(value)) }
    /// A word fixed in the source.
    package static func literal(_ value: StaticString) -> LogValue { .word(FixedWord(value)) }
    /// The raw value of a `LogWord` enum case.
    package static func of<W: LogWord>(_ value: W) -> LogValue { .word(FixedWord(trusted: value.rawValue)) }
    /// A pass result's reason (`lease-held`, `disabled`, …): jobs build reasons from literals.
    package static func reason(_ result: JobResult) -> LogValue { .word(FixedWord(trusted: result.reason ?? "none")) }
    /// A failure's category (itself made from a literal when the `JobError` was built).
    package static func category(_ error: JobError) -> LogValue { .word(FixedWord(trusted: error.category)) }
}

/// An enum whose raw values are fixed words, fit for logs (outcomes, categories, reasons).
package protocol LogWord: RawRepresentable where RawValue == String {}

/// A word fixed in the source. Its only public initializer takes a `StaticString`, so a runtime string (an
/// identifier, a secret) cannot become one; the runner's own fixed names use the internal `trusted` initializer.
package struct FixedWord: Sendable, Equatable {
    package let text: String
    package init(_ literal: StaticString) { text = "\(literal)" }
    init(trusted text: String) { self.text = text }
}
