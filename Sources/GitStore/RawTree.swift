/// The entries of a tree object's bytes, each `<mode> <name>\0<20-byte id>`: read to splice a
/// folder's tree (``FolderTreeMerge``) and to store a large one as a delta
/// (``Repository/storeLargeTrees(_:from:to:)``).
enum RawTree {
    /// One entry: where it is in the tree's bytes, where its name is, and whether it is a folder.
    struct Entry {
        let range: Range<Int>
        let name: Range<Int>
        let isTree: Bool

        /// Its mode's digits, in `tree` (the bytes it was read from).
        var mode: Range<Int> { range.lowerBound..<(name.lowerBound - 1) }

        /// Where its object's id is, in the tree's bytes.
        var idBytes: Range<Int> { (range.upperBound - 20)..<range.upperBound }

        /// Its object's id, in `tree` (the bytes it was read from).
        func id(in tree: [UInt8]) -> ObjectID { ObjectID(digest: Array(tree[idBytes])) }
    }

    /// The entries of `tree`, in order; nil when it is not made of well-formed entries.
    static func entries(_ tree: UnsafeRawBufferPointer) -> [Entry]? {
        var entries: [Entry] = []
        entries.reserveCapacity(tree.count / 40)
        var position = 0
        while position < tree.count {
            guard let space = tree[position...].firstIndex(of: 32),
                  let nul = tree[(space + 1)...].firstIndex(of: 0), nul > space + 1, nul + 21 <= tree.count else { return nil }
            // "40000", as git writes a folder's mode.
            let isTree = space - position == 5 && tree[position] == UInt8(ascii: "4")
            entries.append(Entry(range: position..<(nul + 21), name: (space + 1)..<nul, isTree: isTree))
            position = nul + 21
        }
        return entries
    }

    /// How the tree `new` (its bytes and entries) is made from the tree `old` (id `base`): the
    /// entries found byte for byte in both, under the same name, copied (in runs where they
    /// follow each other in both); the rest is new. Nil when nothing is copied.
    static func edit(from oldBytes: [UInt8], _ oldEntries: [Entry], base: ObjectID, to newBytes: [UInt8], _ newEntries: [Entry]) -> ObjectEdit? {
        var byName: [ArraySlice<UInt8>: Range<Int>] = [:]
        byName.reserveCapacity(oldEntries.count)
        for entry in oldEntries { byName[oldBytes[entry.name]] = entry.range }
        var copies: [ObjectCopy] = []
        for entry in newEntries {
            guard let range = byName[newBytes[entry.name]], oldBytes[range].elementsEqual(newBytes[entry.range]) else { continue }
            if let last = copies.last, last.target + last.count == entry.range.lowerBound, last.source + last.count == range.lowerBound {
                copies[copies.count - 1].count += range.count
            } else {
                copies.append(ObjectCopy(target: entry.range.lowerBound, source: range.lowerBound, count: range.count))
            }
        }
        return copies.isEmpty ? nil : ObjectEdit(base: base, baseSize: oldBytes.count, copies: copies)
    }
}
