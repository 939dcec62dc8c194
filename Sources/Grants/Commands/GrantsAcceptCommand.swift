import Runner

/// `job grants accept --label LABEL --addr HOST:PORT < bundle`: stores a grant a peer issued to this node, and the contact.
///
/// The label is the local user's and stays theirs; the address is where the peer's `serve-link` listens and is
/// refreshed after every successful connection.
struct GrantsAcceptCommand: Command {
    let path = ["grants", "accept"]
    let summary = "store a grant bundle read on stdin, and remember the peer under LABEL at HOST:PORT"
    let options: [OptionSpec] = [
        .required("--label", "LABEL", "your own name for the peer"),
        .required("--addr", "HOST:PORT", "where the peer's serve-link listens"),
    ]
    let discussion = """
        Reads the one-line bundle printed by 'job grants issue --to <this node's endpoint id>' on the other device.
        Check the printed fingerprint with the other device's 'job node show' out of band.
        """

    func run(_ context: JobContext) throws {
        let label = try LabelRule.validate(try context.arguments.required("--label"))
        let address = try LinkAddress.parseLink(try context.arguments.required("--addr"))
        let input = String(decoding: try context.readInput(), as: UTF8.self)
        let bundle = try GrantBundle(parsing: input)
        let node = try Node(context)
        guard bundle.holder == node.identity.endpoint else {
            throw JobError.badInput("grant-bundle-other-holder", "this grant was issued to another device; ask the peer to issue it to this node's endpoint id ('job node show')")
        }
        guard bundle.issuer != node.identity.endpoint else { throw JobError.badInput("grant-bundle-own", "this grant was issued by this node itself") }
        let maxContacts = try context.settings.int(GrantsSettings.maxContacts)
        try context.database.write { db in
            let contactID = try node.contacts.upsert(bundle.issuer, label: label, address: address.text, maxContacts: maxContacts, now: context.nowMilliseconds)
            try node.held.store(bundle, contactID: contactID, now: context.nowMilliseconds)
        }
        context.logger.info("grant-accepted")
        if context.jsonOutput {
            context.printJSON(["endpoint_id": .string(bundle.issuer.hex), "fingerprint": .string(bundle.issuer.fingerprint), "label": .string(label)])
        } else {
            context.print("remembered \(label) (fingerprint \(bundle.issuer.fingerprint))")
        }
    }
}
