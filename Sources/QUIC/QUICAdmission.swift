/// What the caps say when a connection from a validated address asks for a slot.
package enum QUICAdmission: Sendable {
    /// A slot is taken.
    case admitted
    /// That source has all the slots it may have.
    case addressFull
    /// The whole table is full: ending a half-open handshake would make room.
    case tableFull
}
