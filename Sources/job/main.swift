import Foundation
import Grants
import JobCLI
import MeshMedia
import Relay
import Runner
import TokenPool

ProcessStart.exitOnTerminationUntilAPassBegins()

// The command table: one line per module. A module lists its own jobs and commands.
let catalog = Catalog(modules: [
    RunnerModule.module,
    TokenPoolModule.module,
    RelayModule.module,
    MeshMediaModule.module,
    GrantsModule.module,
])

// Bytes that are not UTF-8 would be silently rewritten on the way into a String: refuse them instead (64).
if let position = ProcessStart.nonUTF8ArgumentPositions().first {
    FileHandle.standardError.write(Data("job: argument \(position) is not valid UTF-8; paths and values must be UTF-8\n".utf8))
    exit(ExitCode.usage.rawValue)
}
if let name = ProcessStart.nonUTF8Environment(["JOB_STORE", "JOB_NOW", "JOB_METRICS_DIR", "JOB_STORE_KEY_FILE", "STATE_DIRECTORY", "XDG_STATE_HOME", "HOME"]).first {
    FileHandle.standardError.write(Data("job: \(name) is not valid UTF-8; paths and values must be UTF-8\n".utf8))
    exit(ExitCode.configuration.rawValue)
}

let code = CommandLineApp(catalog: catalog).run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code.rawValue)
