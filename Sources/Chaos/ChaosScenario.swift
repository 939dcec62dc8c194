/// One job under the chaos harness: how to seed its store, run its passes, and check its invariants
/// against a model computed from the seed data alone (never by calling the job's own rules).
package protocol ChaosScenario: AnyObject {
    /// The job's name (`job <name>`).
    var job: String { get }
    /// The round's store file.
    var storePath: String { get }
    /// Seeds the template store (called once).
    func prepare() throws
    /// Starts round `round` on a fresh copy of the template.
    func beginRound(_ round: Int) throws
    /// The arguments of the round's next pass (each call is one pass: killed or run to the end).
    /// `settling` is true for the passes after the kills, which run undisturbed.
    func nextPassArguments(settling: Bool, random: inout ChaosRandom) -> [String]
    /// After an undisturbed pass with these counts: true when the round's work is all done.
    func isSettled(counts: [String: Int]) -> Bool
    /// What must hold right after a kill, before any rerun (readers' view of a half-done pass).
    func afterKill() throws -> [String]
    /// The invariants after a settled round; each violation as one line.
    func violations() throws -> [String]
    /// Settings the passes need beyond the base environment (a peer's endpoint); read after `prepare`.
    var passEnvironment: [String: String] { get }
    /// Releases what `prepare` started (peers).
    func finish()
}

extension ChaosScenario {
    package var passEnvironment: [String: String] { [:] }
    package func afterKill() throws -> [String] { [] }
    package func finish() {}
}
