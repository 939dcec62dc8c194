import Foundation
import Testing
@testable import Homeserver

/// Which mappings the watcher gives back once started: read-only, file-backed, with no private page.
@Suite(.timeLimit(.minutes(15))) struct ResidentPagesTests {
    static let smaps = """
        55d0c0000000-55d0c0100000 r--p 00000000 08:01 1234   /usr/bin/job
        Rss:                1024 kB
        Anonymous:             0 kB
        55d0c0100000-55d0c0200000 r-xp 00100000 08:01 1234   /usr/bin/job
        Rss:                 512 kB
        Anonymous:             0 kB
        55d0c0200000-55d0c0210000 r--p 00200000 08:01 1234   /usr/bin/job
        Rss:                  64 kB
        Anonymous:            64 kB
        55d0c0210000-55d0c0220000 rw-p 00210000 08:01 1234   /usr/bin/job
        Rss:                  64 kB
        Anonymous:             0 kB
        55d0c1000000-55d0c2000000 rw-p 00000000 00:00 0      [heap]
        Rss:                1380 kB
        Anonymous:          1380 kB
        7f0000000000-7f0000001000 r--p 00000000 00:00 0
        Rss:                   4 kB
        Anonymous:             4 kB
        7f0000001000-7f0000002000 r--s 00000000 08:01 99     /var/lib/store.sqlite
        Rss:                   4 kB
        Anonymous:             0 kB
        7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0      [vdso]
        Rss:                   8 kB
        Anonymous:             0 kB
        """

    @Test func onlyReadOnlyFileMappingsWithoutPrivatePagesAreGivenBack() {
        let mappings = ResidentPages.droppable(smaps: Self.smaps)
        #expect(mappings == [.init(start: 0x55d0c0000000, end: 0x55d0c0100000), .init(start: 0x55d0c0100000, end: 0x55d0c0200000),
                             .init(start: 0x7f0000001000, end: 0x7f0000002000)])
    }

    @Test func aMappingWhoseAnonymousLineIsMissingIsKept() {
        #expect(ResidentPages.droppable(smaps: "7f0000001000-7f0000002000 r-xp 00000000 08:01 99     /lib/x.so\nRss: 4 kB\n").isEmpty)
    }

    /// In this very process: every library's pages given back, the code still runs (pages fault back in).
    @Test func givingThePagesBackInARunningProcessLosesNothing() throws {
        let before = try #require(Self.residentKilobytes())
        #expect(ResidentPages.release() > 10)
        let after = try #require(Self.residentKilobytes())
        #expect(after < before, "\(before) kB → \(after) kB")
        let text = String(decoding: try JSONSerialization.data(withJSONObject: ["ok": [1, 2, 3]]), as: UTF8.self)
        #expect(text == #"{"ok":[1,2,3]}"#)
        #expect(Set((0..<1000).map { $0 % 7 }).count == 7 && Date().timeIntervalSince1970 > 0)
    }

    static func residentKilobytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    }
}
