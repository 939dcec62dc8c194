/// Where the next prefetch question starts (reference, "New Activity prefetch"): pure paging arithmetic.
///
/// A round asks for rows after `afterID`. An answer with `hitLimit` leaves older rows between `afterID` and the
/// smallest `jwtId` returned, so the next pass asks again with that as `beforeID`. When a round has read all, the
/// next round's `afterID` is the largest `jwtId` seen. ULIDs compare as text.
package struct PrefetchCursor: Sendable, Equatable {
    package var afterID: String
    /// Set while a round is paging: ask for rows older than this.
    package var beforeID: String?
    /// The largest `jwtId` seen in this round.
    package var newestID: String?

    package init(afterID: String, beforeID: String? = nil, newestID: String? = nil) {
        self.afterID = afterID
        self.beforeID = beforeID
        self.newestID = newestID
    }

    /// The cursor after an answer carrying rows with `jwtIDs` and `hitLimit`.
    package func advanced(jwtIDs: [String], hitLimit: Bool) -> PrefetchCursor {
        let newest = ([newestID].compactMap { $0 } + jwtIDs).max()
        if hitLimit, let oldest = jwtIDs.min(), oldest > afterID, beforeID.map({ oldest < $0 }) ?? true {
            return PrefetchCursor(afterID: afterID, beforeID: oldest, newestID: newest)
        }
        // The round is complete (or an answer made no progress): start the next one after the newest row seen.
        return PrefetchCursor(afterID: max(afterID, newest ?? afterID))
    }
}
