import Foundation
import Runner

/// `job doctor`'s `token-pool` group: can this machine mint, is there a credential for today, does the pool pass
/// the cross-language contract, and can prefetch reach its configuration. Applies where an identity is stored or
/// `ENDORSER_URL` is set. Details are fixed text and counts only.
enum PoolDoctor {
    static let group = DoctorGroup(
        name: "token-pool",
        notConfigured: { context in
            let identities: Int = (try? context.database.scalar("SELECT count(*) FROM token_pool_identities")) ?? 0
            return identities > 0 || context.env("ENDORSER_URL") != nil ? nil : "no identity is stored and ENDORSER_URL is not set"
        },
        checks: [
            DoctorCheck(name: "pool-identity") { session in
                let context = session.context
                do {
                    let identities = IdentityStore(database: context.database)
                    guard let active = try identities.active() else { return .fail(TokenPoolErrors.noIdentity) }
                    guard active.method == .ethr else { return .fail(TokenPoolErrors.unsupportedIdentity.message, .configuration) }
                    _ = try identities.openKey(of: active, keyring: try context.keyring())
                    return .pass("the active did:ethr identity's key opens")
                } catch let error as JobError { return .fail(error.message, .configuration) } catch {
                    return .fail("the identities cannot be read from the store", .cannotCreate)
                }
            },
            DoctorCheck(name: "pool-today") { session in
                let context = session.context
                let store = PoolStore(database: context.database)
                let nowSeconds = PoolCalendar.floorDivide(context.nowMilliseconds, 1000)
                let today = PoolCalendar.epochDay(unixSeconds: nowSeconds)
                guard let live = try? store.live() else { return .fail("there is no pool: prefetch has no credential; run mint-pool", .configuration) }
                guard live.plan.covers(today) else {
                    return .fail("the pool does not cover today: prefetch has no credential; run mint-pool", .configuration)
                }
                return .pass("today uses slot \(live.plan.slot(forDay: today)!); \(live.plan.lastDay - today) more days covered")
            },
            DoctorCheck(name: "pool-verify") { session in
                let context = session.context
                let store = PoolStore(database: context.database)
                do {
                    let snapshot = try context.database.read { _ -> (PoolStore.LivePool, [PoolStore.SlotRecord], String?)? in
                        guard let live = try store.live() else { return nil }
                        return (live, try store.slots(of: live.generationID), try IdentityStore(database: context.database).active()?.did)
                    }
                    guard let (live, slots, did) = snapshot, let did else { return .skip("no pool or no identity") }
                    let tokens = try PoolOutput.openTokens(slots, of: live, context)
                    let report = PoolVerifier.verify(tokens: tokens, plan: live.plan, issuer: did, recorded: slots.map(\.window),
                                                     nowSeconds: PoolCalendar.floorDivide(context.nowMilliseconds, 1000))
                    let failed = report.coveredDays.filter { !$0.passed }.count
                    return report.passed ? .pass("\(report.coveredDays.count) days verified, \(report.uncoveredDaysChecked) uncovered days hold no credential")
                                         : .fail("\(failed) of \(report.coveredDays.count) days fail; run 'job pool verify' for the report", .configuration)
                } catch let error as JobError { return .fail(error.message, .configuration) } catch {
                    return .fail("the pool cannot be read from the store", .cannotCreate)
                }
            },
            DoctorCheck(name: "prefetch-config") { session in
                let context = session.context
                guard let url = context.env("ENDORSER_URL") else { return .fail(TokenPoolErrors.endorserURLMissing) }
                if let problem = EndorserURL.problem(url) { return .fail(problem) }
                guard let afterID = try? context.settings.string(TokenPoolSettings.afterID), !afterID.isEmpty else {
                    return .fail("prefetch.after-id is not set", .configuration)
                }
                let plans = (try? context.settings.string(TokenPoolSettings.planIDs)).map { $0.isEmpty ? 0 : $0.split(separator: ",").count } ?? 0
                return .pass("ENDORSER_URL and prefetch.after-id are set; \(plans) plan ids")
            },
        ])
}
