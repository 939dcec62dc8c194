/// What one module contributes to the executable: its migrations, jobs, commands and settings.
///
/// `main.swift` lists the modules; registering a new job is one line in its module's `jobs` array.
package struct Module: Sendable {
    package let name: String
    package let migrations: [Migration]
    /// The same tables in PostgreSQL's dialect, for the modules whose jobs run on a PostgreSQL store (the relay
    /// role); named apart from the SQLite ones (`<module>-pg-<nnn>-<what>`).
    package let postgresMigrations: [Migration]
    package let jobs: [any Job]
    package let commands: [any Command]
    package let settings: [SettingSpec]
    /// `job doctor` checks for this module's jobs.
    package let doctor: [DoctorGroup]
    /// What `maintain-store` prunes of this module's tables.
    package let upkeep: [StoreUpkeep]
    /// Where this module keeps values sealed under the store key (`StoreKeyCheck` checks a key against them).
    package let sealedSamples: [SealedSample]

    package init(name: String, migrations: [Migration] = [], postgresMigrations: [Migration] = [], jobs: [any Job] = [], commands: [any Command] = [],
                settings: [SettingSpec] = [], doctor: [DoctorGroup] = [], upkeep: [StoreUpkeep] = [], sealedSamples: [SealedSample] = []) {
        self.upkeep = upkeep
        self.sealedSamples = sealedSamples
        self.name = name
        self.migrations = migrations
        self.postgresMigrations = postgresMigrations
        self.jobs = jobs
        self.commands = commands
        self.settings = settings
        self.doctor = doctor
    }
}

/// Everything the executable knows: the modules' jobs, commands, settings and migrations, checked for clashes.
package struct Catalog: Sendable {
    package let modules: [Module]
    package let jobs: [any Job]
    package let commands: [any Command]
    package let settings: [SettingSpec]
    package let migrator: Migrator
    /// The migrations of a PostgreSQL store.
    package let postgresMigrator: Migrator
    /// Every module's sealed values (`SealedSample`).
    package let sealedSamples: [SealedSample]

    package init(modules: [Module]) {
        self.modules = modules
        // `maintain-store` runs every module's upkeep, so it is given them here rather than by one module.
        let upkeep = modules.flatMap(\.upkeep)
        jobs = modules.flatMap(\.jobs).map { job in (job as? MaintainStoreJob).map { $0.running(upkeep) } ?? job }
        // `job doctor` gathers every module's checks, so it is built here rather than by one module.
        commands = modules.flatMap(\.commands) + [DoctorCommand(groups: modules.flatMap(\.doctor))]
        settings = modules.flatMap(\.settings)
        sealedSamples = modules.flatMap(\.sealedSamples)
        var migrator = Migrator()
        for migration in modules.flatMap(\.migrations) { migrator.register(migration) }
        self.migrator = migrator
        var postgresMigrator = Migrator()
        for migration in modules.flatMap(\.postgresMigrations) { postgresMigrator.register(migration) }
        self.postgresMigrator = postgresMigrator
        let jobNames = jobs.map(\.name)
        precondition(Set(jobNames).count == jobNames.count, "two jobs share a name")
        let commandNames = commands.map(\.displayName)
        precondition(Set(commandNames).count == commandNames.count, "two commands share a name")
        precondition(Set(settings.map(\.key)).count == settings.count, "two settings share a key")
    }

    /// The migrator for a store of `engine`.
    package func migrator(for engine: Database.Engine) -> Migrator {
        engine == .postgresql ? postgresMigrator : migrator
    }

    /// The job named `name`.
    package func job(named name: String) -> (any Job)? { jobs.first { $0.name == name } }
}
