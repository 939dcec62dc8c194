import Foundation
import Store

/// The ends of passes that could not be written to the ledger: a PostgreSQL server still down after the pass's
/// retries, or one that accepts no writes. Each is kept as a small file in this host's state folder
/// (`unrecorded-ends/` beside the default store path: `$STATE_DIRECTORY`, else
/// `${XDG_STATE_HOME:-$HOME/.local/state}/background-jobs`), and the next pass of the same job on this host writes it
/// to its row before it takes over abandoned leases: the row says `failed` with the exit code and category the pass
/// ended with, not `running`, then `killed` (docs/roles/relay.md, "PostgreSQL faults"). A row another host's pass
/// marked `killed` meanwhile is corrected the same way.
///
/// A file names its row by job, ledger id and start time, so a file is only ever written to the row it came from;
/// it holds counts and a category, never an identifier or the store's location. A file whose row is not found
/// (another store on this host, the row pruned) is left for the passes on that store, and removed after
/// `keepSeconds`.
struct UnrecordedEnds {
    let folder: String
    static let keepSeconds: TimeInterval = 7 * 86_400

    /// The end of one pass, as `Ledger.finish` would have written it.
    struct End: Codable {
        var outcome: String
        var exitCode: Int
        var finishedAt: Int64
        var durationMilliseconds: Int
        var counts: String
        var reason: String?
    }

    /// This host's folder, or nil when the environment gives it no place (no absolute `HOME`).
    init?(environment: [String: String]) {
        guard let store = try? Invocation.defaultStorePath(environment: environment) else { return nil }
        folder = (store as NSString).deletingLastPathComponent + "/unrecorded-ends"
    }

    private func file(job: String, id: Int64, startedAt: Int64) -> String { "\(folder)/\(job).\(id).\(startedAt).json" }

    /// Keeps `end` for the row `id` of `job` that started at `startedAt`.
    func keep(_ end: End, job: String, id: Int64, startedAt: Int64) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let data = try JSONEncoder().encode(end)
        let path = file(job: job, id: id, startedAt: startedAt)
        guard FileManager.default.createFile(atPath: path + ".tmp", contents: data, attributes: [.posixPermissions: 0o600]),
              rename(path + ".tmp", path) == 0 else {
            throw JobError.internal("the unrecorded pass end could not be kept")
        }
    }

    /// Writes the kept ends of `job` to their rows (still `running`, or marked `killed` without an exit code) inside
    /// the caller's transaction; returns the files to remove once it commits and how many rows it wrote.
    func write(job: String, on database: Database) throws -> (files: [String], rows: Int) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return ([], 0) }
        var done: [String] = [], rows = 0
        for name in names where name.hasPrefix(job + ".") && name.hasSuffix(".json") {
            let parts = name.dropFirst(job.count + 1).dropLast(5).split(separator: ".")
            let path = folder + "/" + name
            guard parts.count == 2, let id = Int64(parts[0]), let startedAt = Int64(parts[1]),
                  let data = FileManager.default.contents(atPath: path), let end = try? JSONDecoder().decode(End.self, from: data) else { continue }
            let changed = try database.execute("""
                UPDATE job_runs SET outcome = ?, exit_code = ?, finished_at = ?, duration_ms = ?, counts = ?, reason = ?
                WHERE id = ? AND job = ? AND started_at = ? AND (outcome = 'running' OR (outcome = 'failed' AND reason = 'killed' AND exit_code IS NULL))
                """, [end.outcome, end.exitCode, end.finishedAt, end.durationMilliseconds, end.counts, end.reason, id, job, startedAt])
            rows += changed
            let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date ?? Date()
            if changed > 0 || Date().timeIntervalSince(modified) > Self.keepSeconds { done.append(path) }
        }
        return (done, rows)
    }

    /// Removes the files `write` returned.
    func remove(_ files: [String]) {
        for file in files { unlink(file) }
    }
}
