extension String {
    /// This string cut or padded with spaces to exactly `width` characters, for aligned columns.
    ///
    /// Pure Swift: Foundation's `padding(toLength:withPad:startingAt:)` goes through NSString, whose first use costs
    /// `job --help` and `job status` a bridging set-up they otherwise never need; it also counts UTF-16 units where
    /// the column widths here count characters.
    func padded(to width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }
}
