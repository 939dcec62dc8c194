import Runner

/// `job relay register`: the provisioning endpoint's store effect — add a token to a Device ID, or refresh
/// its registration time when it is already there.
struct RelayRegisterCommand: Command {
    let path = ["relay", "register"]
    let summary = "register an APNs token for a homeserver Device ID (re-registering refreshes it)"
    let options: [OptionSpec] = [
        .required("--device-id", "ID", "the homeserver's Syncthing Device ID"),
        .required("--apns-token", "HEX", "the iOS device's APNs token"),
        .value("--environment", "ENV", "production (default) or sandbox: which APNs endpoint the token belongs to"),
    ]

    func run(_ context: JobContext) throws {
        let deviceID = try RelayIdentifiers.requireDeviceID(context.arguments)
        let token = try RelayIdentifiers.requireToken(context.arguments)
        let environmentName = context.arguments.value("--environment") ?? APNsEnvironment.production.rawValue
        guard let environment = APNsEnvironment(rawValue: environmentName) else {
            throw JobError.usage("--environment must be production or sandbox")
        }
        let outcome = try Registry(context).register(deviceID: deviceID, token: token, environment: environment, now: context.nowMilliseconds)
        context.logger.info("relay.registered", ["outcome": .of(outcome), "environment": .of(environment)])
        if context.jsonOutput {
            context.printJSON(["status": .string(outcome.rawValue), "environment": .string(environment.rawValue)])
        } else {
            context.print(outcome == .created ? "registered (\(environment.rawValue))" : "registration refreshed (\(environment.rawValue))")
        }
    }
}

/// `job relay unregister`: removes one token from a Device ID (DELETE /provision).
struct RelayUnregisterCommand: Command {
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
    let path = ["relay", "show"]
    let summary = "registration counts: devices, tokens, pending pushes, invalid tokens"

    func run(_ context: JobContext) throws {
        let s = try Registry.summary(context.database)
        let fields: [(String, Int)] = [
            ("devices", s.devices), ("tokens", s.tokens), ("production_tokens", s.production), ("sandbox_tokens", s.sandbox),
            ("devices_awaiting_push", s.devicesAwaitingPush), ("tokens_awaiting_retry", s.tokensAwaitingRetry),
            ("tokens_reported_invalid", s.tokensMarkedInvalid), ("tokens_last_delivered", s.tokensDelivered),
        ]
        if context.jsonOutput {
            context.printJSON(.object(fields.map { ($0.0, .number($0.1)) }))
        } else {
            for (name, value) in fields { context.print("\(name.replacingOccurrences(of: "_", with: " ")): \(value)") }
        }
    }
}
