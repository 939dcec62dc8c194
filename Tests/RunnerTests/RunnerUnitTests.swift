import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Runner

@Suite(.timeLimit(.minutes(15))) struct ClockTests {
    @Test func nowAcceptsRFC3339AndUnixSeconds() {
        #expect(Clock.parse("2026-03-01T00:00:00Z") == Date(timeIntervalSince1970: 1_772_323_200))
        #expect(Clock.parse("2026-03-01T01:00:00+01:00") == Date(timeIntervalSince1970: 1_772_323_200))
        #expect(Clock.parse("2026-03-01T00:00:00.500Z") == Date(timeIntervalSince1970: 1_772_323_200.5))
        #expect(Clock.parse("@1772323200") == Date(timeIntervalSince1970: 1_772_323_200))
    }

    @Test func nowRejectsAnythingElse() {
        for bad in ["", "tomorrow", "2026-03-01", "@", "@abc", "@nan", "2026-13-01T00:00:00Z"] { #expect(Clock.parse(bad) == nil, "\(bad)") }
    }

    @Test func rfc3339PrintsWhatISO8601DateFormatterPrintsRoundingToTheMillisecond() {
        let reference = ISO8601DateFormatter()
        reference.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(Date(timeIntervalSince1970: 1_772_323_200.9996).rfc3339 == "2026-03-01T00:00:01.000Z")
        #expect(Date(timeIntervalSince1970: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
        var generator = SystemRandomNumberGenerator()
        for index in 0..<5000 {
            let date = Date(timeIntervalSince1970: Double.random(in: 0...4_000_000_000, using: &generator) + (index % 5 == 0 ? 0.9995 : 0))
            #expect(date.rfc3339 == reference.string(from: date), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func rfc3339SecondsPrintsWhatISO8601DateFormatterPrintsForWholeMilliseconds() {
        let reference = ISO8601DateFormatter()
        reference.formatOptions = [.withInternetDateTime]
        #expect(Date(unixMilliseconds: 1_772_323_200_999).rfc3339Seconds == "2026-03-01T00:00:00Z")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let date = Date(unixMilliseconds: Int64.random(in: 0...4_000_000_000_000, using: &generator))
            #expect(date.rfc3339Seconds == reference.string(from: date), "\(date.unixMilliseconds)")
        }
    }

    @Test func millisecondsRoundTrip() {
        let date = Date(unixMilliseconds: 1_772_323_200_123)
        #expect(date.unixMilliseconds == 1_772_323_200_123)
    }
}

@Suite(.timeLimit(.minutes(15))) struct ArgumentsTests {
    let options: [OptionSpec] = [.flag("--dry-run", ""), .value("--to", "ID", "")]

    @Test func flagsValuesAndPositionalsParse() throws {
        let args = try Arguments(parsing: ["--to", "x", "--dry-run", "p"], options: options, positionals: [PositionalSpec("P", "")], commandName: "c")
        #expect(args.flag("--dry-run"))
        #expect(args.value("--to") == "x")
        #expect(args.positionals == ["p"])
        let inline = try Arguments(parsing: ["--to=y"], options: options, positionals: [], commandName: "c")
        #expect(inline.value("--to") == "y")
    }

    @Test func anUnknownOptionIsAUsageErrorWithASuggestion() {
        let error = #expect(throws: JobError.self) { try Arguments(parsing: ["--dryrun"], options: options, positionals: [], commandName: "c") }
        #expect(error?.exitCode == .usage)
        #expect(error?.message == "unknown option --dryrun for 'c'; did you mean --dry-run?")
    }

    @Test func aMissingValueARepeatedOptionAndExtraArgumentsAreUsageErrors() {
        #expect(throws: JobError.self) { try Arguments(parsing: ["--to"], options: options, positionals: [], commandName: "c") }
        #expect(throws: JobError.self) { try Arguments(parsing: ["--to", "a", "--to", "b"], options: options, positionals: [], commandName: "c") }
        #expect(throws: JobError.self) { try Arguments(parsing: ["extra"], options: options, positionals: [], commandName: "c") }
        #expect(throws: JobError.self) { try Arguments(parsing: [], options: options, positionals: [PositionalSpec("P", "")], commandName: "c") }
        #expect(throws: JobError.self) { try Arguments(parsing: ["--dry-run=yes"], options: options, positionals: [], commandName: "c") }
    }

    static let counted: [OptionSpec] = [.value("--max-batch", "N", ""), .required("--files", "N", "")]

    static func parsed(_ tokens: [String]) throws -> Arguments {
        try Arguments(parsing: tokens, options: counted, positionals: [], commandName: "c")
    }

    static func usageMessage(_ body: () throws -> Int?) -> String? {
        let error = #expect(throws: JobError.self) { _ = try body() }
        #expect(error?.exitCode == .usage)
        return error?.message
    }

    @Test func anIntegerOptionInItsRangeIsItsValueAndAnAbsentOneIsItsDefault() throws {
        let given = try Self.parsed(["--max-batch", "10000", "--files=0"])
        #expect(try given.integer("--max-batch", in: 1...10_000, default: 256) == 10_000)
        #expect(try given.requiredInteger("--files", in: 0...Int.max) == 0)
        let absent = try Self.parsed(["--files", "3"])
        #expect(try absent.integer("--max-batch", in: 1...10_000, default: 256) == 256)
        #expect(try absent.integer("--max-batch", in: 1...10_000) == nil)
    }

    @Test func anIntegerOptionOutOfRangeIsAUsageErrorWordedFromTheRange() throws {
        let zero = try Self.parsed(["--max-batch", "0", "--files", "-1"])
        #expect(Self.usageMessage { try zero.integer("--max-batch", in: 1...Int.max) } == "--max-batch needs a whole number above 0")
        #expect(Self.usageMessage { try zero.requiredInteger("--files", in: 0...Int.max) } == "--files needs a whole number of at least 0")
        let big = try Self.parsed(["--max-batch", "10001", "--files", "1"])
        #expect(Self.usageMessage { try big.integer("--max-batch", in: 1...10_000, default: 256) } == "--max-batch needs a whole number from 1 to 10000")
    }

    @Test func anIntegerOptionThatIsNotANumberIsAUsageErrorWithTheGivenWording() throws {
        for text in ["ten", "1.5", "", "99999999999999999999"] {
            let args = try Self.parsed(["--max-batch", text, "--files", "1"])
            #expect(Self.usageMessage { try args.integer("--max-batch", in: 1...Int.max, needs: "a positive whole number") }
                    == "--max-batch needs a positive whole number")
        }
    }

    @Test func aMissingRequiredIntegerOrARepeatedIntegerOptionIsAUsageError() throws {
        let args = try Arguments(parsing: [], options: [.value("--files", "N", "")], positionals: [], commandName: "c")
        #expect(Self.usageMessage { try args.requiredInteger("--files", in: 0...Int.max) } == "missing required option --files")
        let repeated = #expect(throws: JobError.self) { try Self.parsed(["--files", "1", "--max-batch", "2", "--max-batch", "3"]) }
        #expect(repeated?.exitCode == .usage)
        #expect(repeated?.message == "option --max-batch given twice")
    }

    @Test func suggestionsOnlyForNearMisses() {
        #expect(Suggest.closest(to: "sweep-grant", among: ["sweep-grants", "pull-offers"]) == "sweep-grants")
        #expect(Suggest.closest(to: "frobnicate", among: ["sweep-grants", "pull-offers"]) == nil)
    }
}

