import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import TokenPool

/// Identities (docs/protocols/jwt-pool.md §4, §5): import, generate, passkeys, switching (which drops the pool), custody.
@Suite(.timeLimit(.minutes(15))) struct IdentityTests {
    static let now = instant("2027-04-02T10:00:00Z")

    @Test func importStoresTheKeySealedUnderItsChecksummedDID() throws {
        let harness = PoolHarness()
        let imported = try harness.command(["identity", "import"], json: true, stdin: "  0x" + PoolHarness.keyA.uppercased() + "\n")
        #expect(imported.exitCode == .success)
        let json = try imported.json()
        #expect(json["did"] as? String == PoolHarness.didA)
        #expect(json["active"] as? Bool == true)
        #expect(json["created"] as? Bool == true)
        // Importing again changes nothing.
        let again = try harness.command(["identity", "import"], json: true, stdin: PoolHarness.keyA)
        #expect(try again.json()["created"] as? Bool == false)
        let count: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_identities")
        #expect(count == 1)

        // The key is sealed: its bytes appear nowhere in the store file, and it opens to the same key.
        let sealed: [UInt8] = try harness.database().scalar("SELECT sealed_private_key FROM token_pool_identities")!
        let keyBytes = try Hex.decode(PoolHarness.keyA)
        #expect(!Self.contains(sealed, keyBytes))
        #expect(try harness.keyring().open(sealed, purpose: IdentityStore.keyPurpose).copyBytes() == keyBytes)
        let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: harness.job.storePath)))
        #expect(!Self.contains(file, keyBytes))
        #expect(!Self.contains(file, Array(PoolHarness.keyA.utf8)))

        // Export is the one way out, on stdout.
        let exported = try harness.command(["identity", "export"])
        #expect(exported.stdout == PoolHarness.keyA + "\n")
    }

    @Test func malformedKeysAreRefusedWithExit65AndNothingStored() throws {
        let harness = PoolHarness()
        for input in ["", "xyz", String(PoolHarness.keyA.dropLast()), PoolHarness.keyA + "00",
                      String(repeating: "0", count: 64),
                      "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"] {
            let result = try harness.command(["identity", "import"], stdin: input)
            #expect(result.exitCode == .dataError, "input \(input)")
            #expect(result.error.map { !$0.message.contains(input) || input.isEmpty } == true)
        }
        let count: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_identities")
        #expect(count == 0)
        #expect(try harness.command(["identity", "add-peer", "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F"]).exitCode == .dataError)
        #expect(try harness.command(["identity", "add-peer", "did:peer:"]).exitCode == .dataError)
        #expect(try harness.command(["identity", "use", "did:peer:2.Ez6LSnotstored"]).error?.category == "unknown-identity")
    }

    @Test func newGeneratesAFreshMintingIdentity() throws {
        let harness = PoolHarness()
        let first = try harness.command(["identity", "new"], json: true).json()
        let second = try harness.command(["identity", "new"], json: true).json()
        let didOne = try #require(first["did"] as? String)
        let didTwo = try #require(second["did"] as? String)
        #expect(didOne != didTwo)
        #expect(IdentityDID.isEthr(didOne) && IdentityDID.isEthr(didTwo))
        // The first stays active; the exported key derives the DID.
        #expect(first["active"] as? Bool == true && second["active"] as? Bool == false)
        let hex = try harness.command(["identity", "export"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(DIDEthr.did(for: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(hex)))) == didOne)
        let list = try JSONSerialization.jsonObject(with: Data(try harness.command(["identity", "list"], json: true).stdout.utf8)) as? [[String: Any]]
        #expect(list?.count == 2)
        #expect(list?.allSatisfy { $0["private_key"] == nil } == true)
    }

    @Test func switchingTheActiveIdentityDropsThePoolAtOnce() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.importKey(PoolHarness.keyB)
        try harness.setting("pool.size", "20")
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        #expect(try harness.exportedTokens().count == 20)

        // Same identity: not a change, the pool stays.
        let same = try harness.command(["identity", "use", PoolHarness.didA], json: true).json()
        #expect(same["changed"] as? Bool == false)
        #expect(try harness.exportedTokens().count == 20)

        let switched = try harness.command(["identity", "use", PoolHarness.didB], json: true).json()
        #expect(switched["changed"] as? Bool == true)
        #expect(switched["dropped_slots"] as? Int == 20)
        #expect(try harness.exportedTokens().isEmpty)
        let export = try harness.command(["pool", "export"], json: true).json()
        #expect(export["did"] as? String == PoolHarness.didB)
        // The sealed tokens are gone from the store, not merely hidden.
        let rows: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_slots")
        #expect(rows == 0)
        let show = try harness.command(["pool", "show"], now: Self.now)
        #expect(show.stdout.contains("no pool"))

        // Minting again mints for B.
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let tokens = try harness.exportedTokens()
        #expect(try tokens.allSatisfy { try DayTokenInspection(token: $0, expectedIssuer: PoolHarness.didB).issuer == PoolHarness.didB })
        #expect(try harness.command(["pool", "verify"], now: Self.now).exitCode == .success)
    }

    @Test func aPasskeyIdentityIsRefusedAndThePoolIsLeftUnchanged() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "12")
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let before = try harness.exportedTokens()

        let peer = "did:peer:2.Ez6LSbysY2xFMRpGMhb7tFTLMpeuPRaqaWM1yECx2AtzE3KCc.Vz6MkqRYqQiSgvZQdnBytw86Qbs2ZWUkGv22od935YF4s8M7V"
        #expect(try harness.command(["identity", "add-peer", peer]).exitCode == .success)
        // Registering it does not switch to it; the pool is still A's.
        #expect(try harness.exportedTokens() == before)

        // With the passkey identity active (which drops A's pool, as any switch does), minting is refused...
        #expect(try harness.command(["identity", "use", peer]).exitCode == .success)
        let refused = try harness.pass("mint-pool", now: Self.now)
        #expect(refused.exitCode == .success)
        #expect(try refused.json()["reason"] as? String == "unsupported-identity")
        #expect(try harness.exportedTokens().isEmpty)
        // ...also as a dry run, and nothing was staged.
        #expect(try harness.pass("mint-pool", ["--dry-run"], now: Self.now).json()["reason"] as? String == "unsupported-identity")
        let generations: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_generations")
        #expect(generations == 0)
        #expect(try harness.command(["identity", "export"]).error?.category == "unsupported-identity")
    }

    @Test func aPasskeyIdentityThatBecameActiveUnderALivePoolLeavesThatPoolUntouched() throws {
        // The table's lifecycle drops the pool on a switch; a store where the pointer moved without that (an
        // older store, or the app's own write) must still see mint-pool refuse without touching the pool.
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "12")
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let before = try harness.exportedTokens()
        let peer = "did:peer:0z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
        #expect(try harness.command(["identity", "add-peer", peer]).exitCode == .success)
        let db = try harness.database()
        try db.write { db in
            _ = try db.execute("UPDATE token_pool_active_identity SET identity_id = (SELECT id FROM token_pool_identities WHERE did = ?)", [peer])
        }
        let refused = try harness.pass("mint-pool", now: Self.now.addingTimeInterval(86_400))
        #expect(try refused.json()["reason"] as? String == "unsupported-identity")
        #expect(try harness.exportedTokens() == before)
        let live: Int? = try db.scalar("SELECT count(*) FROM token_pool_generations WHERE state = 'live'")
        #expect(live == 1)
    }

    @Test func clearIsACustodyClearNotARevocation() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "5")
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let cleared = try harness.command(["pool", "clear"])
        #expect(cleared.exitCode == .success)
        #expect(cleared.stdout.contains("custody clear, not a revocation"))
        let json = try harness.command(["pool", "clear"], json: true).json()
        #expect(json["revoked"] as? Bool == false)
        #expect(json["cleared"] as? Bool == false)
        let rows: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_slots")
        #expect(rows == 0)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<start + needle.count]) == needle { return true }
        }
        return false
    }
}
