import Foundation
import Cryptography
import Runner

/// `job identity import|new|add-peer|list|use|remove|export`: the minting identities (docs/protocols/jwt-pool.md §4, §5).
///
/// DIDs are printed on stdout only (never logged); a private key leaves the store only through `identity export`.
struct IdentityImportCommand: Command {
    let path = ["identity", "import"]
    let summary = "store a secp256k1 private key (64 hex digits on stdin) as a did:ethr identity, sealed"
    let discussion = "Reads the key as hex (an optional 0x prefix and surrounding whitespace are allowed) from standard input. The first identity stored becomes the active one."

    func run(_ context: JobContext) throws {
        var text = String(decoding: try context.readInput(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("0x") || text.hasPrefix("0X") { text.removeFirst(2) }
        guard text.utf8.count == 64, let bytes = try? Hex.decode(text.lowercased()) else {
            throw JobError.badInput("key-malformed", "expected a secp256k1 private key as 64 hex digits on standard input")
        }
        let key: Secp256k1PrivateKey
        do { key = try Secp256k1PrivateKey(rawRepresentation: SecretBytes(bytes)) }
        catch { throw JobError.badInput("key-invalid", "the key is not a valid secp256k1 private key (zero or not below the group order)") }
        let keyring = try context.keyring()
        let (identity, created) = try IdentityStore(database: context.database).importKey(key, keyring: keyring, now: context.nowMilliseconds)
        context.logger.info("identity.imported", ["created": .bool(created)])
        IdentityOutput.print(identity, created: created, context)
    }
}

struct IdentityNewCommand: Command {
    let path = ["identity", "new"]
    let summary = "generate a secp256k1 key and store it as a did:ethr identity, sealed"

    func run(_ context: JobContext) throws {
        let keyring = try context.keyring()
        let (identity, created) = try IdentityStore(database: context.database).importKey(try Secp256k1PrivateKey.generate(), keyring: keyring, now: context.nowMilliseconds)
        context.logger.info("identity.generated")
        IdentityOutput.print(identity, created: created, context)
    }
}

struct IdentityAddPeerCommand: Command {
    let path = ["identity", "add-peer"]
    let summary = "register a passkey (did:peer) identity; it has no key here and cannot mint a pool"
    let positionals = [PositionalSpec("DID", "the did:peer:… DID")]

    func run(_ context: JobContext) throws {
        let did = context.arguments.positional(0)!
        guard IdentityDID.isPeer(did) else { throw JobError.badInput("did-malformed", "expected a did:peer: DID (letters, digits and . - _ : % after the prefix)") }
        let (identity, created) = try IdentityStore(database: context.database).addPeer(did: did, now: context.nowMilliseconds)
        context.logger.info("identity.peer_added", ["created": .bool(created)])
        IdentityOutput.print(identity, created: created, context)
    }
}

struct IdentityListCommand: Command {
    let path = ["identity", "list"]
    let summary = "every stored identity: DID, kind, whether active (never a key)"

    func run(_ context: JobContext) throws {
        let identities = try IdentityStore(database: context.database).all()
        if context.jsonOutput {
            context.printJSON(.array(identities.map(IdentityOutput.json)))
            return
        }
        if identities.isEmpty { context.print("no identities; run 'job identity import' or 'job identity new'"); return }
        for identity in identities {
            context.print("\(identity.isActive ? "*" : " ") \(identity.did)  \(identity.method == .ethr ? "did:ethr (can mint)" : "did:peer (passkey, cannot mint)")")
        }
    }
}

struct IdentityUseCommand: Command {
    let path = ["identity", "use"]
    let summary = "make DID the active identity, or sign out with --none; a change drops the pool at once"
    let discussion = "A did:ethr DID matches in any letter case. --none signs out: no identity is active, the pool is dropped, and mint-pool then skips (no-identity) until an identity is chosen again."
    let options: [OptionSpec] = [.flag("--none", "sign out: leave no identity active and drop the pool")]
    let positionals = [PositionalSpec("DID", "a stored identity's DID", optional: true)]

    func run(_ context: JobContext) throws {
        let signOut = context.arguments.flag("--none")
        let identities = IdentityStore(database: context.database)
        let given = context.arguments.positional(0)
        if signOut == (given != nil) { throw JobError.usage("'identity use' needs a DID or --none (not both)") }
        let did: String?
        let changed: Bool, dropped: Int
        if let given {
            guard let target = try identities.identity(did: given) else { throw TokenPoolErrors.unknownIdentity }
            did = target.did
            (changed, dropped) = try identities.use(did: target.did, now: context.nowMilliseconds)
        } else {
            did = nil
            (changed, dropped) = try identities.signOut()
        }
        // The switch already retired the pool; its sealed rows go now, in batches (mint-pool finishes if killed).
        let purged = try PoolStore(database: context.database).purge(includingStaging: false, between: context.checkCancellation)
        context.logger.info("identity.used", ["changed": .bool(changed), "dropped_slots": .int(dropped), "purged": .int(purged)])
        if context.jsonOutput {
            context.printJSON(["did": .optional(did), "changed": .bool(changed), "pool_dropped": .bool(dropped > 0), "dropped_slots": .number(dropped)])
        } else if let did {
            if !changed {
                context.print("\(did) is already the active identity; the pool is unchanged")
            } else {
                context.print("active identity: \(did)")
                context.print(dropped > 0 ? "dropped the previous identity's pool (\(dropped) tokens); run mint-pool to mint one for this identity"
                                          : "there was no pool to drop")
            }
        } else {
            context.print(changed ? "signed out: no identity is active" : "no identity was active")
            if dropped > 0 { context.print("dropped the pool (\(dropped) tokens)") }
        }
    }
}

/// `job identity remove DID [--force]`: deletes an identity's sealed key and every pool minted for it.
struct IdentityRemoveCommand: Command {
    let path = ["identity", "remove"]
    let summary = "delete an identity, its sealed key and its pool; the active one only with --force (which signs out)"
    let options: [OptionSpec] = [.flag("--force", "remove even the active identity, leaving none active")]
    let positionals = [PositionalSpec("DID", "a stored identity's DID")]

    func run(_ context: JobContext) throws {
        let identities = IdentityStore(database: context.database)
        guard let identity = try identities.identity(did: context.arguments.positional(0)!) else { throw TokenPoolErrors.unknownIdentity }
        if identity.isActive && !context.arguments.flag("--force") {
            throw JobError.badInput("identity-active", "that is the active identity; removing it signs out and drops the pool — add --force, or 'job identity use' another first")
        }
        let dropped = try identities.retireForRemoval(identity)
        let purged = try PoolStore(database: context.database).purge(includingStaging: false, between: context.checkCancellation)
        guard try identities.deleteRemoved(identity) else {
            throw JobError.transient("identity-busy", "a pool for that identity is still being written; run 'job identity remove' again")
        }
        context.logger.info("identity.removed", ["was_active": .bool(identity.isActive), "dropped_slots": .int(dropped), "purged": .int(purged)])
        if context.jsonOutput {
            context.printJSON(["did": .string(identity.did), "removed": .bool(true), "was_active": .bool(identity.isActive), "dropped_slots": .number(dropped)])
        } else {
            context.print("removed \(identity.did) and its sealed key")
            if identity.isActive { context.print("no identity is active now (signed out)") }
            if dropped > 0 { context.print("dropped its pool (\(dropped) tokens)") }
        }
    }
}

struct IdentityExportCommand: Command {
    let path = ["identity", "export"]
    let summary = "print an identity's private key as hex on stdout (the active one by default) — a secret"
    let positionals = [PositionalSpec("DID", "the identity (default: the active one)", optional: true)]

    func run(_ context: JobContext) throws {
        let identities = IdentityStore(database: context.database)
        let identity: IdentityStore.Identity
        if let did = context.arguments.positional(0) {
            guard let found = try identities.identity(did: did) else { throw TokenPoolErrors.unknownIdentity }
            identity = found
        } else {
            guard let active = try identities.active() else { throw TokenPoolErrors.noIdentity }
            identity = active
        }
        guard identity.method == .ethr else {
            throw JobError.badInput("unsupported-identity", "a passkey (did:peer) identity has no private key here to export")
        }
        let key = try identities.openKey(of: identity, keyring: try context.keyring())
        let hex = Hex.encode(key.rawRepresentation.copyBytes())
        context.logger.info("identity.exported")
        if context.jsonOutput {
            context.printJSON(["did": .string(identity.did), "private_key": .string(hex)])
        } else {
            context.print(hex)
        }
    }
}

/// Shared rendering of one identity.
enum IdentityOutput {
    static func json(_ identity: IdentityStore.Identity) -> JSON {
        ["did": .string(identity.did), "method": .string(identity.method.rawValue), "active": .bool(identity.isActive),
         "can_mint": .bool(identity.method == .ethr), "created_at": .string(Date(unixMilliseconds: identity.createdAt).rfc3339)]
    }

    static func print(_ identity: IdentityStore.Identity, created: Bool, _ context: JobContext) {
        if context.jsonOutput {
            var object = json(identity)
            if case .object(var pairs) = object { pairs.append(("created", .bool(created))); object = .object(pairs) }
            context.printJSON(object)
        } else {
            context.print(identity.did)
            if !created { context.print("(already stored; nothing changed)") }
            if identity.isActive { context.print("active identity") }
        }
    }
}
