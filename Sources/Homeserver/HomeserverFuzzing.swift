import Foundation
import HTTPClient

/// The homeserver helper's decoders of outside bytes, as one public table for `job-bench fuzz` and the fuzz tests.
///
/// Each entry decodes one input the way the module does when the bytes arrive (Syncthing's config.xml, the
/// Syncthing REST answers and event stream, the relay's health answer and `Retry-After`) and returns whether it was accepted;
/// rejection is a normal outcome, a crash or a hang is a finding. `seeds` are well-formed examples for a mutation
/// fuzzer to start from.
package enum HomeserverFuzzing {
    package struct Decoder: Sendable {
        package let name: String
        package let seeds: [[UInt8]]
        package let decode: @Sendable ([UInt8]) -> Bool
    }

    static let deviceID = "MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-BONSGYY-LTMRWAD"
    static let fixedNow = Date(timeIntervalSince1970: 1_780_000_000)

    package static let decoders: [Decoder] = [
        Decoder(name: "syncthing config.xml", seeds: [
            Array("""
                <configuration version="37"><folder id="abcd-1234" path="/data"><device id="\(deviceID)"></device></folder>
                <gui enabled="true" tls="false" debugging="false"><address>127.0.0.1:8384</address><apikey>k3yK3yk3yK3y</apikey><theme>default</theme></gui>
                <options><listenAddress>default</listenAddress></options></configuration>
                """.utf8),
            Array(#"<?xml version="1.0"?><configuration><gui tls="true"><address>/run/st.sock</address><apikey> a </apikey></gui></configuration>"#.utf8),
            Array(#"<!DOCTYPE c [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><configuration><gui><address>&b;</address><apikey>&a;</apikey></gui></configuration>"#.utf8),
        ], decode: { bytes in
            guard let gui = SyncthingConfigFile.parseGUI(Data(bytes)) else { return false }
            return (try? SyncthingConfigFile.inferURL(address: gui.address, tls: gui.tls)) != nil
        }),
        Decoder(name: "syncthing /rest/system/status", seeds: [
            Array(#"{"myID":"\#(deviceID)","uptime":10,"alloc":123}"#.utf8), Array(#"{"myID":"x"}"#.utf8),
        ], decode: { (try? SyncthingClient.myID(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/config/devices", seeds: [
            Array(#"[{"deviceID":"\#(deviceID)","name":"a","paused":false},{"deviceID":"\#(deviceID)","paused":true}]"#.utf8),
        ], decode: { (try? SyncthingClient.devices(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/config/folders", seeds: [
            Array(#"[{"id":"abcd-1234","label":"Vault","paused":false,"devices":[{"deviceID":"\#(deviceID)"},{"deviceID":"X"}]}]"#.utf8),
        ], decode: { (try? SyncthingClient.folders(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/db/completion", seeds: [
            Array(#"{"completion":100,"globalBytes":1024,"needBytes":0,"needDeletes":0,"needItems":0,"remoteState":"valid","sequence":12}"#.utf8),
            Array(#"{"needBytes":1e300,"needDeletes":-1,"needItems":9223372036854775807}"#.utf8),
        ], decode: { (try? SyncthingClient.completion(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/system/connections", seeds: [
            Array(#"{"connections":{"\#(deviceID)":{"connected":true,"paused":false,"address":"1.2.3.4:22000"}},"total":{"inBytesTotal":1}}"#.utf8),
        ], decode: { (try? SyncthingClient.connectedDevices(SyncthingClient.parse($0))) != nil }),
        Decoder(name: "syncthing /rest/events", seeds: [
            Array(#"[{"id":7,"globalID":70,"type":"LocalIndexUpdated","data":{"folder":"abcd-1234","items":1,"sequence":12,"version":12}}]"#.utf8),
            Array(#"[{"id":8,"type":"FolderCompletion","data":{"completion":50,"device":"\#(deviceID)","folder":"abcd-1234","needBytes":5,"needDeletes":0,"needItems":1,"sequence":3}},{"id":9,"type":"StateChanged","data":{}}]"#.utf8),
        ], decode: { SyncthingEvent.decode(SyncthingClient.parse($0)) != nil }),
        Decoder(name: "relay /api/v1/health", seeds: [Array(#"{"status":"ok","version":"1.2.0"}"#.utf8)],
                decode: { RelayClient.isHealthyAnswer(status: 200, body: $0) }),
        Decoder(name: "Retry-After (relay 429)", seeds: [Array("120".utf8), Array("Wed, 21 Oct 2026 07:28:00 GMT".utf8), Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8)],
                decode: { bytes in
                    guard case .rateLimited = RelayAnswer.classify(status: 429, retryAfter: String(decoding: bytes, as: UTF8.self), now: fixedNow) else { return false }
                    return RetryAfter.parse(String(decoding: bytes, as: UTF8.self), now: fixedNow) != nil
                }),
    ]
}
