/// Which remote devices still need data: per shared, unpaused folder (never the device-only aggregate,
/// which Syncthing 1.19 answers with 404 when any folder shared with the device is paused).
struct StalePeerCheck {
    struct Report: Equatable {
        var peersChecked = 0
        var peersBehind = 0
        var foldersChecked = 0
        var foldersUnavailable = 0
        var pausedDevices = 0
        var pausedFolders = 0
    }

    /// Checks every unpaused remote device on every unpaused folder shared with it (restricted to `watched`),
    /// calling `progress(checked, total)` after each (device, folder) completion asked.
    static func run(client: SyncthingClient, watched: Set<String>?,
                    progress: (_ checked: Int, _ total: Int) -> Void = { _, _ in }) throws(SyncthingClient.Failure) -> (myID: String, report: Report) {
        let myID = try client.myID()
        let devices = try client.devices()
        let folders = try client.folders().filter { watched == nil || watched!.contains($0.id) }
        let total = devices.filter { $0.id != myID && !$0.paused }
            .reduce(0) { sum, device in sum + folders.filter { !$0.paused && $0.devices.contains(device.id) }.count }
        var report = Report()
        report.pausedFolders = folders.filter(\.paused).count
        for device in devices where device.id != myID {
            if device.paused { report.pausedDevices += 1; continue }
            let shared = folders.filter { !$0.paused && $0.devices.contains(device.id) }
            guard !shared.isEmpty else { continue }
            report.peersChecked += 1
            var behind = false
            for folder in shared {
                report.foldersChecked += 1
                let answer = try client.completion(device: device.id, folder: folder.id)
                progress(report.foldersChecked, total)
                guard let completion = answer else {
                    report.foldersUnavailable += 1
                    continue
                }
                if completion.isBehind { behind = true }
            }
            if behind { report.peersBehind += 1 }
        }
        return (myID, report)
    }
}
