import Foundation

/// Runs a program in a private mount namespace where some shared libraries cannot be loaded: `/dev/null` is bound
/// over each one's file (as the loader cache resolves its SONAME), so `dlopen` finds an empty file.
package enum HiddenLibraries {
    /// The file the loader cache gives for `soname` (`/sbin/ldconfig -p`), or nil when it has none.
    package static func path(of soname: String) throws -> String? {
        let cache = try ExternalTool.run("/sbin/ldconfig", ["-p"], separateStderr: true).output
        let line = cache.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(soname + " ") }
        return line.flatMap { $0.components(separatedBy: "=> ").last }
    }

    /// Runs `executable arguments…` with every library in `sonames` unloadable (killed after `timeout` seconds
    /// with SIGTERM, when given). Throws when a SONAME is not in the loader cache.
    package static func run(_ sonames: [String], _ executable: String, _ arguments: [String], environment: [String: String],
                            timeout: Int? = nil) throws -> ExternalTool.Result {
        var paths: [String] = []
        for soname in sonames {
            guard let path = try path(of: soname) else { throw Missing(soname: soname) }
            paths.append(path)
        }
        // Root needs only a mount namespace; anyone else maps themselves to root in a user namespace first.
        let namespace = getuid() == 0 ? ["-m"] : ["-Urm"]
        let binds = paths.indices.map { "mount --bind /dev/null \"$\($0 + 1)\" && " }.joined()
        let command = timeout.map { ["/usr/bin/timeout", "-s", "TERM", String($0), executable] } ?? [executable]
        // sh -c SCRIPT NAME PATH… -- COMMAND…: the paths are $1…$n; `shift n` leaves the command in "$@".
        let script = binds + "shift \(paths.count) && exec \"$@\""
        return try ExternalTool.run("/usr/bin/unshare", namespace + ["sh", "-c", script, "hidden-libraries"] + paths + command + arguments,
                                    environment: environment, separateStderr: true)
    }

    /// A SONAME the loader cache does not know.
    package struct Missing: Error, CustomStringConvertible {
        package let soname: String
        package var description: String { "\(soname) is not in the loader cache" }
    }
}
