import Foundation
import Store
import Testing
import TestSupport

/// A store key is checked against the sealed values themselves when the key-check row is gone (docs/roles/relay.md,
/// "The store key"), through the real `job` binary.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct StoreKeySampleTests {
    /// A scratch store, two fresh store key files, and `run(key, arguments)` running `job` on that store with one.
    static func twoKeys(_ label: String) throws -> (store: String, original: String, other: String, run: (String, [String]) throws -> JobProcess.Result) {
        let home = TemporaryDirectory(label)
        let store = home.file("store.sqlite")
        let original = home.file("original.key"), other = home.file("other.key")
        try TestStore.writeKey(to: original)
        try TestStore.writeKey(to: other)
        return (store, original, other, { key, arguments in
            try JobProcess.run(["--store", store] + arguments, environment: JobProcess.environment(home: home.path, ["JOB_STORE_KEY_FILE": key]))
        })
    }

    @Test func aDifferentKeyIsRefusedOverSealedTokensEvenWhenTheKeyCheckRowWasDeleted() throws {
        let (store, original, other, run) = try Self.twoKeys("key-sample")
        let registered = try run(original, ["relay", "register", "--device-id", Fixture.deviceID(1), "--apns-token", Fixture.token(1)])
        #expect(registered.exitCode == 0, "\(registered.stderr)")
        #expect(try run(other, ["relay", "register", "--device-id", Fixture.deviceID(3), "--apns-token", Fixture.token(3)]).exitCode == 78,
                "the check row refuses another key")

        try Database(path: store).execute("DELETE FROM store_key_check")
        for arguments in [["relay", "register", "--device-id", Fixture.deviceID(2), "--apns-token", Fixture.token(2)], ["relay", "register", "--device-id", Fixture.deviceID(1), "--apns-token", Fixture.token(5)]] {
            let refused = try run(other, arguments)
            let lines = refused.stderr.split(separator: "\n").filter { $0.hasPrefix("job: ") }
            #expect(refused.exitCode == 78 && lines.count == 1 && lines[0].contains("the store key does not match this store"), "\(arguments): \(refused.stderr)")
        }
        #expect(try Database(path: store).scalar("SELECT count(*) FROM store_key_check") == 0, "no check row was sealed under the other key")
        #expect(try Database(path: store).scalar("SELECT count(*) FROM relay_tokens") == 1, "nothing was registered under it")

        // The original key opens the tokens: accepted, and the check row is sealed again.
        #expect(try run(original, ["relay", "register", "--device-id", Fixture.deviceID(4), "--apns-token", Fixture.token(4)]).exitCode == 0)
        #expect(try Database(path: store).scalar("SELECT count(*) FROM store_key_check") == 1)
        #expect(try Database(path: store).scalar("SELECT count(*) FROM relay_tokens") == 2)
    }

    /// Each module's sealed values, made through the binary: the command that seals one, the table it lands in, and a
    /// second command that writes under the key (to see a wrong key refused before it writes, and the right one taken).
    enum SealingModule: String, CaseIterable, Sendable {
        case grantsNodeKey, grantsIssued, meshNode, tokenPoolIdentity
        var seal: [String] {
            switch self {
            case .grantsNodeKey: ["node", "show"]
            case .grantsIssued: ["grants", "issue", "--to", String(repeating: "ab", count: 32)]
            case .meshNode: ["mesh", "init"]
            case .tokenPoolIdentity: ["identity", "new"]
            }
        }
        var table: String {
            switch self {
            case .grantsNodeKey: "node_identity"
            case .grantsIssued: "grants_issued"
            case .meshNode: "mesh_node"
            case .tokenPoolIdentity: "token_pool_identities"
            }
        }
        var write: [String] {
            switch self {
            case .grantsNodeKey, .grantsIssued: ["grants", "issue", "--to", String(repeating: "cd", count: 32)]
            case .meshNode: ["mesh", "announce"]
            case .tokenPoolIdentity: ["identity", "new"]
            }
        }
    }

    @Test(arguments: SealingModule.allCases) func aDifferentKeyIsRefusedOverAnyModulesSealedValuesWhenTheKeyCheckRowWasDeleted(_ module: SealingModule) throws {
        let (store, original, other, run) = try Self.twoKeys("key-sample-\(module.rawValue)")
        let sealed = try run(original, module.seal)
        #expect(sealed.exitCode == 0, "\(sealed.stderr)")
        let rows = { (table: String) throws -> Int in try Database(path: store).scalar("SELECT count(*) FROM \(table)") ?? -1 }
        let before = try rows(module.table)
        #expect(before >= 1, "the command sealed a value into \(module.table)")

        try Database(path: store).execute("DELETE FROM store_key_check")
        let refused = try run(other, module.write)
        let lines = refused.stderr.split(separator: "\n").filter { $0.hasPrefix("job: ") }
        #expect(refused.exitCode == 78 && lines.count == 1 && lines[0].contains("the store key does not match this store"), "\(refused.stderr)")
        #expect(try rows("store_key_check") == 0, "no check row was sealed under the other key")
        #expect(try rows(module.table) == before, "nothing was written under it")

        // The original key opens the module's values: the command runs, and the check row is sealed again.
        let accepted = try run(original, module.write)
        #expect(accepted.exitCode == 0, "\(accepted.stderr)")
        #expect(try rows("store_key_check") == 1)
    }
}
