import Synchronization

/// Set once by whichever thread first finds the server's store file gone from its path; read by every request.
final class StoreGoneFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}
