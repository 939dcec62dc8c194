import Cryptography
import Foundation
import Store

/// `mint-pool` under SIGKILL: whenever a pass dies, the live pool is the old one or the whole new one, never
/// a mix; after the rerun it is the whole new one, every token readable and valid for its day.
///
/// The template holds an identity and a complete pool minted a day earlier (the old pool, fingerprinted by its
/// slots' blind indexes). After each kill, before any rerun, the live generation must be exactly the old pool
/// or a complete new one. After the rerun every token is opened with the store key and checked here, without
/// the module's code: a three-part JWT whose ES256K signature recovers to the identity's `did:ethr` address,
/// whose `nbf`/`exp` cover its slot's UTC day, all tokens distinct, the days consecutive from today.
package final class MintPoolChaos: ChaosScenario {
    package let job = "mint-pool"
    let store: ChaosStore
    let process: ChaosProcess
    let size: Int
    let now0: Int64 = 1_780_000_000  // seconds
    var passNow: Int64 { now0 + 86_400 }

    private var oldGeneration: Int64 = 0
    private var oldFingerprint: [Int: [UInt8]] = [:]
    private var did = ""

    package init(store: ChaosStore, process: ChaosProcess, size: Int) {
        self.store = store
        self.process = process
        self.size = size
    }

    package var storePath: String { store.store }

    package func prepare() throws {
        let db = try store.createTemplate(process)
        for command in [["identity", "new"], ["settings", "set", "pool.size", String(size)], ["mint-pool"]] {
            let run = try process.run(["--store", store.template, "--now", "@\(now0)"] + command)
            guard run.exitCode == 0 else { throw ChaosFailure("\(command.joined(separator: " ")) failed: \(run.stderr)") }
        }
        did = try db.scalar("SELECT did FROM token_pool_identities") ?? ""
        (oldGeneration, oldFingerprint) = try live(db)
        guard oldFingerprint.count == size else { throw ChaosFailure("the template's pool has \(oldFingerprint.count) slots, not \(size)") }
        // The ledger of the template's own pass would count in every round's checks.
        try db.execute("DELETE FROM job_runs")
        try store.sealTemplate(db)
    }

    /// The live generation and its slot → blind index.
    private func live(_ db: Database) throws -> (Int64, [Int: [UInt8]]) {
        let generations = try db.query("SELECT id FROM token_pool_generations WHERE state = 'live'")
        guard generations.count == 1 else { throw ChaosFailure("\(generations.count) live generations") }
        let id = try generations[0].get(0, as: Int64.self)
        var slots: [Int: [UInt8]] = [:]
        try db.forEachRow("SELECT slot, token_index FROM token_pool_slots WHERE generation_id = ?", [id]) { row in
            slots[try row.get(0, as: Int.self)] = try row.get(1, as: [UInt8].self)
        }
        return (id, slots)
    }

    package func beginRound(_ round: Int) throws { try store.freshCopy() }

    package func nextPassArguments(settling: Bool, random: inout ChaosRandom) -> [String] {
        ["--store", store.store, "--now", "@\(passNow)", "--json", "mint-pool"]
    }

    package func isSettled(counts: [String: Int]) -> Bool { true }

    /// Right after a kill: the readers' view is the old pool or a complete new one.
    package func afterKill() throws -> [String] {
        let db = try Database(path: store.store)
        let (id, slots) = try live(db)
        if id == oldGeneration { return slots == oldFingerprint ? [] : ["after a kill the old pool is live but altered"] }
        let complete = slots.count == size && Set(slots.keys) == Set(0..<size) && Set(slots.values).count == size
        return complete ? [] : ["after a kill a new pool is live with \(slots.count) of \(size) slots (a mix or a partial pool)"]
    }

    package func violations() throws -> [String] {
        let db = try Database(path: store.store)
        var violations = try ChaosStore.commonViolations(db)
        let (id, slots) = try live(db)
        if id == oldGeneration { violations.append("the old pool is still live after the rerun"); return violations }
        if slots.count != size || Set(slots.keys) != Set(0..<size) { violations.append("the new pool has \(slots.count) of \(size) slots") }
        if Set(slots.values).count != slots.count { violations.append("the new pool repeats a token") }
        let leftovers: Int = try db.scalar("SELECT count(*) FROM token_pool_slots WHERE generation_id <> ?", [id]) ?? -1
        if leftovers != 0 { violations.append("\(leftovers) slot row(s) of other generations left after the rerun") }

        let keyring = try StoreKeyring(storeKey: try StoreKeyLocation.resolve(environment: [:], storePath: store.store).load())
        guard let address = did.split(separator: ":").last.map({ String($0).lowercased() }) else { return violations + ["no identity"] }
        var bad = 0
        var days: [Int64] = []
        // Each token is sealed bound to its row: the identity's DID, the generation's seal context, its slot and day.
        let context: [UInt8]? = try db.scalar("SELECT seal_context FROM token_pool_generations WHERE id = ?", [id])
        let storedDID: String? = try db.scalar("SELECT i.did FROM token_pool_generations g JOIN token_pool_identities i ON i.id = g.identity_id WHERE g.id = ?", [id])
        guard let context, let storedDID else { return violations + ["the new pool has no seal context or identity"] }
        try db.forEachRow("SELECT day, sealed_token, slot FROM token_pool_slots WHERE generation_id = ? ORDER BY day", [id]) { row in
            let day = try row.get(0, as: Int64.self)
            days.append(day)
            let purpose = "token-pool-jwt v2|pool=\(Hex.encode(context))|did=\(storedDID)|slot=\(try row.get(2, as: Int.self))|day=\(day)"
            guard let token = try? keyring.open(try row.get(1, as: [UInt8].self), purpose: purpose).copyBytes(),
                  Self.isValid(token, day: day, address: address) else { bad += 1; return }
        }
        if bad > 0 { violations.append("\(bad) token(s) unreadable, badly signed or not valid for their day") }
        let today = passNow / 86_400
        if days != Array(today..<today + Int64(size)) { violations.append("the pool's days are not the \(size) consecutive days from today") }
        return violations
    }

    /// A compact ES256K JWS whose signature recovers to `address` and whose window covers UTC day `day`.
    static func isValid(_ token: [UInt8], day: Int64, address: String) -> Bool {
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = try? Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
              let signature = try? Base64URL.decode(String(decoding: parts[2], as: UTF8.self)), signature.count == 64,
              let claims = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
              let nbf = (claims["nbf"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value,
              nbf <= day * 86_400, exp >= (day + 1) * 86_400, exp - nbf <= 86_400 + 2 * 3_600 else { return false }
        let digest = SHA256.hash(Array(token[..<(parts[0].count + 1 + parts[1].count)]))
        return Secp256k1.recoverPublicKeys(signature64: signature, digest: digest).contains {
            (try? Ethereum.address(uncompressedPublicKey: $0)).map { "0x" + Hex.encode($0).lowercased() } == address
        }
    }
}

import Runner
