/// State shared by the checks of one `job doctor` run: the context, and per-module state that later checks
/// read from earlier ones (a check skips when what it needs was not found).
public final class DoctorSession {
    public let context: JobContext
    private var states: [ObjectIdentifier: AnyObject] = [:]

    public init(context: JobContext) { self.context = context }

    /// The module's state object of type `T`, created by `make` on first use.
    public func state<T: AnyObject>(_ make: () -> T) -> T {
        if let existing = states[ObjectIdentifier(T.self)] as? T { return existing }
        let created = make()
        states[ObjectIdentifier(T.self)] = created
        return created
    }
}
