import Runner

/// One set-based step of `sweep-grants`: the rows it touches, and the statements that handle one batch of them.
///
/// Batches walk the table in rowid order (keyset: `rowid > last … ORDER BY rowid LIMIT 1000`), so consecutive
/// batches touch neighbouring pages and the tombstone index grows at its end; walking in deadline order instead
/// scatters every batch over the whole file and measured 3.5× slower on 1M grants. The partial indexes
/// (`grants_issued_live_expiry`, `grants_issued_tombstones`, …) make the up-front count cheap, and a step with
/// nothing to do stops there. Re-running a step finds only what is still left: the pass is idempotent.
public struct SweepStep: Sendable {
    /// The count key in the pass result (`lapsed`, `purged_grants`, …).
    public let name: String
    /// Counts the rows this step would touch; arguments as for `batch`.
    public let countSQL: String
    /// Handles the next batch — at most `?3` rows after rowid `?2` — and returns their rowids.
    public let batchSQL: String
    /// The same work as one plain statement, for the benchmark's baseline.
    public let plainSQL: String
    /// The step's `?1` argument, given `now` and the two retention cutoffs.
    public let argument: @Sendable (_ now: Int64, _ grantCutoff: Int64, _ offerCutoff: Int64) -> Int64

    /// The steps in pass order: lapse first, so a grant lapsed now is kept as a tombstone until its retention ends.
    public static let all: [SweepStep] = [
        SweepStep(
            name: "lapsed", table: "grants_issued",
            where: "revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?1",
            action: "UPDATE grants_issued SET revoked_at = ?1, revoke_reason = 'expired'",
            argument: { now, _, _ in now }),
        SweepStep(
            name: "purged_grants", table: "grants_issued",
            where: "revoked_at IS NOT NULL AND revoked_at < ?1",
            action: "DELETE FROM grants_issued",
            argument: { _, grantCutoff, _ in grantCutoff }),
        SweepStep(
            name: "dropped_held", table: "grants_held",
            where: "peer_revoked_at IS NOT NULL AND peer_revoked_at <= ?1",
            action: "DELETE FROM grants_held",
            argument: { now, _, _ in now }),
        SweepStep(
            name: "purged_outgoing_offers", table: "held_offers",
            where: "state IN ('delivered', 'accepted', 'declined', 'cancelled') AND updated_at < ?1",
            action: "DELETE FROM held_offers",
            argument: { _, _, offerCutoff in offerCutoff }),
        SweepStep(
            name: "purged_incoming_offers", table: "incoming_offers",
            where: "state != 'pending' AND decided_at < ?1",
            action: "DELETE FROM incoming_offers",
            argument: { _, _, offerCutoff in offerCutoff }),
    ]

    init(name: String, table: String, where condition: String, action: String,
         argument: @escaping @Sendable (Int64, Int64, Int64) -> Int64) {
        self.name = name
        countSQL = "SELECT count(*) FROM \(table) WHERE \(condition)"
        batchSQL = "\(action) WHERE rowid IN (SELECT rowid FROM \(table) WHERE rowid > ?2 AND \(condition) ORDER BY rowid LIMIT ?3) RETURNING rowid"
        plainSQL = "\(action) WHERE \(condition)"
        self.argument = argument
    }
}
