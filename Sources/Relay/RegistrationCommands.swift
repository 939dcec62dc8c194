import Runner

/// `job relay register`: the provisioning endpoint's store effect — add a token to a Device ID, or refresh
/// its registration time when it is already there.
struct RelayRegisterCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["relay", "register"]
    let summary = "register an APNs token for a homeserver Device ID (re-registering refreshes it)"
    let options: [OptionSpec] = [
        .required("--device-id", "ID", "the homeserver's Syncthing Device ID"),
        .required("--apns-token", "HEX", "the iOS device's APNs token"),
        .value("--environment", "ENV", "production (default) or sandbox: which APNs endpoint the token belongs to"),
        .value("--expires", "TIME", "operator-provisioned until TIME (RFC 3339 or @unix seconds); default: until unregistered"),
        .value("--legacy-transaction-id", "N", "import a registration from before signed transactions, keyed by its numeric original transaction id"),
    ]
    let discussion = """
        The Device ID becomes operator-provisioned: its triggers are let through until it is unregistered or until
        --expires. A Device ID that already holds a verified StoreKit subscription keeps it. With
        --legacy-transaction-id the registration is a legacy one instead: older apps may refresh exactly it with the
        numeric id until 2026-10-31.
        """

    func run(_ context: JobContext) throws {
        let deviceID = try RelayIdentifiers.requireDeviceID(context.arguments)
        let token = try RelayIdentifiers.requireToken(context.arguments)
        let environmentName = context.arguments.value("--environment") ?? APNsEnvironment.production.rawValue
        guard let environment = APNsEnvironment(rawValue: environmentName) else {
            throw JobError.usage("--environment must be production or sandbox")
        }
        let expires = try context.arguments.value("--expires").map { text -> Int64 in
            guard let date = Clock.parse(text) else { throw JobError.usage("--expires needs RFC 3339 or @<unix seconds>") }
            return date.unixMilliseconds
        }
        let legacy = context.arguments.value("--legacy-transaction-id")
        if let legacy, !RelayAPI.isLegacyID(legacy) { throw JobError.usage("--legacy-transaction-id needs the numeric original transaction id") }
        if legacy != nil && expires != nil { throw JobError.usage("--expires and --legacy-transaction-id cannot be combined") }
        let (outcome, kind) = try FrontDoorStore(database: context.database, keyring: context.keyring())
            .registerByOperator(deviceID: deviceID, token: token, environment: environment, expiresAt: expires, legacyTransactionID: legacy,
                                now: context.nowMilliseconds)
        context.logger.info("relay.registered", ["outcome": .of(outcome), "environment": .of(environment)])
        if context.jsonOutput {
            context.printJSON(["status": .string(outcome.rawValue), "environment": .string(environment.rawValue), "entitlement": .string(kind.rawValue)])
        } else {
            context.print(outcome == .created ? "registered (\(environment.rawValue), \(kind.rawValue))" : "registration refreshed (\(environment.rawValue), \(kind.rawValue))")
        }
    }
}

/// `job relay unregister`: removes one token from a Device ID (DELETE /provision).
struct RelayUnregisterCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["relay", "unregister"]
    let summary = "remove an APNs token from a homeserver Device ID"
    let options: [OptionSpec] = [
        .required("--device-id", "ID", "the homeserver's Syncthing Device ID"),
        .required("--apns-token", "HEX", "the APNs token to remove"),
    ]

    func run(_ context: JobContext) throws {
        let deviceID = try RelayIdentifiers.requireDeviceID(context.arguments)
        let token = try RelayIdentifiers.requireToken(context.arguments)
        let removed = try Registry(context).unregister(deviceID: deviceID, token: token)
        context.logger.info("relay.unregistered", ["removed": .bool(removed)])
        if context.jsonOutput {
            context.printJSON(["status": .string(removed ? "deprovisioned" : "not-registered")])
        } else {
            context.print(removed ? "deprovisioned" : "not registered; nothing changed")
        }
    }
}

/// `job relay trigger`: an accepted trigger as the relay front-end records it — the observation time for
/// the Device ID, which `send-wakeups` turns into pushes.
struct RelayTriggerCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["relay", "trigger"]
    let summary = "record an accepted wake-up trigger for a homeserver Device ID"
    let options: [OptionSpec] = [.required("--device-id", "ID", "the homeserver's Syncthing Device ID")]
    let discussion = "A Device ID without any registration is refused (exit 65) and nothing is recorded, as the front-end refuses it."

    func run(_ context: JobContext) throws {
        let deviceID = try RelayIdentifiers.requireDeviceID(context.arguments)
        guard try Registry(context).recordTrigger(deviceID: deviceID, now: context.nowMilliseconds) else {
            throw JobError.badInput("not-registered", "no registration for this Device ID; the trigger was not recorded")
        }
        context.logger.info("relay.trigger_observed")
        if context.jsonOutput { context.printJSON(["status": "accepted"]) } else { context.print("accepted") }
    }
}

/// `job relay show`: registration counts (never identifiers or tokens).
struct RelayShowCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["relay", "show"]
    let summary = "registration counts: devices, tokens, pending pushes, invalid tokens"

    func run(_ context: JobContext) throws {
        let s = try Registry.summary(context.database, trailingPush: try WakeupDebounce.trailingPush(context.env))
        let fields: [(String, Int)] = [
            ("devices", s.devices), ("tokens", s.tokens), ("production_tokens", s.production), ("sandbox_tokens", s.sandbox),
            ("devices_awaiting_push", s.devicesAwaitingPush), ("tokens_awaiting_retry", s.tokensAwaitingRetry),
            ("tokens_reported_invalid", s.tokensMarkedInvalid), ("tokens_last_delivered", s.tokensDelivered),
        ] + (try Self.entitlementCounts(context.database))
        if context.jsonOutput {
            context.printJSON(.object(fields.map { ($0.0, .number($0.1)) }))
        } else {
            for (name, value) in fields { context.print("\(name.replacingOccurrences(of: "_", with: " ")): \(value)") }
        }
    }

    /// Devices by entitlement kind: operator-provisioned, verified StoreKit, legacy, and none.
    static func entitlementCounts(_ database: Database) throws -> [(String, Int)] {
        try database.read { db in
            var counts: [(String, Int)] = []
            for kind in ["operator", "storekit", "legacy"] {
                counts.append(("\(kind)_devices", try db.scalar("SELECT count(*) FROM relay_entitlements WHERE kind = ?", [kind]) ?? 0))
            }
            counts.append(("devices_without_entitlement", try db.scalar("""
                SELECT count(*) FROM relay_devices d WHERE NOT EXISTS (SELECT 1 FROM relay_entitlements e WHERE e.device_id = d.id)
                """) ?? 0))
            return counts
        }
    }
}
