import Foundation
import HTTPClient
import Testing
@testable import Homeserver

/// The homeserver helper's pure rules: config.xml discovery and URL inference, relay answers, the gate.
@Suite(.timeLimit(.minutes(15))) struct HelperRulesTests {
    @Test func configXMLCandidatesFollowSyncthingsPrecedence() throws {
        let env = ["HOME": "/h", "STCONFDIR": "/conf", "STHOMEDIR": "/sthome"]
        #expect(SyncthingConfigFile.candidates(environment: env).map(\.path) == [
            "/conf/config.xml", "/sthome/config.xml", "/h/.config/syncthing/config.xml", "/h/.local/state/syncthing/config.xml",
            "/var/syncthing/config/config.xml", "/config/config.xml", "/var/syncthing/config.xml", "/var/lib/syncthing/config.xml",
            "/etc/syncthing/config.xml",
        ])
        let xdg = ["HOME": "/h", "XDG_CONFIG_HOME": "/x/c", "XDG_STATE_HOME": "/x/s"]
        #expect(SyncthingConfigFile.candidates(environment: xdg).prefix(2).map(\.path) == ["/x/c/syncthing/config.xml", "/x/s/syncthing/config.xml"])
        // The legacy location wins only when a config.xml exists there.
        #expect(try SyncthingConfigFile.locate(environment: ["HOME": "/h"], exists: { $0 == "/h/.local/state/syncthing/config.xml" }) == "/h/.local/state/syncthing/config.xml")
        #expect(try SyncthingConfigFile.locate(environment: ["HOME": "/h"], exists: { $0.hasPrefix("/h/") }) == "/h/.config/syncthing/config.xml")
        #expect(try SyncthingConfigFile.locate(environment: ["HOME": "/h"], exists: { $0 == "/var/lib/syncthing/config.xml" }) == "/var/lib/syncthing/config.xml")
        #expect(try SyncthingConfigFile.locate(environment: ["HOME": "/h"], exists: { _ in false }) == nil)
        // An explicit SYNCTHING_CONFIG must exist; nothing else is tried.
        #expect(try SyncthingConfigFile.locate(environment: ["SYNCTHING_CONFIG": "/e/config.xml"], exists: { $0 == "/e/config.xml" }) == "/e/config.xml")
        #expect(throws: SyncthingConfigFile.LocateError.self) { try SyncthingConfigFile.locate(environment: ["SYNCTHING_CONFIG": "/e/config.xml", "HOME": "/h"], exists: { $0.hasPrefix("/h") }) }
    }

    @Test func theRESTURLIsInferredFromTheGUIAddress() throws {
        #expect(try SyncthingConfigFile.inferURL(address: "127.0.0.1:8384", tls: false) == "http://127.0.0.1:8384")
        #expect(try SyncthingConfigFile.inferURL(address: "0.0.0.0:8384", tls: true) == "https://127.0.0.1:8384")
        #expect(try SyncthingConfigFile.inferURL(address: "[::]:9000", tls: false) == "http://127.0.0.1:9000")
        #expect(try SyncthingConfigFile.inferURL(address: ":8384", tls: false) == "http://127.0.0.1:8384")
        #expect(try SyncthingConfigFile.inferURL(address: "", tls: false) == "http://127.0.0.1:8384")
        #expect(try SyncthingConfigFile.inferURL(address: "[::1]:8384", tls: false) == "http://[::1]:8384")
        #expect(try SyncthingConfigFile.inferURL(address: "syncthing:8384", tls: false) == "http://syncthing:8384")
        #expect(try SyncthingConfigFile.inferURL(address: "https://st.lan:8443/", tls: false) == "https://st.lan:8443")
        #expect(throws: SyncthingConfigFile.AddressProblem.unixSocket) { try SyncthingConfigFile.inferURL(address: "/run/st.sock", tls: false) }
        #expect(throws: SyncthingConfigFile.AddressProblem.unixSocket) { try SyncthingConfigFile.inferURL(address: "unix:///run/st.sock", tls: false) }
        #expect(throws: SyncthingConfigFile.AddressProblem.malformed) { try SyncthingConfigFile.inferURL(address: "127.0.0.1", tls: false) }
        #expect(throws: SyncthingConfigFile.AddressProblem.malformed) { try SyncthingConfigFile.inferURL(address: "127.0.0.1:99999", tls: false) }
    }

    @Test func theGUISectionIsReadFromConfigXML() {
        let xml = #"<configuration version="36"><device id="X"><address>dynamic</address></device><gui enabled="true" tls="TRUE"><address> 0.0.0.0:8384 </address><apikey>k3y</apikey></gui></configuration>"#
        #expect(SyncthingConfigFile.parseGUI(Data(xml.utf8)) == SyncthingConfigFile.GUI(enabled: true, tls: true, address: "0.0.0.0:8384", apiKey: "k3y"))
        #expect(SyncthingConfigFile.parseGUI(Data("<configuration><gui enabled=\"false\"/></configuration>".utf8))?.enabled == false)
        #expect(SyncthingConfigFile.parseGUI(Data("not xml".utf8)) == nil)
        #expect(SyncthingConfigFile.parseGUI(Data("<configuration><options/></configuration>".utf8)) == nil)
    }

    /// Regression (found by `job-bench fuzz`): an element name that is not UTF-8 made Foundation's XMLParser
    /// trap, killing the pass; such a file is now refused as unreadable.
    @Test func aConfigXMLThatIsNotUTF8IsRefusedNotACrash() {
        let bytes = Array("<configuration><gui><address>127.0.0.1:8384</address></gui><".utf8) + [0xfe, 0xbf] + Array("K/></configuration>".utf8)
        #expect(SyncthingConfigFile.parseGUI(Data(bytes)) == nil)
        let latin1 = Array(#"<?xml version="1.0" encoding="ISO-8859-1"?><configuration><gui><address>127.0.0.1:8384</address><apikey>k"#.utf8) + [0xe9]
            + Array("</apikey></gui></configuration>".utf8)
        #expect(SyncthingConfigFile.parseGUI(Data(latin1)) == nil)
        // A processing instruction without data made XMLParser dereference NULL; only the declaration is allowed.
        #expect(SyncthingConfigFile.parseGUI(Data("<?xm?><configuration><gui><address>127.0.0.1:8384</address></gui></configuration>".utf8)) == nil)
        #expect(SyncthingConfigFile.parseGUI(Data("<configuration><?x?><gui><address>a:1</address></gui></configuration>".utf8)) == nil)
        let declared = #"<?xml version="1.0" encoding="UTF-8"?><configuration><gui><address>127.0.0.1:8384</address></gui></configuration>"#
        #expect(SyncthingConfigFile.parseGUI(Data(declared.utf8))?.address == "127.0.0.1:8384")
    }

    @Test func relayAnswersAreClassifiedAsTheSeedsTableSays() {
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        let ms = now.unixMilliseconds
        #expect(RelayAnswer.classify(status: 202, retryAfter: nil, now: now) == .sent)
        for status in [400, 401, 402, 403] { #expect(RelayAnswer.classify(status: status, retryAfter: nil, now: now) == .subscriptionInactive) }
        #expect(RelayAnswer.classify(status: 404, retryAfter: nil, now: now) == .notFound)
        #expect(RelayAnswer.classify(status: 429, retryAfter: "120", now: now) == .rateLimited(untilMilliseconds: ms + 120_000))
        // now is 2026-05-28T20:26:40Z; an HTTP-date five minutes later.
        #expect(RelayAnswer.classify(status: 429, retryAfter: "Thu, 28 May 2026 20:31:40 GMT", now: now) == .rateLimited(untilMilliseconds: ms + 300_000))
        #expect(RelayAnswer.classify(status: 429, retryAfter: "soon", now: now) == .rateLimited(untilMilliseconds: ms + 30_000))
        #expect(RelayAnswer.classify(status: 429, retryAfter: nil, now: now) == .rateLimited(untilMilliseconds: ms + 30_000))
        for status in [500, 502, 503, 200, 301, 409] { #expect(RelayAnswer.classify(status: status, retryAfter: nil, now: now) == .transient) }
    }

    @Test func theGateSkipsWithoutTouchingTheNetworkForEachStoredReason() {
        let cadence = 21_600
        var state = RetriggerState()
        #expect(state.skipReason(now: 0, cadenceSeconds: 0) == .disabled)
        #expect(state.skipReason(now: 0, cadenceSeconds: cadence) == nil)
        state = state.after(.sent, now: 1_000, cadenceSeconds: cadence)
        #expect(state.skipReason(now: 1_000 + 21_599_999, cadenceSeconds: cadence) == .cadence)
        #expect(state.skipReason(now: 1_000 + 21_600_000, cadenceSeconds: cadence) == nil)
        state = state.after(.subscriptionInactive, now: 30_000_000, cadenceSeconds: cadence)
        #expect(state.skipReason(now: 30_000_000 + 21_599_999, cadenceSeconds: cadence) == .subscriptionInactive)
        state = state.after(.rateLimited(untilMilliseconds: 60_000_000), now: 52_000_000, cadenceSeconds: cadence)
        #expect(state.skipReason(now: 59_999_999, cadenceSeconds: cadence) == .backoff)
        #expect(state.skipReason(now: 60_000_000, cadenceSeconds: cadence) == nil)
        // Transient back-off doubles per failed pass and is capped at the cadence.
        #expect(RetriggerState.transientBackoffMilliseconds(failures: 1, cadenceSeconds: cadence) == 60_000)
        #expect(RetriggerState.transientBackoffMilliseconds(failures: 3, cadenceSeconds: cadence) == 240_000)
        #expect(RetriggerState.transientBackoffMilliseconds(failures: 30, cadenceSeconds: cadence) == 21_600_000)
        state = state.after(.transient, now: 70_000_000, cadenceSeconds: cadence).after(.transient, now: 70_200_000, cadenceSeconds: cadence)
        #expect(state.transientFailures == 2 && state.backoffUntilAt == 70_200_000 + 120_000)
        #expect(state.after(.sent, now: 80_000_000, cadenceSeconds: cadence).transientFailures == 0)
    }
}
