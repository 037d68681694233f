import GitStore

/// `git diff --stat` text, rendered as git's `show_stats` does (diff.c): names C-quoted, the
/// graph scaled to fit `width` columns, a side with no lines drawing nothing, binary files as
/// `Bin <old> -> <new> bytes`. (libgit2's rendering drew a `+` or `-` for a side with no lines.)
enum DiffStatText {
    struct File {
        var path: String
        var counts: FileLineCounts
    }

    static func render(_ files: [File], width requested: Int = 80) -> String {
        guard !files.isEmpty else { return "" }
        let names = files.map { Quoting.cQuoted(Array($0.path.utf8)) }
        var maxChange = 0, maxLength = 0, numberWidth = 0, binWidth = 0
        for (file, name) in zip(files, names) {
            maxLength = max(maxLength, name.count)
            if let sizes = file.counts.binarySizes {
                // "Bin XXX -> YYY bytes"; counts then align with "Bin".
                binWidth = max(binWidth, 14 + decimalWidth(sizes.old) + decimalWidth(sizes.new))
                numberWidth = 3
            } else {
                maxChange = max(maxChange, file.counts.added + file.counts.removed)
            }
        }
        numberWidth = max(numberWidth, decimalWidth(maxChange))
        let width = max(requested, 16 + 6 + numberWidth)
        var graphWidth = maxChange + 4 > binWidth ? maxChange : binWidth - 4
        var nameWidth = maxLength
        if nameWidth + numberWidth + 6 + graphWidth > width {
            if graphWidth > width * 3 / 8 - numberWidth - 6 {
                graphWidth = max(6, width * 3 / 8 - numberWidth - 6)
            }
            if nameWidth > width - numberWidth - 6 - graphWidth {
                nameWidth = width - numberWidth - 6 - graphWidth
            } else {
                graphWidth = width - numberWidth - 6 - nameWidth
            }
        }
        var out = ""
        var insertions = 0, deletions = 0
        for (file, fullName) in zip(files, names) {
            var name = fullName
            var prefix = ""
            if nameWidth < name.count {
                // "...", then the tail of the name from a slash when there is one.
                prefix = "..."
                var tail = String(name.suffix(max(0, nameWidth - 3)))
                if let slash = tail.firstIndex(of: "/") { tail = String(tail[slash...]) }
                name = tail
            }
            let padded = (prefix + name).padding(toLength: max(nameWidth, prefix.count + name.count), withPad: " ", startingAt: 0)
            if let sizes = file.counts.binarySizes {
                out += " \(padded) | " + leftPad("Bin", numberWidth)
                out += sizes.old == 0 && sizes.new == 0 ? "\n" : " \(sizes.old) -> \(sizes.new) bytes\n"
                continue
            }
            var added = file.counts.added, removed = file.counts.removed
            insertions += added
            deletions += removed
            let total = added + removed
            if graphWidth <= maxChange {
                var scaled = scale(total, graphWidth, maxChange)
                if scaled < 2 && added > 0 && removed > 0 { scaled = 2 }
                if added < removed {
                    added = scale(added, graphWidth, maxChange)
                    removed = scaled - added
                } else {
                    removed = scale(removed, graphWidth, maxChange)
                    added = scaled - removed
                }
            }
            out += " \(padded) | " + leftPad(String(total), numberWidth) + (total > 0 ? " " : "")
                + String(repeating: "+", count: added) + String(repeating: "-", count: removed) + "\n"
        }
        return out + summary(files: files.count, insertions: insertions, deletions: deletions)
    }

    /// git's summary line: `1 file changed, 2 insertions(+), 1 deletion(-)`, leaving out a
    /// zero side unless both are zero.
    static func summary(files: Int, insertions: Int, deletions: Int) -> String {
        var line = files == 1 ? " 1 file changed" : " \(files) files changed"
        if insertions > 0 || deletions == 0 { line += insertions == 1 ? ", 1 insertion(+)" : ", \(insertions) insertions(+)" }
        if deletions > 0 || insertions == 0 { line += deletions == 1 ? ", 1 deletion(-)" : ", \(deletions) deletions(-)" }
        return line + "\n"
    }

    /// git's `scale_linear`: at least one column for any change.
    private static func scale(_ value: Int, _ width: Int, _ maxChange: Int) -> Int {
        value == 0 ? 0 : 1 + value * (width - 1) / maxChange
    }

    private static func decimalWidth(_ value: Int) -> Int { String(value).count }

    private static func leftPad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
