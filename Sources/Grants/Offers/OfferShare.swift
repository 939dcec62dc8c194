/// The share an offer creates on the sender. An offer-created share is never public (docs/protocols/grants-and-link.md §4, step 2): its access
/// is always "approval required", with the target pre-authorized — enforced here and by a CHECK on `held_offers`.
package enum OfferShare {
    /// The only access an offer-created share may have.
    package static let access = "approval-required"
}
