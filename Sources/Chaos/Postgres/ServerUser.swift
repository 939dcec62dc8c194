import Foundation

/// The unprivileged user the PostgreSQL server programs run as when the tests run as root (initdb and postgres
/// refuse root): `nobody`, through util-linux `setpriv`.
struct ServerUser: Sendable {
    let uid: uid_t
    let gid: gid_t

    static let setpriv = "/usr/bin/setpriv"

    /// `nobody` and its primary group, from the passwd database.
    static func nobody() throws -> ServerUser {
        guard FileManager.default.isExecutableFile(atPath: setpriv) else {
            throw PostgresClusterFailure("running as root needs \(setpriv) (Debian's util-linux) to start PostgreSQL as nobody")
        }
        guard let entry = getpwnam("nobody") else { throw PostgresClusterFailure("running as root needs a user nobody to start PostgreSQL as") }
        return ServerUser(uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// The command prefix that runs a program as this user with no supplementary groups.
    var prefix: [String] { [Self.setpriv, "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"] }

    /// True when every folder from / down to `path` is searchable by others (so `nobody` reaches its folders).
    static func othersCanTraverse(_ path: String) -> Bool {
        var current = ""
        for component in ("/" + path).split(separator: "/") {
            current += "/" + component
            var info = stat()
            guard stat(current, &info) == 0, info.st_mode & S_IXOTH != 0 else { return false }
        }
        return true
    }
}
