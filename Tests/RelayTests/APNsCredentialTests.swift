import Cryptography
import Foundation
import Runner
import Testing
import TestSupport
@testable import Relay

@Suite(.tags(.process), .timeLimit(.minutes(15))) struct APNsCredentialTests {
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

    @Test func doctorChecksTheAPNsConfigurationOnlyWhereItIsSet() throws {
        let home = TemporaryDirectory("apns-doctor")
        let env = JobProcess.environment(home: home.path)
        let none = try JobProcess.run(["--store", home.file("s.sqlite"), "doctor"], environment: env)
        #expect(none.stdout.contains("skip  send-wakeups: not configured here"), "\(none.stdout)")
        let broken = try JobProcess.run(["--store", home.file("s.sqlite"), "doctor"], environment: env.merging(base) { $1 })
        #expect(broken.exitCode == 78)
        #expect(broken.stdout.contains("FAIL  apns-config: APNS_KEY_FILE is not set"), "\(broken.stdout)")
        try P256PrivateKey.generate().pkcs8PEM.write(toFile: home.file("key.p8"), atomically: true, encoding: .utf8)
        let good = try JobProcess.run(["--store", home.file("s.sqlite"), "doctor"], environment: env.merging(base) { $1 }.merging(["APNS_KEY_FILE": home.file("key.p8")]) { $1 })
        #expect(good.stdout.contains("ok    apns-config: the provider key loads"), "\(good.stdout)")
    }
}
