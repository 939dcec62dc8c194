import Runner
import Store
import Testing
import TestSupport
@testable import Relay

/// The relay's rules run as SQL in production; their Swift forms are the oracles. Over a grid of inputs, SQLite's
/// answer to the SQL is the Swift form's answer.
@Suite(.timeLimit(.minutes(15))) struct RelayRuleOracleTests {
    let home = TemporaryDirectory("rule-oracle")

    func database() throws -> Database { try Database(path: home.file("store.sqlite")) }

    @Test func cleanTokensSQLRemovesExactlyWhatShouldRemoveSays() throws {
        let db = try database()
        let reasons: [String?] = [nil, "BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered", "ExpiredToken", "PayloadTooLarge", "TooManyRequests", "InternalServerError"]
        let times: [Int64?] = [nil, 999, 1_000, 1_001]
        var checked = 0
        for reason in reasons {
            for resultAt in times {
                for invalidatedAt in times {
                    let sql = "SELECT \(TokenCleanup.deadSQL("t")) FROM (SELECT ? AS result_reason, ? AS result_at, ? AS invalidated_at, 1000 AS registered_at) t"
                    let deadAnswer: Bool? = try db.scalar(sql, [reason, resultAt, invalidatedAt])
                    let expected = TokenCleanup.shouldRemove(reason: reason, resultAt: resultAt, invalidatedAt: invalidatedAt, registeredAt: 1_000)
                    #expect(deadAnswer == expected, "reason \(reason ?? "nil") result_at \(resultAt.map(String.init) ?? "nil") invalidated_at \(invalidatedAt.map(String.init) ?? "nil")")
                    checked += 1
                }
            }
        }
        #expect(checked == 128)
    }

    @Test func tokenDebounceSQLAllowsAPushExactlyWhenMayPushSays() throws {
        let db = try database()
        let now: Int64 = 100_000
        for sentAt in [nil, 0, now - 30_001, now - 30_000, now - 29_999, now] as [Int64?] {
            let sql = "SELECT \(WakeupDebounce.mayPushSQL("t")) FROM (SELECT ? AS sent_at) t"
            let mayAnswer: Bool? = try db.scalar(sql, [now - WakeupDebounce.windowMilliseconds, sentAt])
            #expect(mayAnswer == WakeupDebounce.mayPush(sentAt: sentAt, now: now), "sent_at \(sentAt.map(String.init) ?? "nil")")
        }
    }

    @Test(arguments: [false, true])
    func deviceDebounceSQLIsDueExactlyWhenIsDueSaysForADeviceWithNoTokenStampedInTheWindow(trailingPush: Bool) throws {
        let db = try database()
        let now: Int64 = 100_000
        let times: [Int64?] = [nil, 0, 40_000, 69_999, 70_000, 70_001, 99_999, 100_000]
        for trigger in times {
            for push in times {
                // A CTE named relay_tokens stands for the table: no token of this Device ID.
                let sql = """
                    WITH relay_tokens(device_id, sent_at) AS (SELECT 0, NULL WHERE 0)
                    SELECT \(WakeupDebounce.dueSQL(trailingPush: trailingPush)) FROM (SELECT 1 AS id, ? AS last_trigger_at, ? AS last_push_at) d
                    """
                let window = now - WakeupDebounce.windowMilliseconds
                let dueAnswer: Bool? = try db.scalar(sql, [window, window, trigger, push])
                #expect(dueAnswer == WakeupDebounce.isDue(lastTriggerAt: trigger, lastPushAt: push, now: now, trailingPush: trailingPush),
                        "trigger \(trigger.map(String.init) ?? "nil") push \(push.map(String.init) ?? "nil")")
            }
        }
    }
}
