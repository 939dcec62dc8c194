import Runner

/// `job completions bash|zsh|fish`: a shell completion script generated from the command table.
struct CompletionsCommand: BuiltinCommand {
    let name = "completions"
    let summary = "print a shell completion script generated from the command table"
    let usage = "bash|zsh|fish"
    let positionals = [PositionalSpec("SHELL", "bash, zsh or fish")]

    func run(_ context: BuiltinContext) throws {
        let completions = Completions(catalog: context.catalog)
        switch context.arguments.positional(0) {
        case "bash": context.output.write(completions.bash())
        case "zsh": context.output.write(completions.zsh())
        case "fish": context.output.write(completions.fish())
        default: throw JobError.usage("completions are for bash, zsh or fish")
        }
    }
}
