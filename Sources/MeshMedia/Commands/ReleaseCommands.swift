import Foundation
import Runner
import Store

/// `job mesh builds add`: records a client build for the 0x09 alias release criterion.
struct MeshBuildsAddCommand: Command {
    let path = ["mesh", "builds", "add"]
    let summary = "record a client build: platform, version, channel, whether it emitted 0x09, and when it expires"
    let options: [OptionSpec] = [
        .required("--platform", "ios|android", "the client platform"),
        .required("--version", "X.Y.Z", "the build's version (dotted numbers)"),
        .required("--channel", "CHANNEL", "testflight, internal, beta or release"),
        .flag("--emitted-alias", "this build sent private files as 0x09"),
        .value("--expires", "TIME", "when the build expires (RFC 3339 or @unix-seconds); omit if it does not"),
    ]
    static let platforms = ["ios", "android"]
    static let channels = ["testflight", "internal", "beta", "release"]

    func run(_ context: JobContext) throws {
        let platform = try context.arguments.required("--platform")
        guard Self.platforms.contains(platform) else { throw JobError.usage("--platform must be ios or android") }
        let version = try context.arguments.required("--version")
        guard Version.parse(version) != nil else { throw JobError.usage("--version must be dotted numbers such as 1.4.2") }
        let channel = try context.arguments.required("--channel")
        guard Self.channels.contains(channel) else { throw JobError.usage("--channel must be one of \(Self.channels.joined(separator: ", "))") }
        var expiresAt: Int64?
        if let text = context.arguments.value("--expires") {
            guard let date = Clock.parse(text) else { throw JobError.usage("--expires must be RFC 3339 or @unix-seconds") }
            expiresAt = date.unixMilliseconds
        }
        let emitted = context.arguments.flag("--emitted-alias")
        try context.database.write { db in
            _ = try db.execute("""
                INSERT INTO mesh_builds (platform, version, channel, emitted_alias, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (platform, version, channel) DO UPDATE SET emitted_alias = excluded.emitted_alias, expires_at = excluded.expires_at
                """, [platform, version, channel, emitted, expiresAt, context.nowMilliseconds])
        }
        if context.jsonOutput {
            context.printJSON(["platform": .string(platform), "version": .string(version), "channel": .string(channel),
                               "emitted_alias": .bool(emitted), "expires_at": .optional(expiresAt)])
        } else {
            context.print("build \(platform) \(version) (\(channel)) recorded")
        }
    }
}

/// `job mesh builds list`: the recorded builds.
struct MeshBuildsListCommand: Command {
    let path = ["mesh", "builds", "list"]
    let summary = "list recorded client builds and the minimum-supported-client policy"

    func run(_ context: JobContext) throws {
        let (builds, policy) = try AliasRecords.load(context.database)
        if context.jsonOutput {
            context.printJSON(["builds": .array(builds.map { build in
                ["platform": .string(build.platform), "version": .string(build.version), "channel": .string(build.channel),
                 "emitted_alias": .bool(build.emittedAlias), "expires_at": .optional(build.expiresAt)]
            }), "policy": .object(policy.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })])
            return
        }
        if builds.isEmpty { context.print("no builds recorded") }
        for build in builds {
            let expiry = build.expiresAt.map { Date(unixMilliseconds: $0).rfc3339 } ?? "no expiry"
            context.print("\(build.platform) \(build.version) \(build.channel)\(build.emittedAlias ? " emitted-0x09" : "") \(expiry)")
        }
        for (platform, minimum) in policy.sorted(by: { $0.key < $1.key }) { context.print("policy: \(platform) minimum \(minimum)") }
    }
}

/// `job mesh policy set`: the minimum supported client version per platform.
struct MeshPolicySetCommand: Command {
    let path = ["mesh", "policy", "set"]
    let summary = "set the minimum supported client version for a platform"
    let options: [OptionSpec] = [
        .required("--platform", "ios|android", "the client platform"),
        .required("--min-version", "X.Y.Z", "builds below this version are no longer supported"),
    ]

    func run(_ context: JobContext) throws {
        let platform = try context.arguments.required("--platform")
        guard MeshBuildsAddCommand.platforms.contains(platform) else { throw JobError.usage("--platform must be ios or android") }
        let minimum = try context.arguments.required("--min-version")
        guard Version.parse(minimum) != nil else { throw JobError.usage("--min-version must be dotted numbers such as 1.5.0") }
        try context.database.write { db in
            _ = try db.execute("""
                INSERT INTO mesh_policy (platform, min_version, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (platform) DO UPDATE SET min_version = excluded.min_version, updated_at = excluded.updated_at
                """, [platform, minimum, context.nowMilliseconds])
        }
        if context.jsonOutput { context.printJSON(["platform": .string(platform), "min_version": .string(minimum)]) }
        else { context.print("policy: \(platform) minimum supported version \(minimum)") }
    }
}
