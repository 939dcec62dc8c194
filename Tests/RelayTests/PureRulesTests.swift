import Foundation
import Testing
@testable import Relay

/// The pure parts: identifiers, the APNs reason table and the clean-tokens rule.
@Suite(.timeLimit(.minutes(15))) struct PureRulesTests {
    @Test func deviceIDsAreValidatedAndCanonicalised() {
        let id = "MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-BONSGYY-LTMRWAD"
        #expect(RelayIdentifiers.deviceID(id) == id)
        #expect(RelayIdentifiers.deviceID(id.lowercased()) == id)
        #expect(RelayIdentifiers.deviceID(id.replacingOccurrences(of: "-", with: "")) == id)
        #expect(RelayIdentifiers.deviceID(String(id.dropLast())) == nil)
        #expect(RelayIdentifiers.deviceID(id.replacingOccurrences(of: "M", with: "1")) == nil)
        #expect(RelayIdentifiers.deviceID("MFZWI3DB-ONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-BONSGYY-LTMRWAD") == nil)
        #expect(RelayIdentifiers.deviceID("") == nil)
    }

    @Test func apnsTokensAreHexOfPlausibleLength() {
        let token = String(repeating: "aB", count: 32)
        #expect(RelayIdentifiers.apnsToken(token) == token.lowercased())
        #expect(RelayIdentifiers.apnsToken(String(token.dropLast())) == nil)
        #expect(RelayIdentifiers.apnsToken(String(repeating: "zz", count: 32)) == nil)
        #expect(RelayIdentifiers.apnsToken("abcd") == nil)
    }

    @Test func theAPNsReasonTableMapsEveryDocumentedAnswer() {
        let table: [(Int, String?, APNsResponseAction)] = [
            (200, nil, .delivered),
            (400, "BadDeviceToken", .invalidToken), (400, "DeviceTokenNotForTopic", .invalidToken),
            (410, "Unregistered", .invalidToken), (410, "ExpiredToken", .invalidToken),
            (403, "ExpiredProviderToken", .remintProviderToken),
            (413, "PayloadTooLarge", .invalidToken), (413, nil, .invalidToken),
            (403, "InvalidProviderToken", .configuration), (403, "BadCertificate", .configuration),
            (403, "MissingProviderToken", .configuration), (403, "UnrelatedKeyIdInToken", .configuration),
            (403, "BadEnvironmentKeyIdInToken", .configuration), (403, "BadCertificateEnvironment", .configuration),
            (400, "BadTopic", .configuration), (400, "TopicDisallowed", .configuration), (400, "MissingTopic", .configuration),
            (404, "BadPath", .configuration), (405, "MethodNotAllowed", .configuration),
            (400, "IdleTimeout", .retryNextPass),
            (429, "TooManyRequests", .retryNextPass), (429, "TooManyProviderTokenUpdates", .retryNextPass),
            (500, "InternalServerError", .retryNextPass), (503, "ServiceUnavailable", .retryNextPass), (503, "Shutdown", .retryNextPass),
            (502, nil, .retryNextPass),
            (400, "BadPriority", .rejected), (400, "BadExpirationDate", .rejected), (400, "PayloadEmpty", .rejected),
            (400, "InvalidPushType", .rejected), (400, "DuplicateHeaders", .rejected), (400, "MissingDeviceToken", .rejected),
            (400, "BadCollapseId", .rejected), (400, "BadMessageId", .rejected),
            (410, nil, .rejected),
            // A per-token refusal, never a configuration failure of the pass.
            (403, "Forbidden", .rejected), (403, nil, .rejected), (403, "SomethingNew", .rejected),
        ]
        for (status, reason, action) in table {
            #expect(APNsResponseAction.classify(status: status, reason: reason) == action, "\(status) \(reason ?? "-")")
        }
    }

    @Test func aTokenIsRemovedOnlyWhenItsInvalidVerdictPostdatesItsRegistration() {
        // 410: APNs's timestamp against the registration time.
        #expect(TokenCleanup.shouldRemove(reason: "Unregistered", resultAt: 5_000, invalidatedAt: 2_000, registeredAt: 1_000))
        #expect(TokenCleanup.shouldRemove(reason: "Unregistered", resultAt: 5_000, invalidatedAt: 1_000, registeredAt: 1_000))
        #expect(!TokenCleanup.shouldRemove(reason: "Unregistered", resultAt: 5_000, invalidatedAt: 999, registeredAt: 1_000))
        #expect(!TokenCleanup.shouldRemove(reason: "ExpiredToken", resultAt: 5_000, invalidatedAt: 500, registeredAt: 1_000))
        // 400 reasons: the result must be recorded after the latest registration.
        #expect(TokenCleanup.shouldRemove(reason: "BadDeviceToken", resultAt: 2_000, invalidatedAt: nil, registeredAt: 1_000))
        #expect(TokenCleanup.shouldRemove(reason: "DeviceTokenNotForTopic", resultAt: 1_000, invalidatedAt: nil, registeredAt: 1_000))
        #expect(!TokenCleanup.shouldRemove(reason: "BadDeviceToken", resultAt: 999, invalidatedAt: nil, registeredAt: 1_000))
        #expect(TokenCleanup.shouldRemove(reason: "PayloadTooLarge", resultAt: 2_000, invalidatedAt: nil, registeredAt: 1_000))
        // Other failures keep the token.
        for reason in ["TooManyRequests", "InternalServerError", "ExpiredProviderToken", "BadPriority", "Forbidden"] {
            #expect(!TokenCleanup.shouldRemove(reason: reason, resultAt: 2_000, invalidatedAt: nil, registeredAt: 1_000))
        }
        #expect(!TokenCleanup.shouldRemove(reason: nil, resultAt: nil, invalidatedAt: nil, registeredAt: 1_000))
    }
}
