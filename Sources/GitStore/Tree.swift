import CLibGit2

/// The mode of a tree entry. tidemark writes only `.blob` (100644) and `.tree` entries.
public enum FileMode: UInt32, Sendable {
    case tree = 0o040000
    case blob = 0o100644
    case executable = 0o100755
    case symlink = 0o120000
    case commit = 0o160000
}

/// One entry of a tree, copied out of libgit2.
public struct TreeEntry: Sendable, Equatable {
    /// The entry's name (one path component), as bytes.
    public let name: [UInt8]
    public let id: ObjectID
    /// The raw mode, e.g. 0o100644.
    public let mode: UInt32

    public init(name: [UInt8], id: ObjectID, mode: UInt32) {
        self.name = name
        self.id = id
        self.mode = mode
    }

    public var nameString: String { String(decoding: name, as: UTF8.self) }
    public var isTree: Bool { mode == FileMode.tree.rawValue }
}

/// A change to apply to a tree: put a blob at a path, or remove a path.
public enum TreeUpdate: Sendable, Equatable {
    case upsert(path: String, blob: ObjectID)
    case remove(path: String)

    public var path: String {
        switch self {
        case .upsert(let path, _), .remove(let path): return path
        }
    }
}

extension Repository {
    /// The entries of tree `id`, in git's order.
    public func treeEntries(_ id: ObjectID) throws(GitError) -> [TreeEntry] {
        var oid = id.raw
        let tree = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
        defer { git_tree_free(tree) }
        let count = git_tree_entrycount(tree)
        var entries: [TreeEntry] = []
        entries.reserveCapacity(count)
        for index in 0..<count {
            guard let entry = git_tree_entry_byindex(tree, index) else { continue }
            let name = Array(String(cString: git_tree_entry_name(entry)).utf8)
            entries.append(TreeEntry(name: name, id: ObjectID(git_tree_entry_id(entry)),
                                     mode: git_tree_entry_filemode(entry).rawValue))
        }
        return entries
    }

    /// The entry at `path` (components separated by `/`) below tree `id`, or nil when absent.
    public func treeEntry(at path: String, in id: ObjectID) throws(GitError) -> TreeEntry? {
        var oid = id.raw
        let tree = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
        defer { git_tree_free(tree) }
        var entry: OpaquePointer?
        let rc = git_tree_entry_bypath(&entry, tree, path)
        if rc == GIT_ENOTFOUND.rawValue { return nil }
        try check(rc, "git_tree_entry_bypath")
        guard let entry else { return nil }
        defer { git_tree_entry_free(entry) }
        return TreeEntry(name: Array((path.split(separator: "/").last.map(String.init) ?? "").utf8),
                         id: ObjectID(git_tree_entry_id(entry)), mode: git_tree_entry_filemode(entry).rawValue)
    }

    /// Writes a tree of `entries` (names must be unique and valid) and returns its id.
    public func writeTree(_ entries: [TreeEntry]) throws(GitError) -> ObjectID {
        let builder = try makeHandle("git_treebuilder_new") { git_treebuilder_new(&$0, pointer, nil) }
        defer { git_treebuilder_free(builder) }
        for entry in entries {
            var oid = entry.id.raw
            let rc = (entry.name + [0]).withUnsafeBufferPointer { name in
                name.withMemoryRebound(to: CChar.self) { cName in
                    git_treebuilder_insert(nil, builder, cName.baseAddress, &oid, git_filemode_t(entry.mode))
                }
            }
            try check(rc, "git_treebuilder_insert '\(entry.nameString)'")
        }
        var result = git_oid()
        try checkObjectWrite("git_treebuilder_write") { git_treebuilder_write(&result, builder) }
        return ObjectID(result)
    }

    /// Applies `updates` to tree `base` (nil: the empty tree) and returns the new tree's id.
    /// Only the trees on the changed paths are rewritten (`git_tree_create_updated`).
    public func updateTree(_ base: ObjectID?, _ updates: [TreeUpdate]) throws(GitError) -> ObjectID {
        try applyUpdates(base, updates.map(\.raw))
    }

    /// `git_tree_create_updated` on `base`: upserts (any mode, trees included) and removals (nil id).
    func applyUpdates(_ base: ObjectID?, _ updates: [RawTreeUpdate]) throws(GitError) -> ObjectID {
        var baseTree: OpaquePointer?
        if let base {
            var oid = base.raw
            baseTree = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &oid) }
        }
        defer { if let baseTree { git_tree_free(baseTree) } }
        if updates.isEmpty, let base { return base }
        return try withCStrings(updates.map(\.path)) { (paths) throws(GitError) -> ObjectID in
            var raw: [git_tree_update] = updates.enumerated().map { index, update in
                var item = git_tree_update()
                item.path = paths[index]
                if let id = update.id {
                    item.action = GIT_TREE_UPDATE_UPSERT
                    item.id = id.raw
                    item.filemode = update.mode
                } else {
                    item.action = GIT_TREE_UPDATE_REMOVE
                }
                return item
            }
            var result = git_oid()
            try checkObjectWrite("git_tree_create_updated") {
                raw.withUnsafeMutableBufferPointer { buffer in
                    git_tree_create_updated(&result, pointer, baseTree, buffer.count, buffer.baseAddress)
                }
            }
            return ObjectID(result)
        }
    }
}

/// One update for `git_tree_create_updated`: an entry of `mode` at `path`, or its removal (nil id).
struct RawTreeUpdate {
    let path: String
    let id: ObjectID?
    let mode: git_filemode_t
}

extension TreeUpdate {
    /// The update for `git_tree_create_updated`.
    var raw: RawTreeUpdate {
        switch self {
        case .upsert(let path, let blob): RawTreeUpdate(path: path, id: blob, mode: GIT_FILEMODE_BLOB)
        case .remove(let path): RawTreeUpdate(path: path, id: nil, mode: GIT_FILEMODE_UNREADABLE)
        }
    }
}
