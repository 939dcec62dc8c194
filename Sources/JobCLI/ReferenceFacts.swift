/// The facts the man page and `docs/reference/commands.md` share beyond the command table: exit codes in full,
/// the environment every command reads, the files `job` uses, and where to read on.
enum ReferenceFacts {
    /// Every exit status `job` returns, with what it means (sysexits; `docs/design.md` §3).
    static let exitCodes: [(code: Int, meaning: String)] = [
        (0, "done; also skipped because another pass holds the lease, or the job is disabled or has nothing due"),
        (64, "usage: an unknown command or option, a missing value, an argument that is not valid UTF-8, a PostgreSQL store given to a command of another role"),
        (65, "bad input data (the message names it); also standard input over 1 MiB, and a damaged sealed row"),
        (69, "a required service is unavailable (Syncthing, the relay, APNs, Endorser, a PostgreSQL server that cannot be reached); also a system library the command needs cannot be loaded (the message names the Debian package)"),
        (70, "internal error (a bug)"),
        (73, "the store cannot be created or opened: not a database, damaged, read-only, from a newer version, disk full, or an empty file (which only job migrate turns into a new store)"),
        (75, "transient failure, retried by the next pass (a PostgreSQL connection lost mid-pass among them); also stopped by SIGTERM or SIGINT"),
        (78, "configuration error: a missing or wrong setting or environment value, or a stored setting out of its range (job settings unset KEY repairs it)"),
    ]

    /// The environment every command reads (each job's own variables are listed with the job).
    static let environment: [(name: String, help: String)] = [
        ("JOB_STORE", "the store, as --store"),
        ("JOB_NOW", "the emulated clock, as --now"),
        ("JOB_METRICS_DIR", "the metrics folder, as --metrics-dir"),
        ("JOB_LOG_FORMAT", "text (logfmt, the default) or json"),
        ("JOB_LOG_LEVEL", "debug, info (the default), warn or error"),
        ("JOB_STORE_KEY_FILE", "the store key file, when not given by systemd as the credential store-key"),
        ("JOB_PROGRESS_DELAY_MS", "how long a pass runs before it shows progress on a terminal (default 2000)"),
        ("STATE_DIRECTORY, XDG_STATE_HOME, HOME", "where the default store lives"),
        ("CREDENTIALS_DIRECTORY", "where systemd puts the credentials store-key and apns-key"),
        ("PGSERVICEFILE, PGPASSFILE", "libpq's service and password files, for a relay store on PostgreSQL"),
    ]

    /// The files `job` reads or writes.
    static let files: [(path: String, help: String)] = [
        ("$STATE_DIRECTORY/store.sqlite", "the store under systemd (with its -wal and -shm files, mode 0600)"),
        ("${XDG_STATE_HOME:-$HOME/.local/state}/background-jobs/store.sqlite", "the store otherwise"),
        ("<store>.key", "the store key, created with mode 0600 on first use when no other key is configured"),
        ("$CREDENTIALS_DIRECTORY/store-key", "the store key under systemd (LoadCredential=store-key:/etc/background-jobs/store-key)"),
        ("/etc/background-jobs/background-jobs.env", "the environment file the systemd units read"),
        ("DIR/<job>.prom", "the metrics each pass writes with --metrics-dir DIR"),
        ("BUILD_COMMIT", "beside the binary: the commit job version reports"),
    ]

    /// Where to read on, in this repository.
    static let seeAlso = "docs/README.md, docs/operator-guide.md, docs/reference/commands.md in the source repository; systemd.timer(5), crontab(5), sqlite3(1)"
}
