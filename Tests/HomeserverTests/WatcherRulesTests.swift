import Foundation
import Testing
@testable import Homeserver

/// The watcher's pure rules: what counts as a change, the debounce and hold-backs, the relay error table's
/// reactions, restart detection, and the shared state's gate for the sweep.
@Suite(.timeLimit(.minutes(15))) struct WatcherRulesTests {
    let me = "ME"
    let peer = "PEER"

    func local(_ id: Int64, _ folder: String = "f", sequence: Int64?) -> SyncthingEvent {
        SyncthingEvent(id: id, kind: .localIndexUpdated(folder: folder, sequence: sequence))
    }

    func completion(_ id: Int64, device: String = "PEER", folder: String = "f", sequence: Int64 = 1, needItems: Int64 = 0, needBytes: Int64 = 0) -> SyncthingEvent {
        SyncthingEvent(id: id, kind: .folderCompletion(device: device, folder: folder, sequence: sequence, needItems: needItems, needBytes: needBytes, needDeletes: 0))
    }

    @Test func aLocalIndexChangeCountsOncePerSequenceAndOnlyInAWatchedUnpausedFolder() {
        var filter = ChangeFilter(watched: ["f", "g"], myID: me)
        let none = ChangeFilter.Snapshot()
        #expect(filter.judge(local(1, sequence: 10), snapshot: none) == .change)
        #expect(filter.judge(local(2, sequence: 10), snapshot: none) == .duplicate, "the same change seen twice")
        #expect(filter.judge(local(3, sequence: 9), snapshot: none) == .duplicate)
        #expect(filter.judge(local(4, sequence: 11), snapshot: none) == .change)
        #expect(filter.judge(local(5, "g", sequence: 10), snapshot: none) == .change, "sequences are per folder")
        #expect(filter.judge(local(6, "h", sequence: 50), snapshot: none) == .unwatched)
        #expect(filter.judge(local(7, "g", sequence: 11), snapshot: .init(pausedFolders: ["g"])) == .paused)
        #expect(filter.judge(SyncthingEvent(id: 8, kind: .other), snapshot: none) == .ignored)
        var all = ChangeFilter(watched: nil, myID: me)
        #expect(all.judge(local(1, "anything", sequence: nil), snapshot: none) == .change)
        #expect(all.judge(local(2, "anything", sequence: nil), snapshot: none) == .change, "without a sequence nothing is a repeat")
    }

    @Test func aFolderCompletionCountsOnlyWhileAnUnpausedPeerStillNeedsDataAndOncePerState() {
        var filter = ChangeFilter(watched: nil, myID: me)
        let none = ChangeFilter.Snapshot()
        #expect(filter.judge(completion(1), snapshot: none) == .inSync)
        #expect(filter.judge(completion(2, sequence: 2, needItems: 3), snapshot: none) == .change, "a peer that needs data")
        #expect(filter.judge(completion(3, sequence: 2, needItems: 3), snapshot: none) == .duplicate, "the same event seen twice")
        #expect(filter.judge(completion(4, sequence: 2, needItems: 2, needBytes: 10), snapshot: none) == .change)
        #expect(filter.judge(completion(5, sequence: 3, needBytes: 5), snapshot: .init(pausedDevices: [peer])) == .paused)
        #expect(filter.judge(completion(6, sequence: 3, needBytes: 5), snapshot: .init(pausedFolders: ["f"])) == .paused)
        #expect(filter.judge(completion(7, device: me, sequence: 3, needItems: 1), snapshot: none) == .ignored, "this device's own completion")
        #expect(!filter.mayBeChange(completion(8, device: me)) && filter.mayBeChange(completion(9)))
    }

    @Test func theWakeUpIsDueOneDebounceAfterTheLastChangeAndHeldBackByTheRelay() {
        var schedule = TriggerSchedule(debounceSeconds: 5)
        #expect(!schedule.isPending && schedule.dueAt == nil)
        let first = schedule.change(at: 100)
        let second = schedule.change(at: 103)
        #expect(!first && second, "a second change joins the pending wake-up")
        #expect(schedule.dueAt == 108 && !schedule.isDue(at: 107.9) && schedule.isDue(at: 108))
        schedule.hold(until: 120, transient: true)
        #expect(schedule.dueAt == 120 && schedule.failures == 1)
        schedule.hold(until: 125, transient: true)
        #expect(schedule.failures == 2)
        schedule.delivered()
        #expect(!schedule.isPending && schedule.failures == 0)
        schedule.announce(at: 200)
        #expect(schedule.isDue(at: 200), "the startup announce is not debounced")
    }

    @Test func theRelayErrorTableIsOneReactionPerClass() throws {
        let now: Int64 = 1_000_000
        #expect(TriggerSender.reaction(to: .sent, now: now).isDelivered)
        for status in [400, 401, 402, 403] {
            let answer = RelayAnswer.classify(status: status, retryAfter: nil, now: Date(unixMilliseconds: now))
            guard case .recheck(let at) = TriggerSender.reaction(to: answer, now: now) else { Issue.record("\(status)"); continue }
            #expect(at == now + 60_000)
        }
        guard case .fatal(let error) = TriggerSender.reaction(to: .notFound, now: now) else { Issue.record("404"); return }
        #expect(error.exitCode.rawValue == 78)
        let limited = RelayAnswer.classify(status: 429, retryAfter: "7", now: Date(unixMilliseconds: now))
        guard case .wait(let until) = TriggerSender.reaction(to: limited, now: now) else { Issue.record("429"); return }
        #expect(until == now + 7_000)
        for status in [500, 502, 503, 418] {
            #expect(TriggerSender.reaction(to: RelayAnswer.classify(status: status, retryAfter: nil, now: Date()), now: now).isRetry, "\(status)")
        }
        // Exponential, capped, jittered: the jitter factor scales the pause.
        #expect(TriggerSender.retryPause(attempt: 1, base: 1, cap: 60, jitter: 1) == 1)
        #expect(TriggerSender.retryPause(attempt: 3, base: 1, cap: 60, jitter: 1) == 4)
        #expect(TriggerSender.retryPause(attempt: 10, base: 1, cap: 60, jitter: 1) == 60)
        #expect(TriggerSender.retryPause(attempt: 2, base: 1, cap: 60, jitter: 0.5) == 1)
        let drawn = (0..<50).map { _ in TriggerSender.retryPause(attempt: 2, base: 1, cap: 60) }
        #expect(drawn.allSatisfy { (1...3).contains($0) } && Set(drawn).count > 1, "jittered within 0.5…1.5 of 2 s")
    }

    @Test func aRestartIsAnotherStartTimeOrAnUptimeThatWentDown() {
        #expect(EventStream.restarted(before: ("2026-12-03T06:00:00Z", 100), now: ("2026-12-03T06:05:00Z", 3)))
        #expect(!EventStream.restarted(before: ("2026-12-03T06:00:00Z", 100), now: ("2026-12-03T06:00:00Z", 130)))
        #expect(EventStream.restarted(before: (nil, 100), now: (nil, 3)))
        #expect(!EventStream.restarted(before: (nil, 100), now: (nil, 130)))
        #expect(!EventStream.restarted(before: (nil, nil), now: (nil, nil)))
    }

    @Test func theEventAnswerIsDecodedStrictly() throws {
        let body = SyncthingClient.parse(Array("""
            [{"id":7,"globalID":70,"type":"LocalIndexUpdated","time":"t","data":{"folder":"f","items":1,"filenames":["a.md"],"sequence":12,"version":12}},
             {"id":8,"type":"FolderCompletion","data":{"completion":50,"device":"D","folder":"f","globalBytes":10,"needBytes":5,"needDeletes":0,"needItems":1,"sequence":3}},
             {"id":9,"type":"StateChanged","data":{"folder":"f","from":"idle","to":"scanning"}}]
            """.utf8))
        let events = try #require(SyncthingEvent.decode(body))
        #expect(events == [SyncthingEvent(id: 7, kind: .localIndexUpdated(folder: "f", sequence: 12)),
                           SyncthingEvent(id: 8, kind: .folderCompletion(device: "D", folder: "f", sequence: 3, needItems: 1, needBytes: 5, needDeletes: 0)),
                           SyncthingEvent(id: 9, kind: .other)])
        #expect(SyncthingEvent.decode(SyncthingClient.parse(Array("[]".utf8))) == [])
        for bad in [#"{"id":1}"#, #"[{"type":"LocalIndexUpdated"}]"#, #"[{"id":"7","type":"x"}]"#, #"[{"id":1,"type":"LocalIndexUpdated","data":{}}]"#, "nope"] {
            #expect(SyncthingEvent.decode(SyncthingClient.parse(Array(bad.utf8))) == nil, "\(bad)")
        }
    }

    @Test func theSweepSkipsOnlyWhileALiveWatcherHoldsAWakeUpBack() {
        let now: Int64 = 10_000_000
        var state = RetriggerState()
        #expect(state.skipReason(now: now, cadenceSeconds: 600) == nil)
        state.watcherPendingSince = now - 5_000
        state.watcherSeenAt = now - 10_000
        #expect(state.skipReason(now: now, cadenceSeconds: 600) == .watcherPending)
        state.watcherSeenAt = now - 300_000
        #expect(state.skipReason(now: now, cadenceSeconds: 600) == nil, "a watcher killed with a wake-up pending does not hold the sweep forever")
        state.watcherPendingSince = nil
        state.watcherSeenAt = now
        #expect(state.skipReason(now: now, cadenceSeconds: 600) == nil, "a live watcher with nothing pending does not")
        let sent = state.after(.sent, now: now, cadenceSeconds: 600)
        #expect(sent.skipReason(now: now + 599_000, cadenceSeconds: 600) == .cadence, "the watcher's wake-up counts as the last sent")
    }
}
