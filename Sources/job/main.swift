import Foundation
import Grants
import Homeserver
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
    // After the relay module: its first migration creates the helper's state table (see HomeserverMigrations).
    HomeserverModule.module,
    MeshMediaModule.module,
    GrantsModule.module,
])

// Bytes that are not UTF-8 would be silently rewritten on the way into a String: refuse them instead (64).
func refuse(_ failure: JobError) -> Never {
    let environment = ProcessInfo.processInfo.environment
    let line = Logger.failureLine(command: nil, failure, format: CommandLineApp.logFormat(Array(CommandLine.arguments.dropFirst()), environment),
                                  priorityPrefix: Logger.stderrIsJournal(environment: environment), usageHint: nil)
    FileHandle.standardError.write(Data(line.utf8))
    exit(failure.exitCode.rawValue)
}
if let position = ProcessStart.nonUTF8ArgumentPositions().first {
    refuse(JobError.usage("argument \(position) is not valid UTF-8; paths and values must be UTF-8"))
}
if let name = ProcessStart.nonUTF8Environment(["JOB_STORE", "JOB_NOW", "JOB_METRICS_DIR", "JOB_STORE_KEY_FILE", "STATE_DIRECTORY", "XDG_STATE_HOME", "HOME"]).first {
    refuse(JobError.configuration("environment", "\(name) is not valid UTF-8; paths and values must be UTF-8"))
}

let code = CommandLineApp(catalog: catalog).run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code.rawValue)
