import Cryptography
import Store

/// Bulk registrations for benchmarks and load tests: the same rows `job relay register` writes (sealed
/// tokens, blind-indexed Device IDs), many per transaction, plus optional recorded APNs results.
package enum RegistrationSeeder {
    /// A recorded result to give a seeded token.
    package enum SeededResult: Sendable {
        case none
        case delivered
        /// `BadDeviceToken` recorded after the registration: `clean-tokens` removes it.
        case badDeviceToken
        /// 410 `Unregistered` with APNs's timestamp after the registration: removed.
        case unregisteredAfterRegistration
        /// 410 `Unregistered` with APNs's timestamp before the registration (provisioned again): kept.
        case unregisteredBeforeRegistration
    }

    /// Inserts `devices` Device IDs with `tokensPerDevice` tokens each. `deviceID(i)` and `token(i, j)` give
    /// the identifiers; `result(i, j)` the recorded result. Triggered devices get `triggeredAt`.
    package static func seed(database: Database, storeKey: SecretBytes, devices: Int, tokensPerDevice: Int, registeredAt: Int64,
                            triggeredAt: Int64?, deviceID: (Int) -> String, token: (Int, Int) -> String,
                            result: (Int, Int) -> SeededResult, rowsPerTransaction: Int = 50_000) throws {
        let keyring = try StoreKeyring(storeKey: storeKey)
        let registry = Registry(database: database, keyring: keyring)
        var device = 0
        while device < devices {
            let end = min(devices, device + max(1, rowsPerTransaction / max(1, tokensPerDevice)))
            try database.write { db in
                for i in device..<end {
                    try db.execute("INSERT INTO relay_devices (device_index, created_at, last_trigger_at) VALUES (?, ?, ?)",
                                   [registry.deviceIndex(deviceID(i)), registeredAt, triggeredAt])
                    let deviceRow = db.lastInsertRowID
                    for j in 0..<tokensPerDevice {
                        let value = token(i, j)
                        let sealed = try keyring.seal(Array(value.utf8), purpose: Registry.tokenPurpose)
                        let (status, reason, invalidatedAt): (Int?, String?, Int64?)
                        switch result(i, j) {
                        case .none: (status, reason, invalidatedAt) = (nil, nil, nil)
                        case .delivered: (status, reason, invalidatedAt) = (200, nil, nil)
                        case .badDeviceToken: (status, reason, invalidatedAt) = (400, "BadDeviceToken", nil)
                        case .unregisteredAfterRegistration: (status, reason, invalidatedAt) = (410, "Unregistered", registeredAt + 1_000)
                        case .unregisteredBeforeRegistration: (status, reason, invalidatedAt) = (410, "Unregistered", registeredAt - 1_000)
                        }
                        try db.execute("""
                            INSERT INTO relay_tokens (device_id, token_index, token_sealed, environment, registered_at, result_status, result_reason, result_at, invalidated_at)
                            VALUES (?, ?, ?, 'production', ?, ?, ?, ?, ?)
                            """, [deviceRow, registry.tokenIndex(value), sealed, registeredAt, status, reason, status == nil ? nil : registeredAt + 2_000, invalidatedAt])
                    }
                }
            }
            device = end
        }
    }
}
