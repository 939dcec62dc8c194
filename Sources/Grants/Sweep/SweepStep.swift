import Runner

/// One set-based step of `sweep-grants`: the rows it touches, and the statements that handle one batch of them.
///
/// Batches walk the table in rowid order (keyset: `rowid > last … ORDER BY rowid LIMIT 1000`, never through a
/// secondary index), so consecutive batches touch neighbouring pages and the tombstone index grows at its end.
/// Measured on 1M grants, 10 % idle: walking in deadline order through an index on `expires_at` scatters every
/// batch over the whole file (3.5× the plain-SQL baseline); walking in rowid order while such an index exists
/// still rewrites its leaf pages in every batch (1.3–1.4×); without it, one pass is one sequential walk (≈1×).
/// So idle deadlines have no index: finding none costs one walk of the table (≈0.2 s per million grants).
/// The rarer rows — tombstones, peer-revoked grants, finished offers — do have partial indexes, which make the
/// up-front count cheap; a step with nothing to do stops there. Re-running a step finds only what is still left:
/// the pass is idempotent.
package struct SweepStep: Sendable {
    /// The count key in the pass result (`lapsed`, `purged_grants`, …).
    package let name: String
    /// Counts the rows this step would touch; arguments as for `batch`.
    package let countSQL: String
    /// Whether `countSQL` is cheap (a partial index) and runs before the walk to skip a step with nothing to do.
    package let countFirst: Bool
    /// Handles the next batch — at most `?3` rows after rowid `?2` — and returns their rowids.
    package let batchSQL: String
    /// The same work as one plain statement, for the benchmark's baseline.
    package let plainSQL: String
    /// The step's `?1` argument, given `now` and the two retention cutoffs.
    package let argument: @Sendable (_ now: Int64, _ grantCutoff: Int64, _ offerCutoff: Int64) -> Int64

    /// The steps in pass order: lapse first, so a grant lapsed now is kept as a tombstone until its retention ends.
    package static let all: [SweepStep] = [
        SweepStep(
            name: "lapsed", table: "grants_issued", countFirst: false,
            where: "revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?1",
            action: "UPDATE grants_issued SET revoked_at = ?1, revoke_reason = 'expired'",
            argument: { now, _, _ in now }),
        SweepStep(
            name: "purged_grants", table: "grants_issued", countFirst: true,
            where: "revoked_at IS NOT NULL AND revoked_at < ?1",
            action: "DELETE FROM grants_issued",
            argument: { _, grantCutoff, _ in grantCutoff }),
        SweepStep(
            name: "dropped_held", table: "grants_held", countFirst: true,
            where: "peer_revoked_at IS NOT NULL AND peer_revoked_at <= ?1",
            action: "DELETE FROM grants_held",
            argument: { now, _, _ in now }),
        // Held offers to a contact that revoked us, or whose pairing lapsed, can never be collected: finished as
        // `undeliverable`, the ticket deleted and the share stopped (no share stays authorised for a device that
        // removed us). Pairing again does not revive them; they are sent again.
        SweepStep(
            name: "undeliverable_offers", table: "held_offers", countFirst: true,
            where: "state = 'held' AND updated_at <= ?1 AND contact_id IN (SELECT id FROM contacts WHERE status != 'active')",
            action: "UPDATE held_offers SET state = 'undeliverable', ticket_sealed = NULL, share_stopped_at = ?1, updated_at = ?1",
            argument: { now, _, _ in now }),
        SweepStep(
            name: "purged_outgoing_offers", table: "held_offers", countFirst: true,
            where: "state IN ('delivered', 'accepted', 'declined', 'cancelled', 'undeliverable') AND updated_at < ?1",
            action: "DELETE FROM held_offers",
            argument: { _, _, offerCutoff in offerCutoff }),
        SweepStep(
            name: "purged_incoming_offers", table: "incoming_offers", countFirst: true,
            where: "state != 'pending' AND decided_at < ?1",
            action: "DELETE FROM incoming_offers",
            argument: { _, _, offerCutoff in offerCutoff }),
    ]

    init(name: String, table: String, countFirst: Bool, where condition: String, action: String,
         argument: @escaping @Sendable (Int64, Int64, Int64) -> Int64) {
        self.name = name
        self.countFirst = countFirst
        countSQL = "SELECT count(*) FROM \(table) WHERE \(condition)"
        batchSQL = "\(action) WHERE rowid IN (SELECT rowid FROM \(table) NOT INDEXED WHERE rowid > ?2 AND \(condition) ORDER BY rowid LIMIT ?3) RETURNING rowid"
        plainSQL = "\(action) WHERE \(condition)"
        self.argument = argument
    }
}
