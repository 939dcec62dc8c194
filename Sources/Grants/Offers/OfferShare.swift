/// The share an offer creates on the sender. An offer-created share is never public (docs/protocols/grants-and-link.md §4, step 2): its access
/// is always "approval required", with the target pre-authorized — enforced here and by a CHECK on `held_offers`.
public enum OfferShare {
    /// The only access an offer-created share may have.
    public static let access = "approval-required"
}
