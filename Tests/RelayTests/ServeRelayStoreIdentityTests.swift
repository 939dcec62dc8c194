import Foundation
import Testing
import TestSupport

/// `serve-relay` never acknowledges into a store file that is no longer at its path: deleted, replaced by an older
/// copy (a backup restored over it) or with its `-wal` removed, it answers 503 and stops with 73, through the built `job`.
@Suite(.tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct ServeRelayStoreIdentityTests {
    enum Mutation: String, CaseIterable { case deleted, replacedByAnOlderCopy, walDeleted }

    @Test(arguments: Mutation.allCases) func theServerAnswers503AndStopsWhenItsStoreFileIsGone(_ mutation: Mutation) throws {
        let front = try RelayFront(.sqlite, chain: nil)
        defer { front.stop() }
        let store = front.store
        let copy = front.directory.file("older-copy.sqlite")
        if mutation == .replacedByAnOlderCopy {
            #expect(try JobProcess.run(["--store", store, "migrate"], environment: front.environment).exitCode == 0)
            try FileManager.default.copyItem(atPath: store, toPath: copy)
        }
        try front.startServer(["--no-push"])
        let before = try front.send("POST", "/api/v1/trigger", ["device_id": Fixture.deviceID(7)], base: front.directURL)
        #expect(before.status == 403, "answered from the store (no subscription yet)")
        switch mutation {
        case .deleted: #expect(unlink(store) == 0)
        case .replacedByAnOlderCopy: #expect(rename(copy, store) == 0)
        case .walDeleted: #expect(unlink(store + "-wal") == 0)
        }
        let after = try? front.send("POST", "/api/v1/trigger", ["device_id": Fixture.deviceID(7)], base: front.directURL)
        if let after { #expect(after.status == 503 && after.json["error"] as? String == "store-replaced", "\(after.json)") }
        let server = try #require(front.servers.first)
        let deadline = Date().addingTimeInterval(10)
        while server.process.isRunning, Date() < deadline { usleep(20_000) }
        #expect(!server.process.isRunning, "the server stopped by itself")
        let result = try server.wait(timeout: 5)
        #expect(result.exitCode == 73, "\(result.stderr)")
        #expect(result.stderr.contains("no longer the one this server opened"), "\(result.stderr)")
    }

    @Test func aCommandDoesNotCreateANewStoreInAStateDirectoryThatStillHoldsTheKey() throws {
        let state = TemporaryDirectory("state")
        let env = JobProcess.environment(home: state.path, ["STATE_DIRECTORY": state.path])
        #expect(try JobProcess.run(["migrate"], environment: env).exitCode == 0)
        #expect(try JobProcess.run(["relay", "register", "--device-id", Fixture.deviceID(3), "--apns-token", Fixture.token(3), "--environment", "sandbox"],
                                   environment: env).exitCode == 0)
        #expect(FileManager.default.fileExists(atPath: state.file("store.sqlite.key")), "using the store made its key")
        for suffix in ["", "-wal", "-shm"] { unlink(state.file("store.sqlite" + suffix)) }
        let status = try JobProcess.run(["status"], environment: env)
        #expect(status.exitCode == 73, "\(status.stderr)")
        #expect(status.stderr.contains("store file is missing"), "\(status.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state.file("store.sqlite")), "no new empty store took its place")
        #expect(try JobProcess.run(["migrate"], environment: env).exitCode == 0, "job migrate starts a new store deliberately")
        #expect(try JobProcess.run(["status"], environment: env).exitCode == 0)
    }
}
