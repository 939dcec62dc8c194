// job-bench <scenario> [options]: parses the command line and dispatches through `scenarios`.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments.dropFirst()

func printUsage() {
    print("usage: job-bench <scenario> [options]")
    print("scenarios:")
    for name in scenarios.keys.sorted() { print("  \(name)") }
    print("run `job-bench <scenario> --help` for a scenario's options")
}

guard let name = arguments.first, name != "--help", name != "-h", name != "help" else {
    printUsage()
    exit(arguments.isEmpty ? 64 : 0)
}
guard let scenario = scenarios[name] else {
    FileHandle.standardError.write(Data("job-bench: unknown scenario\n".utf8))
    printUsage()
    exit(64)
}
do {
    try scenario(arguments.dropFirst())
} catch let error as BenchUsageError {
    FileHandle.standardError.write(Data("job-bench \(name): \(error.message)\n".utf8))
    exit(64)
} catch {
    FileHandle.standardError.write(Data("job-bench \(name): \(error)\n".utf8))
    exit(70)
}
