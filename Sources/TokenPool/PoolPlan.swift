/// Which day goes in which slot for a pool of `size` tokens minted on `firstDay` (docs/protocols/jwt-pool.md §3).
///
/// The pool covers the `size` consecutive days `firstDay ..< firstDay + size`. The token for day `d` is filed at
/// `d % size`; a day outside the covered range has no credential, even though `d % size` indexes a slot.
package struct PoolPlan: Sendable, Equatable {
    package let firstDay: Int64
    package let size: Int

    package init(firstDay: Int64, size: Int) {
        precondition(size > 0, "a pool has at least one slot")
        self.firstDay = firstDay
        self.size = size
    }

    /// The last covered day.
    package var lastDay: Int64 { firstDay + Int64(size) - 1 }

    /// The covered days, in minting order.
    package var days: ClosedRange<Int64> { firstDay...lastDay }

    /// Whether the pool carries a credential for `day`.
    package func covers(_ day: Int64) -> Bool { days.contains(day) }

    /// The native selector: the slot read for `day`, or nil when `day` is outside the covered range.
    package func slot(forDay day: Int64) -> Int? {
        covers(day) ? PoolCalendar.slot(forDay: day, size: size) : nil
    }

    /// The covered day stored in `slot` (the inverse of `slot(forDay:)` over the covered range).
    package func day(inSlot slot: Int) -> Int64 {
        precondition((0..<size).contains(slot), "slot out of range")
        let offset = (slot - PoolCalendar.slot(forDay: firstDay, size: size) + size) % size
        return firstDay + Int64(offset)
    }
}
