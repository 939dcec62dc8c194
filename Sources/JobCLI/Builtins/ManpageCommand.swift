/// `job manpage`: the man page in roff, generated from the command table.
struct ManpageCommand: BuiltinCommand {
    let name = "manpage"
    let summary = "print the man page (roff; view with man -l)"

    func run(_ context: BuiltinContext) throws {
        context.output.write(Completions(catalog: context.catalog).manpage())
    }
}
