import Foundation
import Runner

/// `job doctor`'s `send-wakeups` group: the APNs provider configuration loads (key, ids, topic, endpoints).
enum APNsPreflight {
    static let group = DoctorGroup(
        name: "send-wakeups",
        notConfigured: { context in
            let anySet = APNsConfiguration.environmentKeys.contains { context.env($0.name) != nil }
            let credential = context.env("CREDENTIALS_DIRECTORY").map { FileManager.default.fileExists(atPath: $0 + "/apns-key") } ?? false
            return anySet || credential ? nil : "no APNS_* variable or apns-key credential is set"
        },
        checks: [
            DoctorCheck(name: "apns-config") { session in
                do {
                    let configuration = try APNsConfiguration(environment: { session.context.env($0) })
                    return .pass("the provider key loads; key id, team id and topic are usable\(configuration.caFile == nil ? "" : "; extra CA file readable")")
                } catch let error as JobError { return .fail(error) } catch { return .fail("the APNs configuration cannot be read", .configuration) }
            },
        ])
}
