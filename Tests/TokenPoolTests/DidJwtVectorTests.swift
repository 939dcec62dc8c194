import Cryptography
import Testing
@testable import TokenPool

/// The did-jwt vectors of docs/protocols/jwt-pool.md, through the signing path `mint-pool` uses (`DayTokenMinter`).
@Suite(.timeLimit(.minutes(15))) struct DidJwtVectorTests {
    static let vectorKey = "278a5de700e29faae8e40e366ec5012b5ec63d36ec77e8a2417154cc1d25383f"

    static func minter(_ hex: String) throws -> DayTokenMinter {
        DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(hex))))
    }

    @Test func theES256KSignerVectorMatchesByteForByte() throws {
        let key = try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(Self.vectorKey)))
        let signature = try key.signature(for: Array("thequickbrownfoxjumpedoverthelazyprogrammer".utf8))
        #expect(Base64URL.encode(signature) == "jsvdLwqr-O206hkegoq6pbo7LJjCaflEKHCvfohBP9U2H9EZ5Jsw0CncN17WntoUEGmxaZVF2zQjtUEXfhdyBg")
        #expect(Hex.encode(key.publicKey(compressed: true)) == "03fdd57adec3d438ea237fe46b33ee1e016eda6b585c3e27ea66686c2ea5358479")
        #expect(try DidJwtVectorTests.minter(Self.vectorKey).issuer.lowercased() == "did:ethr:0xf3beac30c498d9e26865f34fcaa57dbb935b0d74")
    }

    @Test func theJWSVectorComesOutOfTheMintersSigningPath() throws {
        let minter = try Self.minter(Self.vectorKey)
        let token = try minter.sign(headerJSON: Array(#"{"alg":"ES256K"}"#.utf8), payloadJSON: Array(#"{"some":"data"}"#.utf8))
        #expect(token == "eyJhbGciOiJFUzI1NksifQ.eyJzb21lIjoiZGF0YSJ9.dblNz-7BVLknOFIBPmt5VTG0MDls_Q69WI8OfQuqNdUp4y50-b8Ubn0xujm1ijfmfqRunpks5TyWqgMsQkR_GQ")
    }

    @Test func endorsersTestIdentityDerivesItsChecksummedDID() throws {
        let minter = try Self.minter("2b6472c026ec2aa2c4235c994a63868fc9212d18b58f6cbfe861b52e71330f5b")
        #expect(minter.issuer == "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F")
    }

    @Test func keccakOfTheEmptyStringIsEthereumsNotSHA3() {
        #expect(Hex.encode(Keccak256.hash([])) == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
    }

    @Test func theHeaderIsCreateJWTsES256KHeader() {
        #expect(Base64URL.encode(DayTokenClaims.headerJSON) == "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NksifQ")
    }

    @Test func thePayloadIsJSONStringifyOrderWithIssLast() throws {
        // The reference's example: minted 2025-12-31T00:00Z for the day 2026-01-01, slack 300 s.
        let day = PoolCalendar.day(year: 2026, month: 1, day: 1)
        let window = DayWindow(day: day, slackSeconds: 300)
        let issuer = "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F"
        let payload = DayTokenClaims.payloadJSON(issuedAt: 1_767_139_200, window: window, issuer: issuer)
        #expect(String(decoding: payload, as: UTF8.self)
                == #"{"iat":1767139200,"exp":1767312300,"nbf":1767225300,"iss":"did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F"}"#)
    }

    @Test func aPoolTokenIsHeaderPayloadAndADeterministicLowSSignature() throws {
        let minter = try Self.minter("2b6472c026ec2aa2c4235c994a63868fc9212d18b58f6cbfe861b52e71330f5b")
        let window = DayWindow(day: PoolCalendar.day(year: 2026, month: 1, day: 1), slackSeconds: 300)
        let token = try minter.token(for: window, issuedAt: 1_767_139_200)
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(parts[0] == "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NksifQ")
        #expect(try Base64URL.decode(parts[1]) == DayTokenClaims.payloadJSON(issuedAt: 1_767_139_200, window: window, issuer: minter.issuer))
        #expect(parts[2].count == 86)
        // Deterministic (RFC 6979): the same key, payload and time give the same bytes.
        #expect(try minter.token(for: window, issuedAt: 1_767_139_200) == token)
        // Low S: s ≤ n/2.
        let s = Array(try Base64URL.decode(parts[2])[32...])
        let halfOrder = try Hex.decode("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0")
        #expect(s.lexicographicallyPrecedes(halfOrder) || s == halfOrder)
        let inspection = try DayTokenInspection(token: token, expectedIssuer: minter.issuer)
        #expect(inspection.notBefore == 1_767_225_300 && inspection.expires == 1_767_312_300)
    }
}
