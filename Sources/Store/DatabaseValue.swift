/// A value as the store holds it: the five SQLite storage classes, free of SQLite types.
package enum DatabaseValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift type that can be bound to a statement parameter and read back from a column.
package protocol DatabaseValueConvertible {
    /// The value to bind.
    var databaseValue: DatabaseValue { get }
    /// Decodes a column value; nil when the storage class does not fit.
    init?(databaseValue: DatabaseValue)
}

extension DatabaseValue: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { self }
    package init?(databaseValue: DatabaseValue) { self = databaseValue }
}

extension Int64: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .integer(self) }
    package init?(databaseValue: DatabaseValue) {
        guard case .integer(let v) = databaseValue else { return nil }
        self = v
    }
}

extension Int: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .integer(Int64(self)) }
    package init?(databaseValue: DatabaseValue) {
        guard case .integer(let v) = databaseValue else { return nil }
        self = Int(v)
    }
}

extension Int32: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .integer(Int64(self)) }
    package init?(databaseValue: DatabaseValue) {
        guard case .integer(let v) = databaseValue, let narrowed = Int32(exactly: v) else { return nil }
        self = narrowed
    }
}

extension Bool: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    package init?(databaseValue: DatabaseValue) {
        guard case .integer(let v) = databaseValue else { return nil }
        self = v != 0
    }
}

extension Double: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .real(self) }
    package init?(databaseValue: DatabaseValue) {
        switch databaseValue {
        case .real(let v): self = v
        case .integer(let v): self = Double(v)
        default: return nil
        }
    }
}

extension String: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .text(self) }
    package init?(databaseValue: DatabaseValue) {
        guard case .text(let v) = databaseValue else { return nil }
        self = v
    }
}

extension Array: DatabaseValueConvertible where Element == UInt8 {
    package var databaseValue: DatabaseValue { .blob(self) }
    package init?(databaseValue: DatabaseValue) {
        guard case .blob(let v) = databaseValue else { return nil }
        self = v
    }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue {
        switch self {
        case .none: return .null
        case .some(let wrapped): return wrapped.databaseValue
        }
    }
    package init?(databaseValue: DatabaseValue) {
        if case .null = databaseValue { self = .none; return }
        guard let wrapped = Wrapped(databaseValue: databaseValue) else { return nil }
        self = .some(wrapped)
    }
}
