import Foundation
import Grants
import JobCLI
import MeshMedia
import Relay
import Runner
import TokenPool

// The command table: one line per module. A module lists its own jobs and commands.
let catalog = Catalog(modules: [
    RunnerModule.module,
    TokenPoolModule.module,
    RelayModule.module,
    MeshMediaModule.module,
    GrantsModule.module,
])

let code = CommandLineApp(catalog: catalog).run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code.rawValue)
