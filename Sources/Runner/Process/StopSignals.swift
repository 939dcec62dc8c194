import CShims
import Foundation

/// SIGTERM and SIGINT for a command that serves until it is told to stop (`serve-link`, `serve-relay`,
/// `watch-syncthing`): the signal is only recorded, and the command's loop sees it and stops in its own time; a
/// second signal ends the process at once with 75.
package enum StopSignals {
    /// Installs the recording handlers for SIGTERM and SIGINT and unblocks both in this thread: a parent may have
    /// started the process with them blocked (the mask survives exec), and they would then never arrive.
    package static func listen() { shim_install_termination_handlers() }

    /// Whether SIGTERM or SIGINT was heard.
    package static var heard: Bool { shim_termination_signal() != 0 }

    /// Returns once SIGTERM or SIGINT was heard or `stop` (asked every `every` seconds) returns true.
    package static func wait(every seconds: Double, until stop: () -> Bool) {
        while !heard, !stop() { usleep(useconds_t(seconds * 1_000_000)) }
    }
}
