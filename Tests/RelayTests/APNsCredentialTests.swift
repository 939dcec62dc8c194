import Cryptography
import Foundation
import Runner
import Testing
import TestSupport
@testable import Relay

@Suite struct APNsCredentialTests {
    let base = ["APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "TEAM123456", "APNS_TOPIC": "app.example"]

    @Test func theProviderKeyComesFromTheSystemdCredentialWhenAPNSKeyFileIsUnset() throws {
        let credentials = TemporaryDirectory("cred")
        try P256PrivateKey.generate().pkcs8PEM.write(toFile: credentials.file("apns-key"), atomically: true, encoding: .utf8)
        let env = base.merging(["CREDENTIALS_DIRECTORY": credentials.path]) { $1 }
        let configuration = try APNsConfiguration(environment: { env[$0] })
        #expect(configuration.topic == "app.example")
    }

    @Test func withNeitherTheVariableNorTheCredentialTheErrorNamesBoth() {
        let error = #expect(throws: JobError.self) { try APNsConfiguration(environment: { base[$0] }) }
        #expect(error?.exitCode == .configuration)
        #expect(error?.message == "APNS_KEY_FILE is not set (nor a systemd credential apns-key)")
    }
}
