import Store

/// Maps store failures to the documented exit codes and messages a person can act on.
package enum StoreFailure {
    package static func jobError(for error: Error) -> JobError {
        if let error = error as? JobError { return error }
        if let error = error as? NewerSchemaError {
            return JobError.store("store-newer-schema", error.description)
        }
        guard let error = error as? StoreError else {
            return JobError.internal("unexpected error: \(type(of: error))")
        }
        switch error.kind {
        case .notADatabase:
            return JobError.store("store-not-a-database", "the store file is not an SQLite database; it was left untouched — move it aside or choose another --store")
        case .corrupt:
            return JobError.store("store-corrupt", "the store file is damaged (SQLite reports corruption); it was left untouched — restore a backup or move it aside")
        case .readOnly:
            return JobError.store("store-read-only", "the store is read-only; check the file's and folder's permissions")
        case .cannotOpen:
            return JobError.store("store-cannot-open", "cannot open the store; check the path and the folder's permissions")
        case .full:
            return JobError.store("store-disk-full", "the disk holding the store is full; nothing was half-written, free space and run again")
        case .io:
            return JobError.store("store-io", "the store could not be read or written (I/O error); check the disk")
        case .busy:
            return JobError.transient("store-busy", "the store stayed locked by another process beyond the busy timeout; the next pass retries")
        case .interrupted:
            return JobError.cancelled
        case .unavailable:
            return JobError.unavailable("store-unavailable", "the PostgreSQL store cannot be reached (\(error.message)); check --store or JOB_STORE and that the server runs")
        case .permissionDenied:
            return JobError.store("store-permission-denied", "the PostgreSQL role lacks a privilege on the store, or does not own a table a migration changes; grant it, or migrate as the owner")
        case .readOnlyServer:
            return JobError.transient("store-server-read-only", "the PostgreSQL server accepts no writes (a standby, or a failover under way); nothing was written, and the next pass retries")
        case .statementCancelled:
            return JobError.transient("store-statement-cancelled", "the PostgreSQL server cancelled a statement (statement_timeout, or an operator's cancel); it was rolled back, and the next pass retries")
        case .connectionLost:
            return JobError.transient("store-connection-lost", "the connection to the PostgreSQL store was lost; what was not committed was rolled back, and the next pass retries")
        case .newerSchema:
            return JobError.store("store-newer-schema", error.message)
        case .constraint, .misuse, .other:
            return JobError.internal("store error \(error.sqlState ?? String(error.extendedCode)): \(error.message)")
        }
    }
}
