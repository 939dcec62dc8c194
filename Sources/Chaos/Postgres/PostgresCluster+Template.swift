import Foundation

/// One `initdb` for a whole test run: when `TEST_POSTGRES_TEMPLATES` names a folder (`scripts/test` sets it), the
/// first cluster of the run initializes a data folder there and every cluster copies it instead of running `initdb`
/// again. Every cluster's `initdb` has the same options, so a copy is what `initdb` would have made; what differs
/// (the port, the socket, `fsync`, the settings) is appended to the copy's `postgresql.conf`. A run starts about
/// fifty clusters; `initdb` costs about 0.5 s of CPU each, a copy on tmpfs 0.05 s. Without the variable (job-bench,
/// a plain `swift test`) every cluster runs its own `initdb`.
extension PostgresCluster {
    /// The templates' folder `TEST_POSTGRES_TEMPLATES` names, or nil when every cluster runs `initdb`.
    package static var templatesFolder: String? {
        guard let folder = ProcessInfo.processInfo.environment["TEST_POSTGRES_TEMPLATES"], !folder.isEmpty else { return nil }
        return folder
    }

    /// The data folder of the template for these server programs, made under a lock (test processes start clusters
    /// at the same time) the first time it is asked for. `initdb` runs the server programs' `initdb` into a folder.
    static func templateData(in folder: String, binDirectory: String, serverUser: ServerUser?,
                             initdb: (String) throws -> Void) throws -> String {
        let name = "template" + binDirectory.map { $0.isLetter || $0.isNumber ? String($0) : "-" }.joined()
        let template = folder + "/" + name
        let complete = template + "/complete"
        let lockPath = folder + "/" + name + ".lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw PostgresClusterFailure("cannot open \(lockPath): errno \(errno)") }
        defer { close(lock) }
        // flock(2): "If a process uses open(2) (or similar) to obtain more than one descriptor for the same file,
        // these descriptors are treated independently by flock()", so the threads of one process exclude each
        // other too; the lock goes with the descriptor's close.
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw PostgresClusterFailure("cannot lock \(lockPath): errno \(errno)") }
        }
        if FileManager.default.fileExists(atPath: complete) { return template + "/data" }
        // A template a killed run left half-made is made again.
        try? FileManager.default.removeItem(atPath: template)
        try FileManager.default.createDirectory(atPath: template + "/data", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(template, 0o755)
        if let serverUser, chown(template + "/data", serverUser.uid, serverUser.gid) != 0 {
            throw PostgresClusterFailure("cannot give \(template)/data to the server's user (uid \(serverUser.uid)): errno \(errno)")
        }
        try initdb(template + "/data")
        guard FileManager.default.createFile(atPath: complete, contents: nil) else { throw PostgresClusterFailure("cannot create \(complete)") }
        return template + "/data"
    }
}
