/// A fan-out folder's new tree, spliced from its old tree's bytes.
///
/// `git_tree_create_updated` rebuilds a folder through a tree builder: each of its 400 entries is
/// parsed, allocated, hashed into a map and sorted again, though only a few change. A 1% sync of
/// 100k items rebuilds 250 such folders, about 100k entries, and that was most of the time its
/// trees took. Here the old tree's bytes are copied in runs, with the changed entries spliced in
/// at their place. The bytes are those `git_tree_create_updated` writes (a test compares them on
/// random updates); anything out of the ordinary (a subfolder, a mode other than a file's, a name
/// this does not vouch for, a removal of a missing name, a name given twice) is left to libgit2,
/// which then also gives the errors.
enum FolderTreeMerge {
    /// The contents of the tree `old` (a tree object's bytes, or empty) with `updates` (single names,
    /// upserted as regular files) applied, and the names whose upsert kept the blob the name held;
    /// nil when libgit2 must do it.
    static func merge(_ old: UnsafeRawBufferPointer, _ updates: [TreeUpdate]) -> (contents: [UInt8], unchanged: [String])? {
        var changes: [(name: [UInt8], blob: ObjectID?)] = []
        changes.reserveCapacity(updates.count)
        for update in updates {
            let name = Array(update.path.utf8)
            guard isPlainName(name) else { return nil }
            switch update {
            case .upsert(_, let blob): changes.append((name, blob))
            case .remove: changes.append((name, nil))
            }
        }
        changes.sort { $0.name.lexicographicallyPrecedes($1.name) }
        for index in changes.indices.dropFirst() where changes[index].name == changes[index - 1].name { return nil }

        var out: [UInt8] = []
        out.reserveCapacity(old.count + changes.count * 64)
        var unchanged: [String] = []
        var next = 0  // the next change to place
        var runStart = 0  // old entries not yet copied start here
        func copyRun(to end: Int) {
            if end > runStart { out.append(contentsOf: old[runStart..<end]) }
        }
        func append(_ name: [UInt8], _ blob: ObjectID) {
            out.append(contentsOf: regularFileMode)
            out.append(contentsOf: name)
            out.append(0)
            out.append(contentsOf: blob.bytes)
        }
        guard let entries = RawTree.entries(old) else { return nil }
        for entry in entries {
            let mode = old[entry.mode]
            guard fileModes.contains(where: { $0.elementsEqual(mode) }) else { return nil }
            let name = old[entry.name]
            let (position, end) = (entry.range.lowerBound, entry.range.upperBound)
            // Changes before this entry are new names; one with its name replaces or removes it.
            while next < changes.count, changes[next].name.lexicographicallyPrecedes(name) {
                guard let blob = changes[next].blob else { return nil }  // removing a missing name
                copyRun(to: position)
                runStart = position
                append(changes[next].name, blob)
                next += 1
            }
            if next < changes.count, changes[next].name.elementsEqual(name) {
                copyRun(to: position)
                runStart = end
                if let blob = changes[next].blob {
                    if blob.bytes.elementsEqual(old[entry.idBytes]) {
                        unchanged.append(String(decoding: name, as: UTF8.self))
                    }
                    append(changes[next].name, blob)
                }
                next += 1
            }
        }
        copyRun(to: old.count)
        for change in changes[next...] {
            guard let blob = change.blob else { return nil }
            append(change.name, blob)
        }
        return (out, unchanged)
    }

    /// The mode of the entries upserts write (`GIT_FILEMODE_BLOB`), with its separator.
    private static let regularFileMode = Array("100644 ".utf8)
    /// The modes of file entries as libgit2 writes them; a folder ("40000") leaves the merge to libgit2.
    private static let fileModes = ["100644", "100755", "120000"].map { Array($0.utf8) }

    /// A name libgit2 accepts in a tree on every platform setting (core.protectNTFS, protectHFS):
    /// ASCII letters, digits and `-_.%+^=@,`, not starting with a dot (which rules out `.`, `..`,
    /// `.git` and its NTFS and HFS+ spellings) and with no `~` (NTFS short names such as `GIT~1`).
    /// Item files (`<escaped id>.json`, see `ItemPath`) are such names; others take libgit2's path.
    static func isPlainName(_ name: [UInt8]) -> Bool {
        guard let first = name.first, first != UInt8(ascii: ".") else { return false }
        return name.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "%"), UInt8(ascii: "+"),
                 UInt8(ascii: "^"), UInt8(ascii: "="), UInt8(ascii: "@"), UInt8(ascii: ","):
                true
            default:
                false
            }
        }
    }
}
