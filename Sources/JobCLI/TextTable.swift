/// Left-aligned columns separated by two spaces.
enum TextTable {
    static func render(_ rows: [[String]]) -> String {
        guard let columns = rows.map(\.count).max() else { return "" }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in i == row.count - 1 ? cell : cell.padded(to: widths[i] + 2) }.joined()
        }.joined(separator: "\n") + "\n"
    }
}
