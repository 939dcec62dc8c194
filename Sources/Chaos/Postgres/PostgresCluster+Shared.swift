import Foundation
import Synchronization

/// One cluster per test process, started on first use and stopped at exit (or by its watchdog if the process
/// dies): tests that only need a database share it and each create their own (`createDatabase()`); tests that
/// stop, restart or kill the server start their own cluster.
extension PostgresCluster {
    private static let sharedSlot = Mutex<Result<PostgresCluster, PostgresClusterFailure>?>(nil)

    /// The process's shared cluster; a failed start is remembered and thrown again to every later caller.
    package static func shared() throws -> PostgresCluster {
        try sharedSlot.withLock { slot in
            if slot == nil {
                do {
                    slot = .success(try start())
                    atexit { PostgresCluster.stopShared() }
                } catch let failure as PostgresClusterFailure {
                    slot = .failure(failure)
                } catch {
                    slot = .failure(PostgresClusterFailure("\(error)"))
                }
            }
            return try slot!.get()
        }
    }

    private static func stopShared() {
        sharedSlot.withLock { slot in try? slot?.get().stop() }
    }
}
