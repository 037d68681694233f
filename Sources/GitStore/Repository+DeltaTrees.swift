import CLibGit2
import Foundation

extension Repository {
    /// A rewritten tree of at least this many bytes is stored as a delta of the tree it replaces
    /// (``storeLargeTrees(_:from:to:)``): about 400 entries of item files, or 550 fan-out folders.
    static let deltaTreeMinimum = 16 * 1024

    /// Stores each tree of `captured` (new trees by id, their bytes) that replaces a tree of at
    /// least ``deltaTreeMinimum`` bytes on the way from the tree `old` to the tree `new` as a
    /// delta of the tree at its path in `old` (``storeObject(_:type:editing:hashed:)``); returns
    /// the trees stored. The others are left to the caller's pack.
    ///
    /// A collection's tree lists all its items, or all its 4,096 fan-out folders, and a sync
    /// that changes one item writes it anew: 42 bytes an item in a collection of 8,000 items that
    /// is not fanned out, about 220 KB compressed, 127 KB at 100k items fanned out. Stored whole,
    /// a mirror synced every 10 minutes grew by gigabytes a year; as a delta it costs what
    /// changed in it (the whole tree is stored again once a quarter of it has changed, or the
    /// deltas carried with it grow as large as it is).
    func storeLargeTrees(_ captured: [ObjectID: Data], from old: ObjectID?, to new: ObjectID) throws(GitError) -> Set<ObjectID> {
        guard let old else { return [] }
        var stored = Set<ObjectID>()
        // Only the trees rewritten are walked: a tree whose id did not change holds none.
        var pending: [(new: ObjectID, old: ObjectID)] = [(new, old)]
        while let (tree, before) = pending.popLast() {
            guard let contents = captured[tree],
                  let entries = contents.withUnsafeBytes({ RawTree.entries($0) }) else { continue }
            let large = contents.count >= Repository.deltaTreeMinimum
            let rewritten = entries.filter { $0.isTree && captured[$0.id(in: contents)] != nil }
            guard large || !rewritten.isEmpty else { continue }
            let previous = try readObject(before)
            guard previous.type == GIT_OBJECT_TREE,
                  let previousEntries = previous.contents.withUnsafeBytes({ RawTree.entries($0) }) else { continue }
            if large, let edit = RawTree.edit(from: previous.contents, previousEntries, base: before, to: contents, entries) {
                let written = try storeObject(contents, type: GIT_OBJECT_TREE, editing: edit)
                guard written == tree else {
                    throw GitError(code: .generic, message: "tree \(tree.hex) was stored as \(written.hex)", operation: "storing a tree")
                }
                stored.insert(tree)
            }
            guard !rewritten.isEmpty else { continue }
            var previousFolders: [ArraySlice<UInt8>: ObjectID] = [:]
            let previousBytes = [UInt8](previous.contents)
            for entry in previousEntries where entry.isTree {
                previousFolders[previousBytes[entry.name]] = entry.id(in: previous.contents)
            }
            let bytes = [UInt8](contents)
            for entry in rewritten {
                if let folder = previousFolders[bytes[entry.name]] { pending.append((entry.id(in: contents), folder)) }
            }
        }
        return stored
    }
}

/// The entries of a tree object's bytes, each `<mode> <name>\0<20-byte id>`.
enum RawTree {
    /// One entry: where it is in the tree's bytes, where its name is, and whether it is a folder.
    struct Entry {
        let range: Range<Int>
        let name: Range<Int>
        let isTree: Bool

        /// Its object's id, in `tree` (the bytes it was read from).
        func id(in tree: Data) -> ObjectID {
            tree.withUnsafeBytes { ObjectID(digest: Array($0[(range.upperBound - 20)..<range.upperBound])) }
        }
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
    static func edit(from old: Data, _ oldEntries: [Entry], base: ObjectID, to new: Data, _ newEntries: [Entry]) -> ObjectEdit? {
        let oldBytes = [UInt8](old), newBytes = [UInt8](new)
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
        return copies.isEmpty ? nil : ObjectEdit(base: base, baseSize: old.count, copies: copies)
    }
}
