/// The runner's own contribution: its tables, `maintain-store` and the settings commands.
package enum RunnerModule {
    package static let module = Module(
        name: "runner",
        migrations: RunnerMigrations.all,
        postgresMigrations: RunnerPostgresMigrations.all,
        jobs: [MaintainStoreJob()],
        commands: [SettingsListCommand(), SettingsGetCommand(), SettingsSetCommand(), SettingsUnsetCommand()],
        settings: [
            .integer("runs.retention-days", default: 30, in: 1...3650, "days the run ledger keeps a pass before maintain-store prunes it"),
            .integer("runs.prune-batch-size", default: 1000, in: 1...1000, "ledger rows maintain-store deletes per transaction (smaller interleaves better with other writers)"),
        ],
        doctor: [StoreDoctorChecks.group])
}
