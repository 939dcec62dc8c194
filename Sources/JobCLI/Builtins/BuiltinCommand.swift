import Runner

/// A command of `job` itself (`job list`, `job status`), beside the modules' commands: it reads the command table
/// or the store's bookkeeping, and opens the store itself when it needs one.
///
/// `job help` is not one: it runs before the global options are resolved, so that help works whatever they say.
protocol BuiltinCommand: Sendable {
    /// The word after `job`.
    var name: String { get }
    /// One line for help.
    var summary: String { get }
    /// What follows the name in a usage line (`[--write DIR]`), empty when nothing does.
    var usage: String { get }
    var options: [OptionSpec] { get }
    var positionals: [PositionalSpec] { get }
    /// Runs the command; failures are thrown as `JobError`.
    func run(_ context: BuiltinContext) throws
}

extension BuiltinCommand {
    var usage: String { "" }
    var options: [OptionSpec] { [] }
    var positionals: [PositionalSpec] { [] }
}

/// What a built-in command runs with: the command table, the resolved global options and its own arguments.
struct BuiltinContext {
    let catalog: Catalog
    let invocation: Invocation
    let arguments: Arguments

    var output: TextOutput { invocation.output }
}
