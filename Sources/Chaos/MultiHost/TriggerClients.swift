import Foundation
import HTTPClient
import Runner
import Synchronization

/// The homeservers of a multi-host chaos run: client threads sending `POST /api/v1/trigger` over plain HTTP on
/// loopback to a random live `serve-relay`, trigger `j` of the plan at its planned moment, each sent again (to
/// another serve-relay) until it is answered 202. A 503 (the store restarting) or a cut-off request (a killed
/// serve-relay) is retried; any other answer is a violation (every planned Device ID is provisioned and stays
/// far under the rate limit).
final class TriggerClients: Sendable {
    let plan: [Int]
    let seconds: Double
    let fleet: RelayFleet
    let deviceID: @Sendable (Int) -> String
    /// Give up on a trigger not accepted after this long (a violation).
    static let patienceSeconds = 90.0

    struct Figures: Sendable {
        var requests = 0
        var retries = 0
        var violations: [String] = []
    }

    private struct State {
        var next = 0
        var accepted: [PushLogModel.Trigger] = []
        var attempted = Set<Int>()
        var figures = Figures()
        var unexpected: [Int: Int] = [:]
        var abandoned = 0
    }

    private let state = Mutex(State())
    private let start = Date()
    private let finished = DispatchGroup()

    init(plan: [Int], seconds: Double, fleet: RelayFleet, deviceID: @escaping @Sendable (Int) -> String) {
        self.plan = plan
        self.seconds = seconds
        self.fleet = fleet
        self.deviceID = deviceID
    }

    /// Starts `count` client threads (the plan's clock starts at `init`).
    func start(_ count: Int, seed: UInt64) {
        for index in 0..<count {
            finished.enter()
            let thread = Thread { [self] in
                work(seed: seed &+ UInt64(index))
                finished.leave()
            }
            thread.name = "trigger-client-\(index)"
            thread.start()
        }
    }

    /// One client thread's work: takes the next trigger of the plan until none is left.
    private func work(seed: UInt64) {
        let client = HTTPClient(options: HTTPClient.Options(connectTimeout: 2, totalTimeout: 10, httpVersion: .http1_1))
        var random = ChaosRandom(seed: seed)
        while true {
            let j = state.withLock { s -> Int? in
                guard s.next < plan.count else { return nil }
                defer { s.next += 1 }
                return s.next
            }
            guard let j else { return }
            let due = start.addingTimeInterval(seconds * Double(j) / Double(max(1, plan.count)))
            let wait = due.timeIntervalSinceNow
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
            send(plan[j], client: client, random: &random)
        }
    }

    /// Sends the trigger for plan index `device` until it is accepted (or patience runs out).
    private func send(_ device: Int, client: HTTPClient, random: inout ChaosRandom) {
        let body = Array("{\"device_id\":\"\(deviceID(device))\"}".utf8)
        let giveUp = Date().addingTimeInterval(Self.patienceSeconds)
        state.withLock { _ = $0.attempted.insert(device) }
        while Date() < giveUp {
            guard let port = fleet.anyPort(using: &random) else { usleep(20_000); continue }
            let sentAt = Date().unixMilliseconds
            let answer = try? client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/api/v1/trigger",
                                                      headers: [("Content-Type", "application/json")], body: body))
            let status = answer?.status
            let done = state.withLock { s -> Bool in
                s.figures.requests += 1
                switch status {
                case 202:
                    s.accepted.append(PushLogModel.Trigger(device: device, sentAtMilliseconds: sentAt))
                    return true
                case nil, 503:
                    s.figures.retries += 1
                    return false
                case let other?:
                    s.unexpected[other, default: 0] += 1
                    return true
                }
            }
            if done { return }
            usleep(20_000)
        }
        state.withLock { $0.abandoned += 1 }
    }

    /// Waits until every client thread has run out of triggers.
    func waitUntilDone() { finished.wait() }

    /// The accepted triggers, the Device IDs any request was sent for, and the figures (with violations).
    func results() -> (accepted: [PushLogModel.Trigger], attempted: Set<Int>, figures: Figures) {
        state.withLock { s in
            var figures = s.figures
            for (status, count) in s.unexpected.sorted(by: { $0.key < $1.key }) { figures.violations.append("\(count) trigger(s) answered \(status)") }
            if s.abandoned > 0 { figures.violations.append("\(s.abandoned) trigger(s) not accepted within \(Int(Self.patienceSeconds)) s of retries") }
            return (s.accepted, s.attempted, figures)
        }
    }
}
