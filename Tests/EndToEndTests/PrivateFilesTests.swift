import Foundation
import Store
import Testing
import TestSupport

/// The store, its WAL, SHM, key and folders are private whatever the umask; the key is never silently replaced.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct PrivateFilesTests {
    let home = TemporaryDirectory("private")
    var store: String { home.path + "/a/b/store.sqlite" }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    func mode(_ path: String) throws -> Int { try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777 }

    func runWithOpenUmask(_ arguments: [String]) throws -> ExternalTool.Result {
        try ExternalTool.run("/bin/sh", ["-c", "umask 000; exec \"$@\"", "sh", JobProcess.executablePath] + arguments, environment: env, separateStderr: true)
    }

    @Test func underAnOpenUmaskTheStoreWALSHMAndKeyAre0600AndCreatedFolders0700() throws {
        let first = try runWithOpenUmask(["--store", store, "identity", "new"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try mode(home.path + "/a") == 0o700)
        #expect(try mode(home.path + "/a/b") == 0o700)
        #expect(try mode(store) == 0o600)
        #expect(try mode(store + ".key") == 0o600)
        // Keep a connection open so the WAL and SHM outlive the pass, then look at them.
        let held = try Database(path: store)
        #expect(try runWithOpenUmask(["--store", store, "maintain-store"]).status == 0)
        #expect(try mode(store + "-wal") == 0o600)
        #expect(try mode(store + "-shm") == 0o600)
        _ = held
    }

    @Test func aKeyFileReadableByGroupOrOthersIsRefusedWith78() throws {
        #expect(try JobProcess.run(["--store", store, "identity", "new"], environment: env).exitCode == 0)
        chmod(store + ".key", 0o640)
        let doctor = try JobProcess.run(["--store", store, "doctor"], environment: env)
        #expect(doctor.exitCode == 78)
        #expect(doctor.stdout.contains("FAIL  store-key: the store key file can be read by its group or others; make it private (chmod 600)"), "\(doctor.stdout)")
        let identity = try JobProcess.run(["--store", store, "identity", "new"], environment: env)
        #expect(identity.exitCode == 78)
        #expect(identity.stderr.contains("can be read by its group or others"), "\(identity.stderr)")
    }

    @Test func aMissingKeyFileOnAStoreHoldingSecretsIsRefusedWith78AndNoNewKeyIsMade() throws {
        #expect(try JobProcess.run(["--store", store, "identity", "new"], environment: env).exitCode == 0)
        try FileManager.default.removeItem(atPath: store + ".key")
        let identity = try JobProcess.run(["--store", store, "identity", "new"], environment: env)
        #expect(identity.exitCode == 78, "\(identity.stderr)")
        #expect(identity.stderr.contains("the store holds secrets but its key file (<store>.key) is missing"), "\(identity.stderr)")
        let doctor = try JobProcess.run(["--store", store, "doctor"], environment: env)
        #expect(doctor.exitCode == 78)
        #expect(doctor.stdout.contains("FAIL  store-key: the store holds secrets"), "\(doctor.stdout)")
        #expect(!FileManager.default.fileExists(atPath: store + ".key"), "no new key file replaced the lost one")
    }
}
