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
            guard let contents = captured[tree] else { continue }
            let bytes = [UInt8](contents)
            guard let entries = bytes.withUnsafeBytes({ RawTree.entries($0) }) else { continue }
            let large = bytes.count >= Repository.deltaTreeMinimum
            let rewritten = entries.filter { $0.isTree && captured[$0.id(in: bytes)] != nil }
            guard large || !rewritten.isEmpty else { continue }
            let previous = try readObject(before)
            let previousBytes = [UInt8](previous.contents)
            guard previous.type == GIT_OBJECT_TREE,
                  let previousEntries = previousBytes.withUnsafeBytes({ RawTree.entries($0) }) else { continue }
            if large, let edit = RawTree.edit(from: previousBytes, previousEntries, base: before, to: bytes, entries) {
                let written = try storeObject(contents, type: GIT_OBJECT_TREE, editing: edit)
                guard written == tree else {
                    throw GitError(code: .generic, message: "tree \(tree.hex) was stored as \(written.hex)", operation: "storing a tree")
                }
                stored.insert(tree)
            }
            guard !rewritten.isEmpty else { continue }
            var previousFolders: [ArraySlice<UInt8>: ObjectID] = [:]
            for entry in previousEntries where entry.isTree {
                previousFolders[previousBytes[entry.name]] = entry.id(in: previousBytes)
            }
            for entry in rewritten {
                if let folder = previousFolders[bytes[entry.name]] { pending.append((entry.id(in: bytes), folder)) }
            }
        }
        return stored
    }
}
