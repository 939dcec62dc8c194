/// State shared by the checks of one `job doctor` run: the context, and per-module state that later checks
/// read from earlier ones (a check skips when what it needs was not found).
package final class DoctorSession {
    package let context: JobContext
    private var states: [ObjectIdentifier: AnyObject] = [:]

    package init(context: JobContext) { self.context = context }

    /// The module's state object of type `T`, created by `make` on first use.
    package func state<T: AnyObject>(_ make: () -> T) -> T {
        if let existing = states[ObjectIdentifier(T.self)] as? T { return existing }
        let created = make()
        states[ObjectIdentifier(T.self)] = created
        return created
    }
}
