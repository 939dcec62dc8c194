import Cryptography
import Foundation
import Store

/// Where the store key comes from (docs/design.md §4), in order: `$CREDENTIALS_DIRECTORY/store-key` (systemd
/// `LoadCredential=`), `JOB_STORE_KEY_FILE`, else `<store>.key`, created with mode 0600 on first use.
///
/// The file holds 32 raw bytes or 64 hex digits (a trailing newline is ignored). An explicitly configured
/// key that is missing or malformed is a configuration error (exit 78); it is never replaced.
package struct StoreKeyLocation: Sendable {
    package let path: String
    /// True for the default `<store>.key`, the only location this program creates.
    package let createIfMissing: Bool
    /// True for `$CREDENTIALS_DIRECTORY/store-key`: systemd owns that file and its mode.
    package let isCredential: Bool

    package init(path: String, createIfMissing: Bool, isCredential: Bool = false) {
        self.path = path
        self.createIfMissing = createIfMissing
        self.isCredential = isCredential
    }

    /// Resolves the location for a store at `storePath`.
    package static func resolve(environment: [String: String], storePath: String) -> StoreKeyLocation {
        if let credentials = environment["CREDENTIALS_DIRECTORY"], !credentials.isEmpty {
            return StoreKeyLocation(path: credentials + "/store-key", createIfMissing: false, isCredential: true)
        }
        if let file = environment["JOB_STORE_KEY_FILE"], !file.isEmpty {
            return StoreKeyLocation(path: file, createIfMissing: false)
        }
        // A PostgreSQL store has no file to keep a key beside, and every host must use the same key: it is given.
        if Database.engine(forLocation: storePath) == .postgresql {
            return StoreKeyLocation(path: "", createIfMissing: false)
        }
        return StoreKeyLocation(path: storePath + ".key", createIfMissing: true)
    }

    /// Reads the key, creating it first when allowed and absent. `storeHoldsSecrets`: the store already has
    /// secrets sealed under some key, so a missing key file is refused (78) rather than replaced by a new key
    /// that could never open them. A key file outside `$CREDENTIALS_DIRECTORY` that its group or others can
    /// read is refused (78) too, as ssh refuses such private keys.
    package func load(storeHoldsSecrets: Bool = false) throws -> SecretBytes {
        guard !path.isEmpty else {
            throw JobError.configuration("store-key-missing", "a PostgreSQL store needs its key given, the same on every host: LoadCredential=store-key or JOB_STORE_KEY_FILE")
        }
        if !FileManager.default.fileExists(atPath: path) {
            guard createIfMissing else {
                throw JobError.configuration("store-key-missing", "the configured store key file does not exist; check LoadCredential= or JOB_STORE_KEY_FILE")
            }
            guard !storeHoldsSecrets else {
                throw JobError.configuration("store-key-missing", "the store holds secrets but its key file (<store>.key) is missing; restore the key file, or set JOB_STORE_KEY_FILE to it — no new key was made")
            }
            try create()
        }
        guard PrivateFiles.kind(path) == .regular else {
            throw JobError.configuration("store-key-not-a-file", "the store key path is a folder or a special file, not a key file; point it at the key file (LoadCredential=, JOB_STORE_KEY_FILE or <store>.key)")
        }
        if !isCredential && PrivateFiles.readableByOthers(path) {
            throw JobError.configuration("store-key-exposed", "the store key file can be read by its group or others; make it private (chmod 600) and consider the key leaked")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw JobError.configuration("store-key-unreadable", "the store key file cannot be read; check its owner and mode")
        }
        var bytes = [UInt8](data)
        defer { for i in bytes.indices { bytes[i] = 0 } }
        if bytes.count == 32 { return SecretBytes(bytes) }
        var text = bytes
        while let last = text.last, last == 0x0a || last == 0x0d || last == 0x20 { text.removeLast() }
        defer { for i in text.indices { text[i] = 0 } }
        if text.count == 64, let decoded = Hex.bytes(text) { return SecretBytes(decoded) }
        throw JobError.configuration("store-key-malformed", "the store key file must hold 32 bytes or 64 hex digits")
    }

    /// Writes a fresh key atomically: a private temporary file linked into place, so a concurrent process
    /// either sees no key or the whole key, and two first uses cannot end with two different keys.
    private func create() throws {
        let key = try SecureRandom.bytes(count: 32)
        let hex = key.map { String(format: "%02x", $0) }.joined() + "\n"
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw JobError.store("store-key-create", "cannot create the store key file next to the store; check the folder's permissions") }
        fchmod(fd, 0o600)
        let written = hex.withCString { Foundation.write(fd, $0, strlen($0)) }
        let synced = fsync(fd) == 0
        close(fd)
        defer { unlink(temporary) }
        guard written == hex.utf8.count, synced else {
            throw JobError.store("store-key-create", "cannot write the store key file (disk full?)")
        }
        if link(temporary, path) != 0 && errno != EEXIST {
            throw JobError.store("store-key-create", "cannot create the store key file next to the store; check the folder's permissions")
        }
    }

}
