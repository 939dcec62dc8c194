import Runner

/// `job doctor`'s `serve-relay` group: the StoreKit configuration serve-relay verifies provisioning with loads, and
/// which root it trusts (the built-in Apple Root CA - G3, or a replacement that belongs to tests and staging only).
enum StoreKitPreflight {
    static let group = DoctorGroup(
        name: "serve-relay",
        notConfigured: { context in
            StoreKitConfiguration.environmentKeys.contains { context.env($0.name) != nil } ? nil : "no STOREKIT_* variable is set"
        },
        checks: [
            DoctorCheck(name: "storekit-config") { session in
                do {
                    let configuration = try StoreKitConfiguration(environment: session.context.environment)
                    let products = configuration.productIDs.count
                    let environments = configuration.environments.sorted().joined(separator: ", ")
                    let root = configuration.rootReplaced ? "the root from STOREKIT_ROOT_CA_FILE (tests and staging only)" : "the built-in Apple Root CA - G3"
                    return .pass("bundle id set, \(products) product id\(products == 1 ? "" : "s"), environments \(environments); trusts \(root)")
                } catch let error as JobError { return .fail(error) } catch { return .fail("the StoreKit configuration cannot be read", .configuration) }
            },
        ])
}
