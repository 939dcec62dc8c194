import Chaos
import Foundation
import Store
import Testing
import TestSupport

/// The store the operator meant: every libpq `key=value` string is a PostgreSQL store, whatever its first keyword;
/// a file path holding `=` needs `file:` or `./`; anything that is neither a clean path nor a valid connection
/// string is refused with 64, before anything is created, and the refusal never repeats the value.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct StoreLocationTests {
    @Test func aConnectionStringStartingWithAnyKeywordOrASpaceReachesPostgreSQLNotAnSQLiteFile() throws {
        let target = try PostgresCluster.shared().createDatabase(label: "location")
        let home = TemporaryDirectory("store-location")
        let location = " application_name=relay-test sslmode=disable " + target.conninfo
        try String(repeating: "6b", count: 32).write(toFile: home.file("store-key"), atomically: true, encoding: .utf8)
        chmod(home.file("store-key"), 0o600)
        let env = JobProcess.environment(home: home.path, ["JOB_STORE": location, "JOB_STORE_KEY_FILE": home.file("store-key")])
        let migrate = try JobProcess.run(["migrate"], environment: env)
        defer { try? FileManager.default.removeItem(atPath: FileManager.default.currentDirectoryPath + "/" + location) }
        #expect(migrate.exitCode == 0, "\(migrate.stderr)")
        let tables: Int = try Database(path: target.url).scalar("SELECT count(*) FROM information_schema.tables WHERE table_name = 'relay_devices'") ?? 0
        #expect(tables == 1, "migrated on the PostgreSQL database")
        #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/" + location), "no SQLite file named after the string")
    }

    @Test func aLocationThatIsNeitherACleanPathNorAValidConnectionStringIsRefusedWith64() throws {
        let home = TemporaryDirectory("store-location-bad")
        let refused = ["relay=1.sqlite", home.file("a=b.sqlite"), "password=s3cret host='unterminated", "  " + home.file("spaced.sqlite"),
                       home.file("line\nbreak.sqlite"), "file:"]
        for location in refused {
            let result = try JobProcess.run(["--store", location, "migrate"], environment: JobProcess.environment(home: home.path))
            #expect(result.exitCode == 64, "\(result.stderr)")
            let first = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
            #expect(first.hasPrefix("job: the store "), "one line saying why: \(result.stderr)")
            #expect(!result.stderr.contains("s3cret") && !result.stderr.contains(home.path) && !result.stderr.contains("relay=1"), "never the value: \(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.path).isEmpty, "nothing created")
    }

    @Test func aFilePathHoldingAnEqualsSignIsTakenWithFileColonOrDotSlash() throws {
        let home = TemporaryDirectory("store-location-file")
        let explicit = try JobProcess.run(["--store", "file:" + home.file("a=b.sqlite"), "migrate"], environment: JobProcess.environment(home: home.path))
        #expect(explicit.exitCode == 0, "\(explicit.stderr)")
        #expect(FileManager.default.fileExists(atPath: home.file("a=b.sqlite")))
        // `./` and then up to the root from the working directory the process inherits.
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        let relativePath = "./" + String(repeating: "../", count: depth) + home.file("c=d.sqlite").dropFirst()
        let relative = try JobProcess.run(["--store", relativePath, "migrate"], environment: JobProcess.environment(home: home.path))
        #expect(relative.exitCode == 0, "\(relative.stderr)")
        #expect(FileManager.default.fileExists(atPath: home.file("c=d.sqlite")))
    }
}
