import Runner

/// `job deployment [--write DIR]`: the systemd units, the env example and the crontab for the job table, printed or
/// written into a folder.
struct DeploymentCommand: BuiltinCommand {
    let name = "deployment"
    let summary = "write the systemd units, env example and crontab for the job table (--write DIR)"
    let usage = "[--write DIR]"
    let options: [OptionSpec] = [.value("--write", "DIR", "")]

    func run(_ context: BuiltinContext) throws {
        let deployment = Deployment(catalog: context.catalog)
        let json = context.invocation.jsonOutput
        if let directory = context.arguments.value("--write") {
            do { try deployment.write(to: directory) } catch {
                throw JobError.configuration("deployment-write", "cannot write the deployment files; check the folder exists and is writable")
            }
            if json {
                context.output.write(JSON.object([("written", .array(deployment.files().map { .string($0.path) }))]).rendered() + "\n")
            } else {
                context.output.write("wrote \(deployment.files().count) files\n")
            }
        } else if json {
            let files: [JSON] = deployment.files().map { ["path": .string($0.path), "content": .string($0.content)] }
            context.output.write(JSON.object([("files", .array(files))]).rendered() + "\n")
        } else {
            for file in deployment.files() { context.output.write("==> \(file.path) <==\n\(file.content)\n") }
        }
    }
}
