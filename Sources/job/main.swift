import Foundation
import JobCLI
import Grants
import Relay
import Runner

// The command table: one line per module. A module lists its own jobs and commands.
let catalog = Catalog(modules: [
    RunnerModule.module,
    RelayModule.module,
    GrantsModule.module,
])

let code = CommandLineApp(catalog: catalog).run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code.rawValue)