@Suite(.timeLimit(.minutes(15))) struct StoreKeyLocationTests {
    let directory = TemporaryDirectory("key")

    @Test func theDefaultKeyIsCreatedOnceWithMode0600() throws {
        let location = StoreKeyLocation.resolve(environment: [:], storePath: directory.file("s.sqlite"))
        #expect(location.path == directory.file("s.sqlite.key"))
        let first = try location.load()
        let second = try location.load()
        #expect(first.count == 32)
        #expect(first.constantTimeEquals(second))
        let attributes = try FileManager.default.attributesOfItem(atPath: location.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func concurrentFirstUsesAgreeOnOneKey() throws {
        let location = StoreKeyLocation.resolve(environment: [:], storePath: directory.file("race.sqlite"))
        let keys = KeyBox()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in keys.add(try! location.load().copyBytes()) }
        #expect(Set(keys.all.map { $0.description }).count == 1)
    }

    @Test func theCredentialsDirectoryWinsAndIsNeverCreated() throws {
        let credentials = TemporaryDirectory("cred")
        let location = StoreKeyLocation.resolve(environment: ["CREDENTIALS_DIRECTORY": credentials.path, "JOB_STORE_KEY_FILE": "/elsewhere"], storePath: directory.file("s.sqlite"))
        #expect(location.path == credentials.path + "/store-key")
        let error = #expect(throws: JobError.self) { try location.load() }
        #expect(error?.exitCode == .configuration)
        #expect(!FileManager.default.fileExists(atPath: credentials.path + "/store-key"))
    }

    @Test func aConfiguredKeyFileIsReadAsRawBytesOrHex() throws {
        let raw = directory.file("raw.key")
        let bytes = (0..<32).map { UInt8($0) }
        _ = FileManager.default.createFile(atPath: raw, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        #expect(try StoreKeyLocation.resolve(environment: ["JOB_STORE_KEY_FILE": raw], storePath: "x").load().copyBytes() == bytes)
        let hex = directory.file("hex.key")
        _ = FileManager.default.createFile(atPath: hex, contents: Data((bytes.map { String(format: "%02X", $0) }.joined() + "\n").utf8), attributes: [.posixPermissions: 0o600])
        #expect(try StoreKeyLocation.resolve(environment: ["JOB_STORE_KEY_FILE": hex], storePath: "x").load().copyBytes() == bytes)
    }

    @Test func aMalformedKeyFileIsAConfigurationErrorAndIsNotReplaced() throws {
        let bad = directory.file("bad.key")
        _ = FileManager.default.createFile(atPath: bad, contents: Data("too short\n".utf8), attributes: [.posixPermissions: 0o600])
        let error = #expect(throws: JobError.self) { try StoreKeyLocation.resolve(environment: ["JOB_STORE_KEY_FILE": bad], storePath: "x").load() }
        #expect(error?.exitCode == .configuration)
        #expect(error?.category == "store-key-malformed")
        #expect(try String(contentsOfFile: bad, encoding: .utf8) == "too short\n")
    }
}

final class KeyBox: Sendable {
    private let keys = Mutex<[[UInt8]]>([])
    func add(_ key: [UInt8]) { keys.withLock { $0.append(key) } }
    var all: [[UInt8]] { keys.withLock { $0 } }
}

@Suite(.timeLimit(.minutes(15))) struct StoreKeyCheckTests {
    @Test func theFirstKeyIsRememberedAndAReplacedKeyIsAConfigurationError() throws {
        let h = InProcessJob(modules: [RunnerModule.module])
        let db = try h.database()
        let context = h.invocation().context(name: "t", database: db, arguments: Arguments(), dryRun: false, catalog: h.catalog)
        let key = try context.storeKey()
        #expect(key.count == 32)
        #expect(try db.scalar("SELECT count(*) FROM store_key_check") as Int? == 1)
        // The same key again (a later process) passes.
        let again = h.invocation().context(name: "t", database: db, arguments: Arguments(), dryRun: false, catalog: h.catalog)
        #expect(try again.storeKey().constantTimeEquals(key))
        // Replace the key file: the next process is refused with exit 78.
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: h.storePath + ".key"))
        chmod(h.storePath + ".key", 0o600)
        let replaced = h.invocation().context(name: "t", database: db, arguments: Arguments(), dryRun: false, catalog: h.catalog)
        let error = #expect(throws: JobError.self) { try replaced.storeKey() }
        #expect(error?.exitCode == .configuration)
        #expect(error?.category == "store-key-mismatch")
    }
}
