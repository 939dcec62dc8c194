/// The authenticated trigger (v2) wire format: the request body, the signed message and each refusal's answer,
/// shared by the relay (which checks) and the homeserver helper (which signs). Specified in
/// docs/protocols/trigger-v2.md.
package enum TriggerV2 {
    /// The HTTP path of the v2 trigger route.
    package static let path = "/api/v2/trigger"
    /// The route as it is signed: method, one space, path.
    package static let signedRoute = "POST /api/v2/trigger"
    /// The domain-separation prefix of every signed message (26 bytes, ending in a line feed).
    package static let domain = "backgroundjobs-trigger-v2\n"
    /// Nonce length in bytes.
    package static let nonceCount = 16
    /// How far (milliseconds) a request's timestamp may be from the relay's clock, either way.
    package static let windowMilliseconds: Int64 = 120_000
    /// The largest accepted request body.
    package static let maximumBodyCount = 8192
    /// The largest accepted signature (an RSA-4096 signature is 512 bytes).
    package static let maximumSignatureCount = 512
    /// The five members of a request, all JSON strings; no others are allowed.
    package static let members: Set<String> = ["device_id", "cert", "ts", "nonce", "sig"]

    /// A syntactically valid v2 request; nothing in it has been checked against the store or verified yet.
    package struct Request: Sendable, Equatable {
        /// The Device ID in canonical form (as signed).
        package let deviceID: String
        package let certificateDER: [UInt8]
        /// The timestamp as sent (decimal Unix seconds, as signed) and its value in milliseconds.
        package let timestampText: String
        package let timestampMilliseconds: Int64
        package let nonce: [UInt8]
        package let signature: [UInt8]

        /// The bytes the signature must cover.
        package var signedMessage: [UInt8] { TriggerV2.message(deviceID: deviceID, timestamp: timestampText, nonce: nonce) }
    }

    /// Why a v2 request was refused: each has one HTTP status and one `error` word.
    package enum Refusal: Error, Equatable, Sendable, CaseIterable {
        case bodyTooLarge, malformedJSON, unexpectedMember, missingMember, badDeviceID, badCertificateEncoding,
             certificateTooLarge, badTimestamp, badNonce, badSignatureEncoding,
             timestampOutOfWindow, certificateMismatch, badCertificate, badSignature, replayedNonce

        /// The HTTP status of the refusal.
        package var status: Int {
            switch self {
            case .bodyTooLarge, .certificateTooLarge: 413
            case .malformedJSON, .unexpectedMember, .missingMember, .badDeviceID, .badCertificateEncoding, .badTimestamp, .badNonce,
                 .badSignatureEncoding, .badCertificate: 400
            case .timestampOutOfWindow, .certificateMismatch, .badSignature: 401
            case .replayedNonce: 409
            }
        }

        /// The `error` word of the refusal's JSON body.
        package var word: String {
            switch self {
            case .bodyTooLarge: "body-too-large"
            case .malformedJSON: "malformed-json"
            case .unexpectedMember: "unexpected-member"
            case .missingMember: "missing-member"
            case .badDeviceID: "bad-device-id"
            case .badCertificateEncoding: "bad-certificate-encoding"
            case .certificateTooLarge: "certificate-too-large"
            case .badTimestamp: "bad-timestamp"
            case .badNonce: "bad-nonce"
            case .badSignatureEncoding: "bad-signature-encoding"
            case .timestampOutOfWindow: "timestamp-out-of-window"
            case .certificateMismatch: "certificate-mismatch"
            case .badCertificate: "bad-certificate"
            case .badSignature: "bad-signature"
            case .replayedNonce: "replayed-nonce"
            }
        }
    }

    /// The signed message: `domain` ‖ field(route) ‖ field(device ID) ‖ field(timestamp) ‖ field(nonce), where
    /// field(x) is x's length as a 4-byte big-endian integer followed by x.
    package static func message(route: String = signedRoute, deviceID: String, timestamp: String, nonce: [UInt8]) -> [UInt8] {
        var out = Array(domain.utf8)
        for part in [Array(route.utf8), Array(deviceID.utf8), Array(timestamp.utf8), nonce] {
            let count = UInt32(part.count)
            out += [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
            out += part
        }
        return out
    }

    /// The syntax stage: the body's size, JSON, members and their encodings, in that order. Nothing else.
    package static func parse(_ body: [UInt8]) throws(Refusal) -> Request {
        guard body.count <= maximumBodyCount else { throw .bodyTooLarge }
        guard let fields = try? StrictJSONObject.strings(body), let names = try? StrictJSONObject.memberNames(body) else {
            throw .malformedJSON
        }
        // A member that is not a string, or not one of the five, is refused: everything a request carries is signed.
        guard names.allSatisfy(members.contains), names.count == fields.count else { throw .unexpectedMember }
        guard let device = fields["device_id"], let cert = fields["cert"], let ts = fields["ts"], let nonceText = fields["nonce"],
              let sigText = fields["sig"] else { throw .missingMember }
        guard isCanonicalDeviceID(device) else { throw .badDeviceID }
        // Base64 of the largest accepted certificate is 4·⌈4096/3⌉ characters; anything longer is over the cap too.
        let certCap = (DeviceCertificate.maximumDERCount + 2) / 3 * 4
        guard cert.utf8.count <= certCap else { throw .certificateTooLarge }
        guard let der = StrictBase64.decode(cert), !der.isEmpty else { throw .badCertificateEncoding }
        guard der.count <= DeviceCertificate.maximumDERCount else { throw .certificateTooLarge }
        guard let seconds = canonicalSeconds(ts) else { throw .badTimestamp }
        guard let nonce = StrictBase64.decode(nonceText, maximumCount: 24), nonce.count == nonceCount else { throw .badNonce }
        guard let signature = StrictBase64.decode(sigText, maximumCount: (maximumSignatureCount + 2) / 3 * 4), !signature.isEmpty else {
            throw .badSignatureEncoding
        }
        return Request(deviceID: device, certificateDER: der, timestampText: ts, timestampMilliseconds: seconds * 1000, nonce: nonce,
                       signature: signature)
    }

    /// The checks after the store's cheap ones, in order: the certificate hashes to the Device ID, parses strictly
    /// with an accepted key, and that key's signature over the signed message verifies.
    package static func authenticate(_ request: Request) throws(Refusal) {
        guard DeviceIDEncoding.of(certificateDER: request.certificateDER) == request.deviceID else { throw .certificateMismatch }
        guard let certificate = try? DeviceCertificate(der: request.certificateDER) else { throw .badCertificate }
        guard certificate.isValidSignature(request.signature, for: request.signedMessage) else { throw .badSignature }
    }

    /// Whether a timestamp (ms) is within the window around `now` (ms).
    package static func isFresh(_ timestampMilliseconds: Int64, now: Int64) -> Bool {
        abs(timestampMilliseconds - now) <= windowMilliseconds
    }

    /// The request body a helper sends: signs the message for `now` (Unix seconds) and `nonce` with `key`.
    package static func body(key: DeviceSigningKey, nowSeconds: Int64, nonce: [UInt8]) throws -> [UInt8] {
        let ts = String(nowSeconds)
        let signature = try key.signature(for: message(deviceID: key.deviceID, timestamp: ts, nonce: nonce))
        // Every value is base64, decimal digits or a Device ID: nothing needs JSON escaping.
        let json = "{\"device_id\":\"\(key.deviceID)\",\"cert\":\"\(StrictBase64.encode(key.certificateDER))\",\"ts\":\"\(ts)\","
            + "\"nonce\":\"\(StrictBase64.encode(nonce))\",\"sig\":\"\(StrictBase64.encode(signature))\"}"
        return Array(json.utf8)
    }

    /// Eight dash-separated groups of seven upper-case base32 characters (63 characters), nothing else.
    package static func isCanonicalDeviceID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 63 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index % 8 == 7 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "2")...UInt8(ascii: "7")).contains(byte) else {
                    return false
                }
            }
        }
        return true
    }

    /// Decimal Unix seconds without sign or leading zeros, 1 to 11 digits; nil otherwise.
    static func canonicalSeconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard (1...11).contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }), bytes.count == 1 || bytes[0] != 0x30 else {
            return nil
        }
        return Int64(text)
    }
}
