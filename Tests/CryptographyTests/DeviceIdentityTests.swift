import Foundation
import Testing
import TestSupport
@testable import Cryptography

@Suite(.tags(.process), .timeLimit(.minutes(15))) struct DeviceIdentityTests {
    @Test func theDeviceIDOfSyncthingsOwnCertificateIsTheOneSyncthingPrinted() throws {
        let printed = String(decoding: try TriggerV2Fixtures.file("syncthing-p384", "device-id.txt"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let key = try TriggerV2Fixtures.signingKey("syncthing-p384")
        #expect(key.deviceID == printed)
        #expect(DeviceIDEncoding.hasValidCheckCharacters(printed))
    }

    @Test func aFreshSyncthingGenerateAgreesWithOurDeviceID() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("stgen-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/syncthing")
        process.arguments = ["generate", "--home", home.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.environment = ["HOME": home.path, "STNODEFAULTFOLDER": "1"]
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let printed = try #require(output.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "Device ID: ") else { return nil }
            return String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces)
        }.first)
        let key = try DeviceSigningKey(certificatePEM: Array(try Data(contentsOf: home.appendingPathComponent("cert.pem"))),
                                       privateKeyPEM: Array(try Data(contentsOf: home.appendingPathComponent("key.pem"))))
        #expect(key.deviceID == printed)
        #expect(key.certificate.keyType == .ecdsaP384)
    }

    @Test func theVectorDeviceIDsAreTheCertificatesOwn() throws {
        let (_, ids, _) = try TriggerV2Fixtures.vectors()
        for name in TriggerV2Fixtures.keyNames {
            #expect(try TriggerV2Fixtures.signingKey(name).deviceID == ids[name], "\(name)")
        }
    }

    @Test func aWrongCheckCharacterIsDetected() throws {
        let id = try TriggerV2Fixtures.signingKey("openssl-p256").deviceID
        var characters = Array(id)
        // Position 13 (counting dashes: group 2, character 6) is the first group's check character.
        let checkIndex = 15
        characters[checkIndex] = characters[checkIndex] == "A" ? "B" : "A"
        #expect(!DeviceIDEncoding.hasValidCheckCharacters(String(characters)))
        #expect(DeviceIDEncoding.hasValidCheckCharacters(id))
    }

    @Test func base32WithoutPaddingMatchesRFC4648() {
        // RFC 4648 §10 vectors, padding removed.
        let cases: [(String, String)] = [("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"),
                                         ("foobar", "MZXW6YTBOI")]
        for (plain, encoded) in cases {
            #expect(String(decoding: DeviceIDEncoding.base32NoPadding(bytes(plain)), as: UTF8.self) == encoded)
        }
    }

    @Test func eachKeyTypeSignsAndVerifiesAndRefusesATamperedMessage() throws {
        let expected: [String: DeviceCertificate.KeyType] = ["syncthing-p384": .ecdsaP384, "openssl-p256": .ecdsaP256,
                                                             "openssl-rsa3072": .rsaPKCS1]
        for name in TriggerV2Fixtures.keyNames {
            let key = try TriggerV2Fixtures.signingKey(name)
            #expect(key.certificate.keyType == expected[name])
            let message = bytes("a message")
            let signature = try key.signature(for: message)
            #expect(signature.count == key.certificate.signatureCount)
            #expect(key.certificate.isValidSignature(signature, for: message))
            #expect(!key.certificate.isValidSignature(signature, for: bytes("b message")))
            #expect(!key.certificate.isValidSignature(flippingBit(signature, at: 5), for: message))
            #expect(!key.certificate.isValidSignature(Array(signature.dropLast()), for: message))
        }
        #expect(try TriggerV2Fixtures.signingKey("openssl-rsa3072").certificate.signatureCount == 384)
    }

    @Test func aPrivateKeyThatIsNotTheCertificatesIsRefused() throws {
        #expect(throws: CryptoError.invalidKey("the private key is not the certificate's")) {
            try DeviceSigningKey(certificatePEM: TriggerV2Fixtures.file("syncthing-p384", "cert.pem"),
                                 privateKeyPEM: TriggerV2Fixtures.file("openssl-p256", "key.pem"))
        }
        #expect(throws: CryptoError.self) {
            try DeviceSigningKey(certificatePEM: bytes("not a pem"), privateKeyPEM: TriggerV2Fixtures.file("openssl-p256", "key.pem"))
        }
    }

    @Test func strictDERRefusesTrailingBytesTruncationAndNonMinimalLengths() throws {
        let der = try TriggerV2Fixtures.signingKey("syncthing-p384").certificateDER
        #expect(throws: CryptoError.self) { try DeviceCertificate(der: der + [0]) }
        #expect(throws: CryptoError.self) { try DeviceCertificate(der: Array(der.dropLast())) }
        #expect(throws: CryptoError.self) { try DeviceCertificate(der: []) }
        // The outer length rewritten in a longer (non-minimal) form: 30 82 LL LL → 30 83 00 LL LL.
        #expect(der[1] == 0x82)
        let longForm: [UInt8] = [0x30, 0x83, 0x00] + Array(der[2...])
        #expect(throws: CryptoError.self) { try DeviceCertificate(der: Array(longForm)) }
        // Indefinite length.
        #expect(throws: CryptoError.self) { try DeviceCertificate(der: [0x30, 0x80] + Array(der[4...]) + [0, 0]) }
        #expect(throws: CryptoError.self) { try DeviceCertificate(der: [UInt8](repeating: 0x30, count: 5000)) }
        #expect(try DeviceCertificate(der: der).keyType == .ecdsaP384)
    }

    @Test func aKeyOfAnotherKindIsRefused() throws {
        // A certificate whose key is secp256k1 (EC, but not an accepted curve), made with openssl.
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("k1-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp256k1", "-nodes", "-subj", "/CN=x",
                             "-keyout", home.appendingPathComponent("key.pem").path, "-out", home.appendingPathComponent("cert.pem").path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let pem = Array(try Data(contentsOf: home.appendingPathComponent("cert.pem")))
        let der = try DeviceSigningKey.certificateDER(pem)
        #expect(throws: CryptoError.invalidKey("the certificate's key is not EC P-384, EC P-256 or RSA")) { try DeviceCertificate(der: der) }
    }

    @Test func strictBase64AcceptsOnlyCanonicalText() {
        #expect(StrictBase64.encode(bytes("foobar")) == "Zm9vYmFy")
        #expect(StrictBase64.encode(bytes("fo")) == "Zm8=")
        #expect(StrictBase64.decode("Zm8=") == bytes("fo"))
        #expect(StrictBase64.decode("Zg==") == bytes("f"))
        #expect(StrictBase64.decode("Zh==") == nil)  // non-zero unused bits
        #expect(StrictBase64.decode("Zm9=") == nil)
        #expect(StrictBase64.decode("Zm8") == nil)  // no padding
        #expect(StrictBase64.decode("Zm 8=") == nil)
        #expect(StrictBase64.decode("Zm-_") == nil)  // base64url alphabet
        #expect(StrictBase64.decode("Zg==Zg==") == nil)
        #expect(StrictBase64.decode("") == [])
        for length in 0..<10 {
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(StrictBase64.decode(StrictBase64.encode(data)) == data)
        }
    }
}
