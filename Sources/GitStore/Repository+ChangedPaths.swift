import CLibGit2
import Foundation

extension Repository {
    /// The paths of the files (blobs, links, submodules) that differ between trees `old` and
    /// `new`, in git's path order: added, removed, or with another id or mode. Subtrees with the
    /// same id on both sides are not read, so the work grows with what changed, as git's
    /// `diff-tree` does; libgit2's tree diff walks every file of both trees (50 ms for two
    /// 100k-item snapshots that differ in nothing). Trees are taken to be in git's order, as
    /// git and libgit2 write them (`git fsck` calls another order an error).
    /// A name that is not UTF-8 is shown with U+FFFD (``changedPathBytes(_:_:)`` has its bytes).
    public func changedPaths(_ old: ObjectID, _ new: ObjectID) throws(GitError) -> [String] {
        try changedPathBytes(old, new).map { String(decoding: $0, as: UTF8.self) }
    }

    /// ``changedPaths(_:_:)`` as the bytes the trees hold.
    func changedPathBytes(_ old: ObjectID, _ new: ObjectID) throws(GitError) -> [[UInt8]] {
        var paths: [[UInt8]] = []
        var prefix: [UInt8] = []
        try collectChanges(old, new, prefix: &prefix, into: &paths)
        return paths
    }

    private func lookUpTree(_ id: ObjectID?) throws(GitError) -> OpaquePointer? {
        guard var oid = id?.raw else { return nil }
        return try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
    }

    private func collectChanges(_ old: ObjectID?, _ new: ObjectID?, prefix: inout [UInt8], into paths: inout [[UInt8]]) throws(GitError) {
        guard old != new else { return }
        let oldTree = try lookUpTree(old)
        defer { if let oldTree { git_tree_free(oldTree) } }
        let newTree = try lookUpTree(new)
        defer { if let newTree { git_tree_free(newTree) } }
        let oldCount = oldTree.map { git_tree_entrycount($0) } ?? 0
        let newCount = newTree.map { git_tree_entrycount($0) } ?? 0
        var oldIndex = 0, newIndex = 0
        while oldIndex < oldCount || newIndex < newCount {
            let oldEntry = oldIndex < oldCount ? git_tree_entry_byindex(oldTree, oldIndex) : nil
            let newEntry = newIndex < newCount ? git_tree_entry_byindex(newTree, newIndex) : nil
            let order: Int32
            if let oldEntry, let newEntry {
                order = Self.gitOrder(oldEntry, newEntry)
            } else {
                order = oldEntry == nil ? 1 : -1
            }
            let left = order <= 0 ? oldEntry : nil
            let right = order >= 0 ? newEntry : nil
            if order <= 0 { oldIndex += 1 }
            if order >= 0 { newIndex += 1 }
            if let left, let right, git_tree_entry_filemode(left) == git_tree_entry_filemode(right),
               git_oid_equal(git_tree_entry_id(left), git_tree_entry_id(right)) != 0 {
                continue
            }
            let entry = (left ?? right)!
            let length = prefix.count
            defer { prefix.removeSubrange(length...) }
            prefix.append(contentsOf: UnsafeRawBufferPointer(start: git_tree_entry_name(entry), count: strlen(git_tree_entry_name(entry))))
            if git_tree_entry_type(entry) == GIT_OBJECT_TREE {
                prefix.append(UInt8(ascii: "/"))
                try collectChanges(left.map { ObjectID(git_tree_entry_id($0)) }, right.map { ObjectID(git_tree_entry_id($0)) },
                                   prefix: &prefix, into: &paths)
            } else {
                paths.append(prefix)
            }
        }
    }

    /// How two entries of trees compare in git's order: names as bytes, a tree's as if it ended
    /// in `/` (negative when `a` comes first, 0 for the same name and kind).
    private static func gitOrder(_ a: OpaquePointer, _ b: OpaquePointer) -> Int32 {
        let (nameA, nameB) = (git_tree_entry_name(a)!, git_tree_entry_name(b)!)
        var index = 0
        while nameA[index] != 0, nameA[index] == nameB[index] { index += 1 }
        func next(_ name: UnsafePointer<CChar>, _ entry: OpaquePointer) -> Int32 {
            let byte = UInt8(bitPattern: name[index])
            return byte != 0 ? Int32(byte) : git_tree_entry_type(entry) == GIT_OBJECT_TREE ? Int32(UInt8(ascii: "/")) : 0
        }
        // Past the common part: a name that ended continues with `/` when it is a tree's.
        return next(nameA, a) - next(nameB, b)
    }
}
