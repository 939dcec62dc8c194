import CShims
import Foundation

/// What `job --version` and `job version` report: this program's version and the libraries it runs on.
package enum BuildInfo {
    /// The program's version.
    package static let version = "0.1.0"

    /// The commit the binary was built from, when the build recorded one (`JOB_BUILD_COMMIT` at build time is not
    /// available to SwiftPM, so a `BUILD_COMMIT` file next to the binary is read instead; nil when absent).
    package static func commit(executablePath: String) -> String? {
        let path = (executablePath as NSString).deletingLastPathComponent + "/BUILD_COMMIT"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let commit = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (7...64).contains(commit.count), commit.allSatisfy(\.isHexDigit) else { return nil }
        return commit
    }

    /// The Swift compiler the binary was built with.
    package static var swift: String {
        #if compiler(>=6.4)
        return "6.4 or later"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }

    /// The linked libraries and their run-time versions.
    package static var libraries: [(name: String, version: String)] {
        [("sqlite", String(cString: shim_sqlite_version())), ("openssl", String(cString: shim_openssl_version())),
         ("curl", String(cString: shim_curl_version()))]
    }
}
