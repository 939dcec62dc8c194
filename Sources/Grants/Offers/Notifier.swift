import Runner

/// Raises the local notification for new incoming offers: the `notifications` row is written with the offer; this
/// also runs the notification hook (`NotifyCommand`) with `JOB_NOTIFY_KIND=incoming-offer`.
enum Notifier {
    static func incomingOffers(count: Int, context: JobContext) {
        NotifyCommand.run(kind: "incoming-offer", count: count, context: context)
    }
}
