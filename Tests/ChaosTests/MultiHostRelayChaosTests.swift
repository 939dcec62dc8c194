import Chaos
import Foundation
import Testing
import TestSupport

/// Several relay hosts on one PostgreSQL store — three `serve-relay` and three `send-wakeups` processes,
/// random SIGKILLs throughout and a PostgreSQL crash mid-run — at a small size (the full size is
/// `job-bench chaos --job relay-multihost`); and the independent model that judges it, on hand-made logs.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct MultiHostRelayChaosTests {
    @Test func threeServeRelaysAndThreeSendWakeupsOnOnePostgreSQLPushEveryTriggeredTokenOnceAWindowThroughKillsAndAServerCrash() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let directory = TemporaryDirectory("chaos-multihost")
        var configuration = MultiHostRelayChaos.Configuration()
        configuration.devices = 500
        configuration.triggers = 1_000
        configuration.idleDevices = 50
        configuration.triggerSeconds = 6
        configuration.seed = 14
        let chaos = MultiHostRelayChaos(executable: JobProcess.executablePath, directory: directory.path, configuration: configuration)
        let report = try chaos.run()
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.triggersAccepted == 1_000)
        #expect(report.postgresRestarts == 1)
        #expect(report.serveRelayKills + report.sendWakeupsKills >= 3, "kills: \(report.serveRelayKills) serve-relay, \(report.sendWakeupsKills) send-wakeups")
        // Every triggered token was pushed (two per planned Device ID), none of the idle Device IDs' tokens.
        #expect(report.tokensPushed == 1_000)
    }

    /// `--pause-every` stops a pass once it is pushing, which the pauser reads as an established TCP connection from
    /// that process to the stand-in's port: seen while this process holds one, not for another port, not once closed.
    @Test func thePauserSeesAProcessConnectedToThePortOnlyWhileTheConnectionIsOpen() throws {
        func ipv4(_ port: Int) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            return address
        }
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = ipv4(0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        try #require(listening)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let otherPort = try FreeLoopbackPort.find()
        #expect(!PassPauser.isConnected(getpid(), toPort: port), "a listening socket is no connection")

        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(client >= 0)
        var target = ipv4(port)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0, "connect: errno \(errno)")
        let accepted = accept(listener, nil, nil)
        defer { if accepted >= 0 { close(accepted) } }
        #expect(PassPauser.isConnected(getpid(), toPort: port))
        #expect(!PassPauser.isConnected(getpid(), toPort: otherPort))
        close(client)
        #expect(!PassPauser.isConnected(getpid(), toPort: port))
    }

    static let tokens = [["aa01", "aa02"], ["bb01", "bb02"], ["cc01", "cc02"]]

    @Test func theModelPassesPushesAfterEachTriggerAtLeastThirtySecondsApart() {
        let model = PushLogModel(tokens: Self.tokens)
        let verdict = model.verdict(
            accepted: [.init(device: 0, sentAtMilliseconds: 100_500), .init(device: 0, sentAtMilliseconds: 120_000)], attempted: [0],
            pushes: [.init(token: "aa01", passSecond: 100, arrivedAtMilliseconds: 100_010), .init(token: "aa02", passSecond: 101, arrivedAtMilliseconds: 101_020),
                     .init(token: "aa01", passSecond: 130, arrivedAtMilliseconds: 130_010), .init(token: "aa02", passSecond: 131, arrivedAtMilliseconds: 131_020)])
        #expect(verdict.violations.isEmpty, "\(verdict.violations)")
        #expect(verdict.pushes == 4 && verdict.tokensPushed == 2)
    }

    @Test func theModelFindsATokenPushedTwiceWithinThirtySeconds() {
        let verdict = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 1, sentAtMilliseconds: 50_000)], attempted: [1],
            pushes: [.init(token: "bb01", passSecond: 50, arrivedAtMilliseconds: 50_100), .init(token: "bb02", passSecond: 50, arrivedAtMilliseconds: 50_100),
                     .init(token: "bb01", passSecond: 79, arrivedAtMilliseconds: 79_200)])
        #expect(verdict.doubled == 1 && verdict.lost == 0)
        #expect(verdict.violations.count == 1 && verdict.violations[0].contains("pushed twice within 30 s"), "\(verdict.violations)")
    }

    /// The shape a pass still pushing 30 s after its start left: its pushes carry its start clock, a second pass's
    /// carry a clock 31 s later, yet both reached APNs 40 ms apart. Judged by pass clocks this looked fine.
    @Test func theModelJudgesDoublesByArrivalNotByThePassesClocks() {
        let verdict = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 2, sentAtMilliseconds: 1_000)], attempted: [2],
            pushes: [.init(token: "cc01", passSecond: 1, arrivedAtMilliseconds: 32_000), .init(token: "cc02", passSecond: 1, arrivedAtMilliseconds: 2_000),
                     .init(token: "cc01", passSecond: 32, arrivedAtMilliseconds: 32_040)])
        #expect(verdict.doubled == 1 && verdict.lost == 0)
        #expect(verdict.closestPairMilliseconds == 40)
        #expect(verdict.violations.count == 1 && verdict.violations[0].contains("arrived 40 ms apart"), "\(verdict.violations)")
    }

    /// A trigger inside the 30 s after a push is debounced (observed, never pushed again): not lost. One 31 s after is.
    @Test func theModelCountsADebouncedTriggerAsServedByThePushBeforeIt() {
        let pushes: [PushLogModel.Push] = [.init(token: "aa01", passSecond: 100, arrivedAtMilliseconds: 100_050),
                                           .init(token: "aa02", passSecond: 100, arrivedAtMilliseconds: 100_050)]
        let debounced = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 0, sentAtMilliseconds: 99_000), .init(device: 0, sentAtMilliseconds: 129_500)], attempted: [0], pushes: pushes)
        #expect(debounced.lost == 0, "\(debounced.violations)")
        let late = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 0, sentAtMilliseconds: 99_000), .init(device: 0, sentAtMilliseconds: 131_000)], attempted: [0], pushes: pushes)
        #expect(late.lost == 2)
    }

    /// A trigger sent while a pass was pushing (after the pass's clock, before its pushes arrived) is served by those
    /// pushes when it is less than 30 s after the pass's clock (docs/roles/relay.md, "A trigger during a pass"); one
    /// 31 s after it needs a push of its own, though that pass's pushes arrived later still.
    @Test func theModelCountsATriggerDuringAPassAsServedByItsPushesInsideTheWindowAfterThePassesClock() {
        let pushes: [PushLogModel.Push] = [.init(token: "aa01", passSecond: 100, arrivedAtMilliseconds: 140_000),
                                           .init(token: "aa02", passSecond: 100, arrivedAtMilliseconds: 140_000)]
        let during = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 0, sentAtMilliseconds: 99_000), .init(device: 0, sentAtMilliseconds: 105_000)], attempted: [0], pushes: pushes)
        #expect(during.lost == 0, "\(during.violations)")
        let late = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 0, sentAtMilliseconds: 99_000), .init(device: 0, sentAtMilliseconds: 131_000)], attempted: [0], pushes: pushes)
        #expect(late.lost == 2)
    }

    /// Pushes 30 s apart by the passes' clocks but 29.9 s apart on arrival are a double; 30 s on arrival is not.
    @Test func theModelCountsTheWindowOnArrivals() {
        let twice = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 0, sentAtMilliseconds: 1_000)], attempted: [0],
            pushes: [.init(token: "aa01", passSecond: 1, arrivedAtMilliseconds: 1_200), .init(token: "aa01", passSecond: 31, arrivedAtMilliseconds: 31_100),
                     .init(token: "aa02", passSecond: 1, arrivedAtMilliseconds: 1_200), .init(token: "aa02", passSecond: 31, arrivedAtMilliseconds: 31_200)])
        #expect(twice.doubled == 1 && twice.closestPairMilliseconds == 29_900)
    }

    @Test func theModelFindsATokenNotPushedAfterItsLatestTrigger() {
        // bb02's only push came from a pass whose clock is a whole second before the latest trigger.
        let verdict = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [.init(device: 1, sentAtMilliseconds: 10_000), .init(device: 1, sentAtMilliseconds: 41_200)], attempted: [1],
            pushes: [.init(token: "bb01", passSecond: 10, arrivedAtMilliseconds: 10_050), .init(token: "bb02", passSecond: 10, arrivedAtMilliseconds: 10_050),
                     .init(token: "bb01", passSecond: 41, arrivedAtMilliseconds: 41_050)])
        #expect(verdict.lost == 1 && verdict.doubled == 0)
        #expect(verdict.violations.count == 1 && verdict.violations[0].contains("not pushed after its trigger"), "\(verdict.violations)")
    }

    @Test func theModelFindsPushesForUnprovisionedTokensAndUntriggeredDeviceIDs() {
        let verdict = PushLogModel(tokens: Self.tokens).verdict(
            accepted: [], attempted: [0],
            pushes: [.init(token: "dd01", passSecond: 5, arrivedAtMilliseconds: 5_000), .init(token: "cc01", passSecond: 5, arrivedAtMilliseconds: 5_000),
                     .init(token: "aa01", passSecond: 5, arrivedAtMilliseconds: 5_000)])
        #expect(verdict.violations.sorted() == ["1 push(es) for a provisioned Device ID no client triggered", "1 push(es) for a token never provisioned"],
                "\(verdict.violations)")
    }
}
