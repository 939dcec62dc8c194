import Runner

/// Raises the local notification for newly received files, as incoming offers do: each file stays new in
/// `job mesh files list` until exported, and the notification hook (`NotifyCommand`) runs with
/// `JOB_NOTIFY_KIND=received-file`.
enum FileNotifier {
    static func receivedFiles(count: Int, context: JobContext) {
        NotifyCommand.run(kind: "received-file", count: count, context: context)
    }
}
