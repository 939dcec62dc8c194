import Foundation

/// Where Debian's PostgreSQL server programs live: `/usr/lib/postgresql/<major>/bin`, the highest major ≥ 15
/// that has `initdb`, `pg_ctl`, `postgres` and `psql` (not the `/usr/bin` wrappers, not `pg_config --bindir`,
/// which names the client's folder).
package enum PostgresServerBinaries {
    /// The oldest major the relay's store supports.
    package static let minimumMajor = 15
    /// The programs the cluster runs.
    package static let programs = ["initdb", "pg_ctl", "postgres", "psql"]

    /// The bin folder of the highest installed major ≥ `minimumMajor`, or nil when none is installed.
    package static func find(root: String = "/usr/lib/postgresql") -> String? {
        let majors = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }
        for major in majors.sorted(by: >) where major >= minimumMajor {
            let bin = "\(root)/\(major)/bin"
            if hasPrograms(bin) { return bin }
        }
        return nil
    }

    /// True when `bin` holds every program the cluster runs.
    package static func hasPrograms(_ bin: String) -> Bool {
        programs.allSatisfy { FileManager.default.isExecutableFile(atPath: "\(bin)/\($0)") }
    }

    /// True when a server the cluster can run is installed (Debian's `postgresql` package).
    package static var isInstalled: Bool { find() != nil }
}
