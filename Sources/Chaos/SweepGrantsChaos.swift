import Foundation
import Store

/// `sweep-grants` under SIGKILL: no live grant lapsed, every idle one lapsed exactly once, tombstones and
/// finished offers purged exactly when past their retention, peer-revoked held grants dropped.
///
/// Exactly once is observed, not inferred: the template carries audit triggers (`chaos_audit`) that record
/// every update and delete on the swept tables inside the same transaction, so a batch a kill rolled back
/// leaves no audit row and a grant lapsed twice leaves two. The model is the seed plan (each row's case).
package final class SweepGrantsChaos: ChaosScenario {
    package let job = "sweep-grants"
    let store: ChaosStore
    let process: ChaosProcess
    let rows: Int
    let seed: UInt64
    let now0: Int64 = 1_780_000_000_000
    let day: Int64 = 86_400_000

    enum Issued { case live, liveForever, idle, idleAtDeadline, oldTombstone, recentTombstone
        var lapses: Bool { self == .idle || self == .idleAtDeadline }
        var purged: Bool { self == .oldTombstone }
    }
    private var issued: [Issued] = []
    private var heldDropped: [Bool] = []
    private var outgoingPurged: [Bool] = []
    private var incomingPurged: [Bool] = []
    private var passNows: [Int64] = []

    package init(store: ChaosStore, process: ChaosProcess, rows: Int, seed: UInt64) {
        self.store = store
        self.process = process
        self.rows = rows
        self.seed = seed
    }

    package var storePath: String { store.store }

    package func prepare() throws {
        var random = ChaosRandom(seed: seed ^ 0x5EEB)
        func pick<T>(_ weighted: [(T, Int)]) -> T {
            var r = Int.random(in: 0..<weighted.reduce(0) { $0 + $1.1 }, using: &random)
            for (value, weight) in weighted { if r < weight { return value }; r -= weight }
            return weighted[0].0
        }
        issued = (0..<rows).map { _ in pick([(Issued.live, 45), (.liveForever, 10), (.idle, 20), (.idleAtDeadline, 2), (.oldTombstone, 10), (.recentTombstone, 13)]) }
        let side = max(10, rows / 10)
        heldDropped = (0..<side).map { _ in Int.random(in: 0..<100, using: &random) < 20 }
        outgoingPurged = (0..<side).map { _ in Int.random(in: 0..<100, using: &random) < 30 }
        incomingPurged = (0..<side).map { _ in Int.random(in: 0..<100, using: &random) < 30 }

        let db = try store.createTemplate(process)
        let (now0, day) = (self.now0, self.day)
        var blobs = ChaosRandom(seed: seed ^ 0xB10B)
        func blob(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &blobs) } }
        try db.write { db in
            for c in 0..<100 {
                try db.execute("INSERT INTO contacts (id, endpoint_index, endpoint_sealed, local_label, created_at) VALUES (?, ?, ?, ?, ?)",
                               [Int64(c + 1), blob(32), blob(60), "contact \(c)", now0 - 300 * day])
            }
        }
        for start in stride(from: 0, to: rows, by: 10_000) {
            try db.write { db in
                for k in start..<min(rows, start + 10_000) {
                    let offset = Int64(k % 50 + 1) * day
                    let (expires, revoked, reason): (Int64?, Int64?, String?)
                    switch issued[k] {
                    case .live: (expires, revoked, reason) = (now0 + offset, nil, nil)
                    case .liveForever: (expires, revoked, reason) = (nil, nil, nil)
                    case .idle: (expires, revoked, reason) = (now0 - offset, nil, nil)
                    case .idleAtDeadline: (expires, revoked, reason) = (now0, nil, nil)
                    case .oldTombstone: (expires, revoked, reason) = (now0 - 60 * day, now0 - 31 * day - offset, k % 2 == 0 ? "revoked" : "expired")
                    case .recentTombstone: (expires, revoked, reason) = (now0 - 20 * day, now0 - 29 * day + Int64(k % 28) * day, k % 2 == 0 ? "revoked" : "expired")
                    }
                    try db.execute("""
                        INSERT INTO grants_issued (id, grant_index, grant_sealed, secret_sealed, endpoint_index, endpoint_sealed, lifetime_ms,
                                                   created_at, expires_at, last_used_at, revoked_at, revoke_reason)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, [Int64(k + 1), blob(32), blob(44), blob(60), blob(32), blob(60), expires == nil ? nil : 90 * day,
                              now0 - 200 * day, expires, now0 - 100 * day, revoked, reason])
                }
            }
        }
        let plan = (heldDropped, outgoingPurged, incomingPurged)
        try db.write { db in
            for k in 0..<side {
                let id = Int64(k + 1), contact = Int64(k % 100 + 1)
                try db.execute("INSERT INTO grants_held (id, grant_index, grant_sealed, secret_sealed, contact_id, created_at, expires_at, peer_revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               [id, blob(32), blob(44), blob(60), contact, now0 - 50 * day, now0 + 30 * day,
                                plan.0[k] ? now0 - Int64(k % 5) * day : (k % 7 == 0 ? now0 + day : nil)])
                // Outgoing: finished long ago (purged) or held / finished recently (kept).
                let outgoingState = plan.1[k] ? ["delivered", "accepted", "declined", "cancelled"][k % 4] : ["held", "delivered", "accepted"][k % 3]
                let stopped = outgoingState == "declined" || outgoingState == "cancelled"
                try db.execute("""
                    INSERT INTO held_offers (id, offer_id, contact_id, ticket_sealed, sender_name, file_count, total_bytes, share_access, state,
                                             share_stopped_at, created_at, updated_at)
                    VALUES (?, ?, ?, ?, 'me', 1, 100, 'approval-required', ?, ?, ?, ?)
                    """, [id, "offer-\(k)", contact, stopped ? nil : blob(40), outgoingState, stopped ? now0 - 40 * day : nil, now0 - 60 * day,
                          plan.1[k] ? now0 - 31 * day - Int64(k % 9) * day : now0 - Int64(k % 29) * day])
                let incomingState = plan.2[k] ? ["accepted", "declined"][k % 2] : ["pending", "accepted", "declined"][k % 3]
                try db.execute("""
                    INSERT INTO incoming_offers (id, offer_id, from_endpoint_index, from_endpoint_sealed, ticket_sealed, sender_name, file_count,
                                                 total_bytes, state, received_at, decided_at)
                    VALUES (?, ?, ?, ?, ?, 'peer', 1, 100, ?, ?, ?)
                    """, [id, "in-\(k)", blob(32), blob(60), incomingState == "declined" ? nil : blob(40), incomingState, now0 - 60 * day,
                          incomingState == "pending" ? nil : (plan.2[k] ? now0 - 31 * day - Int64(k % 9) * day : now0 - Int64(k % 29) * day)])
            }
        }
        // The audit: every change the sweep makes, recorded inside its own transaction.
        try db.execute("""
            CREATE TABLE chaos_audit (tbl TEXT NOT NULL, row_id INTEGER NOT NULL, op TEXT NOT NULL, old_revoked INTEGER, new_revoked INTEGER) STRICT;
            CREATE TRIGGER chaos_issued_update AFTER UPDATE ON grants_issued BEGIN
                INSERT INTO chaos_audit VALUES ('issued', old.id, 'update', old.revoked_at, new.revoked_at); END;
            CREATE TRIGGER chaos_issued_delete AFTER DELETE ON grants_issued BEGIN INSERT INTO chaos_audit VALUES ('issued', old.id, 'delete', old.revoked_at, NULL); END;
            CREATE TRIGGER chaos_held_update AFTER UPDATE ON grants_held BEGIN INSERT INTO chaos_audit VALUES ('held', old.id, 'update', NULL, NULL); END;
            CREATE TRIGGER chaos_held_delete AFTER DELETE ON grants_held BEGIN INSERT INTO chaos_audit VALUES ('held', old.id, 'delete', NULL, NULL); END;
            CREATE TRIGGER chaos_out_update AFTER UPDATE ON held_offers BEGIN INSERT INTO chaos_audit VALUES ('outgoing', old.id, 'update', NULL, NULL); END;
            CREATE TRIGGER chaos_out_delete AFTER DELETE ON held_offers BEGIN INSERT INTO chaos_audit VALUES ('outgoing', old.id, 'delete', NULL, NULL); END;
            CREATE TRIGGER chaos_in_update AFTER UPDATE ON incoming_offers BEGIN INSERT INTO chaos_audit VALUES ('incoming', old.id, 'update', NULL, NULL); END;
            CREATE TRIGGER chaos_in_delete AFTER DELETE ON incoming_offers BEGIN INSERT INTO chaos_audit VALUES ('incoming', old.id, 'delete', NULL, NULL); END;
            """)
        try store.sealTemplate(db)
    }

    package func beginRound(_ round: Int) throws {
        try store.freshCopy()
        passNows = []
    }

    package func nextPassArguments(settling: Bool, random: inout ChaosRandom) -> [String] {
        // Each pass a second later than the one before: a grant lapsed twice would carry the later clock.
        let now = now0 + Int64(passNows.count) * 1000
        passNows.append(now)
        return ["--store", store.store, "--now", "@\(now / 1000)", "--json", "sweep-grants"]
    }

    package func isSettled(counts: [String: Int]) -> Bool { true }

    package func violations() throws -> [String] {
        let db = try Database(path: store.store)
        var violations = try ChaosStore.commonViolations(db)
        var updates: [String: [Int: [(Int64?, Int64?)]]] = [:]
        var deletes: [String: Set<Int>] = [:]
        try db.forEachRow("SELECT tbl, row_id, op, old_revoked, new_revoked FROM chaos_audit") { row in
            let table = try row.get(0, as: String.self), id = Int(try row.get(1, as: Int64.self)) - 1
            if try row.get(2, as: String.self) == "update" {
                updates[table, default: [:]][id, default: []].append((try row.get(3, as: Int64?.self), try row.get(4, as: Int64?.self)))
            } else {
                deletes[table, default: []].insert(id)
            }
        }
        let nows = Set(passNows)
        var liveLapsed = 0, notLapsed = 0, lapsedTwice = 0, badLapse = 0
        for (k, c) in issued.enumerated() {
            let changes = updates["issued"]?[k] ?? []
            if !c.lapses { if !changes.isEmpty { liveLapsed += 1 }; continue }
            if changes.isEmpty { notLapsed += 1 }
            if changes.count > 1 { lapsedTwice += 1 }
            if let first = changes.first, first.0 != nil || !(first.1.map(nows.contains) ?? false) { badLapse += 1 }
        }
        if liveLapsed > 0 { violations.append("\(liveLapsed) grant(s) changed that were live or already tombstones") }
        if notLapsed > 0 { violations.append("\(notLapsed) idle grant(s) not lapsed") }
        if lapsedTwice > 0 { violations.append("\(lapsedTwice) idle grant(s) lapsed more than once") }
        if badLapse > 0 { violations.append("\(badLapse) lapse(s) with a time that is no pass's clock") }
        let expired: Int = try db.scalar("""
            SELECT count(*) FROM grants_issued WHERE expires_at IS NOT NULL AND expires_at <= ? AND (revoked_at IS NULL OR revoke_reason IS NULL)
            """, [now0]) ?? -1
        if expired != 0 { violations.append("\(expired) grant(s) past their deadline without a tombstone") }

        func compare(_ table: String, _ expected: [Bool], _ what: String) {
            let got = deletes[table] ?? []
            let want = Set(expected.indices.filter { expected[$0] })
            if got != want { violations.append("\(what): \(got.subtracting(want).count) removed wrongly, \(want.subtracting(got).count) not removed") }
        }
        compare("issued", issued.map(\.purged), "tombstones past retention")
        compare("held", heldDropped, "held grants the peer revoked")
        compare("outgoing", outgoingPurged, "finished outgoing offers past retention")
        compare("incoming", incomingPurged, "decided incoming offers past retention")
        for table in ["held", "outgoing", "incoming"] where !(updates[table] ?? [:]).isEmpty {
            violations.append("\(table): \(updates[table]!.count) row(s) updated by a sweep that only deletes there")
        }
        return violations
    }
}
