import Foundation

/// Throwaway certificates made with the `openssl` CLI in a fresh temporary directory (P-256 keys,
/// valid two days). Call `remove()` when done.
///
/// - `caCertificate`: a self-signed test CA.
/// - `serverCertificate`/`serverKey`: issued by that CA to 127.0.0.1 and localhost (SAN).
/// - `clientCertificate`/`clientKey`: issued by that CA for TLS client authentication.
/// - `untrustedCertificate`/`untrustedKey`: self-signed for 127.0.0.1 and localhost; nobody trusts it.
/// - `foreignNameCertificate`/`foreignNameKey`: self-signed, issued only to `syncthing.invalid`, like
///   Syncthing's GUI certificate that names the machine rather than the address used to reach it.
///
/// Self-contained (Foundation only) so it can move into a shared TestSupport target unchanged.
struct TestCertificates: Sendable {
    static let openssl = "/usr/bin/openssl"

    struct CommandFailed: Error, CustomStringConvertible {
        let command: String
        let status: Int32
        var description: String { "\(command) exited with \(status)" }
    }

    let directory: URL
    var caCertificate: String { path("ca.pem") }
    var serverCertificate: String { path("server.pem") }
    var serverKey: String { path("server.key") }
    var clientCertificate: String { path("client.pem") }
    var clientKey: String { path("client.key") }
    var untrustedCertificate: String { path("untrusted.pem") }
    var untrustedKey: String { path("untrusted.key") }
    var foreignNameCertificate: String { path("foreign.pem") }
    var foreignNameKey: String { path("foreign.key") }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func make() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("test-certificates-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificates = TestCertificates(directory: directory)
        do {
            try certificates.generate()
        } catch {
            certificates.remove()
            throw error
        }
        return certificates
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func generate() throws {
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]
        try run(["req", "-x509"] + key + ["-keyout", path("ca.key"), "-out", caCertificate,
                 "-subj", "/CN=BackgroundJobs Test CA",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try run(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", serverKey, "-out", path("server.csr"), "-subj", "/CN=localhost"])
        try Data("""
            subjectAltName=IP:127.0.0.1,DNS:localhost
            basicConstraints=CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth

            """.utf8).write(to: directory.appendingPathComponent("server.ext"))
        try run(["x509", "-req", "-in", path("server.csr"), "-CA", caCertificate, "-CAkey", path("ca.key"),
                 "-set_serial", "2", "-days", "2", "-out", serverCertificate, "-extfile", path("server.ext")])
        try run(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", clientKey, "-out", path("client.csr"), "-subj", "/CN=test client"])
        try Data("""
            basicConstraints=CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=clientAuth

            """.utf8).write(to: directory.appendingPathComponent("client.ext"))
        try run(["x509", "-req", "-in", path("client.csr"), "-CA", caCertificate, "-CAkey", path("ca.key"),
                 "-set_serial", "3", "-days", "2", "-out", clientCertificate, "-extfile", path("client.ext")])
        try run(["req", "-x509"] + key + ["-keyout", untrustedKey, "-out", untrustedCertificate, "-subj", "/CN=127.0.0.1",
                 "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        try run(["req", "-x509"] + key + ["-keyout", foreignNameKey, "-out", foreignNameCertificate, "-subj", "/CN=syncthing",
                 "-addext", "subjectAltName=DNS:syncthing.invalid"])
    }

    /// The certificate's public key as a PEM file (`BEGIN PUBLIC KEY`), written beside it; returns the path.
    func publicKeyFile(of certificate: String) throws -> String {
        let output = certificate + ".pub.pem"
        try run(["x509", "-in", certificate, "-pubkey", "-noout", "-out", output])
        return output
    }

    /// `sha256//<base64 of SHA-256 of the DER SubjectPublicKeyInfo>`, computed by the openssl CLI.
    func sha256Pin(of certificate: String) throws -> String {
        let publicKey = try publicKeyFile(of: certificate)
        try run(["pkey", "-pubin", "-in", publicKey, "-outform", "DER", "-out", certificate + ".pub.der"])
        try run(["dgst", "-sha256", "-binary", "-out", certificate + ".pub.sha256", certificate + ".pub.der"])
        let digest = try Data(contentsOf: URL(fileURLWithPath: certificate + ".pub.sha256"))
        return "sha256//" + digest.base64EncodedString()
    }

    private func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestCertificates.openssl)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailed(command: "openssl " + arguments.prefix(2).joined(separator: " "), status: process.terminationStatus)
        }
    }
}
