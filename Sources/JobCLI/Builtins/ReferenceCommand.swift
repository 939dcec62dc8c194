/// `job reference`: the command reference in Markdown, which docs/reference/commands.md is a copy of.
struct ReferenceCommand: BuiltinCommand {
    let name = "reference"
    let summary = "print the command reference (Markdown, docs/reference/commands.md)"

    func run(_ context: BuiltinContext) throws {
        context.output.write(CommandReference(catalog: context.catalog).markdown())
    }
}
