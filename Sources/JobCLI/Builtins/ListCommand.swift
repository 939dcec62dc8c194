import Runner

/// `job list`: every job with a one-line description (with `--json`, its schedule too).
struct ListCommand: BuiltinCommand {
    let name = "list"
    let summary = "every job with a one-line description"

    func run(_ context: BuiltinContext) throws {
        let jobs = context.catalog.jobs
        if context.invocation.jsonOutput {
            let rows: [JSON] = jobs.map {
                ["name": .string($0.name), "summary": .string($0.summary),
                 "schedule": ["on_calendar": .string($0.schedule.onCalendar), "cron": .string($0.schedule.cron),
                              "randomized_delay_seconds": .number($0.schedule.randomizedDelaySeconds)]]
            }
            context.output.write(JSON.array(rows).rendered() + "\n")
            return
        }
        let width = jobs.map(\.name.count).max() ?? 0
        for job in jobs {
            context.output.write(job.name.padded(to: width + 2) + job.summary + "\n")
        }
    }
}
