import CLibGit2
import CPackFormat
import Foundation

/// A tree made by applying updates, and the upserted paths that already held the same blob.
public struct UpdatedTree: Sendable, Equatable {
    public let tree: ObjectID
    /// Upserts that changed nothing (a new version of an item with the same body).
    public let unchanged: Set<String>

    public init(tree: ObjectID, unchanged: Set<String>) {
        self.tree = tree
        self.unchanged = unchanged
    }
}

extension Repository {
    /// ``updateTree(_:_:)``, with every new tree written as one pack (like ``writingOnePack(_:)``;
    /// loose objects for a few), but for the large trees rewritten (a collection's), each stored as
    /// a delta of the tree it replaces (``storeLargeTrees(_:from:to:)``). For many updates the
    /// folders holding updated paths are rebuilt on all cores, each worker on its own handle, then
    /// the trees above them: a sync of 1% of a 100k-item mirror rewrites 890 fan-out folders. The
    /// tree is the one `updateTree` gives; the upserts that changed nothing are found on the way
    /// (as ``updatedTree(_:_:)`` finds them).
    ///
    /// - Parameter late: more updates, asked for once the folders are rebuilt and applied with the
    ///   trees above them; their blobs may be written meanwhile (a ``PendingBlob`` it waits for).
    ///   Their paths must lie outside the folders `updates` change (a collection's manifest).
    public func updateTreeInOnePack(_ base: ObjectID?, _ updates: [TreeUpdate],
                                    late: () throws(GitError) -> [TreeUpdate] = { [] }) throws(GitError) -> UpdatedTree {
        let workers = min(ProcessInfo.processInfo.activeProcessorCount, 8)
        guard workers > 1, let folders = FolderUpdates.group(updates), folders.count >= 4 * workers else {
            let all = updates + (try late())
            try refreshObjects()
            let scratch = try CaptureHandle(over: self)
            let updated = try scratch.repository.updatedTree(base, all)
            try write(scratch, treesFrom: base, to: updated.tree)
            return updated
        }
        try refreshObjects()
        var handles: [CaptureHandle] = []
        for _ in 0...workers { handles.append(try CaptureHandle(over: self)) }
        let top = handles[workers]
        // Worker w rebuilds folders w, w + workers, ...: fan-out folders are alike in size.
        let outcomes = concurrentMap(workers) { worker in
            Result { () throws(GitError) -> [RebuiltFolder] in
                let repository = handles[worker].repository
                var built: [RebuiltFolder] = []
                for index in stride(from: worker, to: folders.count, by: workers) {
                    built.append(try repository.rebuild(folders[index], in: base))
                }
                return built
            }
        }
        var folderTrees: [RawTreeUpdate] = []
        var unchanged = Set<String>()
        for (index, folder) in folders.enumerated() {
            let rebuilt = try outcomes[index % workers].get()[index / workers]
            folderTrees.append(RawTreeUpdate(path: folder.path, id: rebuilt.tree, mode: GIT_FILEMODE_TREE))
            for name in rebuilt.unchanged { unchanged.insert(folder.path + "/" + name) }
        }
        for handle in handles[..<workers] { tidemark_capture_take(top.capture, handle.capture) }
        // Blobs `late` waited for were written through another handle: `top` reads them through
        // this one, which `late` refreshed.
        let lateUpdates = try late()
        for update in lateUpdates {
            let path = update.path
            if let folder = folders.first(where: { path.hasPrefix($0.path + "/") || $0.path.hasPrefix(path + "/") || $0.path == path }) {
                throw GitError(code: .generic, message: "'\(path)' is in or above '\(folder.path)', a folder rebuilt before it",
                               operation: "git_tree_create_updated")
            }
        }
        unchanged.formUnion(try top.repository.unchangedUpserts(base, lateUpdates))
        let tree = try top.repository.applyUpdates(base, folderTrees + lateUpdates.map(\.raw))
        try write(top, treesFrom: base, to: tree)
        return UpdatedTree(tree: tree, unchanged: unchanged)
    }

    /// ``updateTree(_:_:)``, with the upserts whose blob `base` already held at that path.
    public func updatedTree(_ base: ObjectID?, _ updates: [TreeUpdate]) throws(GitError) -> UpdatedTree {
        UpdatedTree(tree: try updateTree(base, updates), unchanged: try unchangedUpserts(base, updates))
    }

    /// The upserts of `updates` whose blob `base` already holds at that path.
    func unchangedUpserts(_ base: ObjectID?, _ updates: [TreeUpdate]) throws(GitError) -> Set<String> {
        guard let base else { return [] }
        var unchanged = Set<String>()
        for case .upsert(let path, let blob) in updates where try treeEntry(at: path, in: base)?.id == blob {
            unchanged.insert(path)
        }
        return unchanged
    }

    /// The new tree of `folder`: its tree in `base` with its updates applied (nil when nothing is
    /// left in it: the folder is then removed, as `git_tree_create_updated` removes it), and the
    /// names whose upsert changed nothing.
    fileprivate func rebuild(_ folder: FolderUpdates, in base: ObjectID?) throws(GitError) -> RebuiltFolder {
        var old: ObjectID?
        if let base, let entry = try treeEntry(at: folder.path, in: base) {
            guard entry.isTree else {
                throw GitError(code: .generic, message: "'\(folder.path)' is a file, not a folder",
                               operation: "git_tree_create_updated")
            }
            old = entry.id
        }
        if let spliced = try splicedTree(old, folder.updates) { return spliced }
        let updated = try updatedTree(old, folder.updates)
        return RebuiltFolder(tree: updated.tree == ObjectID.emptyTree ? nil : updated.tree, unchanged: updated.unchanged)
    }

    /// ``rebuild(_:in:)`` through ``FolderTreeMerge``: the tree `old` with `updates` applied,
    /// written with `git_odb_write` after the checks `git_tree_create_updated` makes (each
    /// upserted blob exists and is a blob); nil when the merge leaves the folder to libgit2.
    private func splicedTree(_ old: ObjectID?, _ updates: [TreeUpdate]) throws(GitError) -> RebuiltFolder? {
        let oldTree = try old.map { (id) throws(GitError) in try readObject(id).contents } ?? Data()
        // The checkout that follows reads the old tree again, as its baseline.
        if let old { memo?.remember(old, type: GIT_OBJECT_TREE, contents: oldTree) }
        guard let merged = oldTree.withUnsafeBytes({ FolderTreeMerge.merge($0, updates) }) else { return nil }
        let odb = try makeHandle("git_repository_odb") { git_repository_odb(&$0, pointer) }
        defer { git_odb_free(odb) }
        for case .upsert(_, let blob) in updates {
            var size = 0
            var type = GIT_OBJECT_INVALID
            var oid = blob.raw
            guard git_odb_read_header(&size, &type, odb, &oid) == 0, type == GIT_OBJECT_BLOB else {
                return nil  // libgit2 names the missing or mistyped object
            }
        }
        guard !merged.contents.isEmpty else { return RebuiltFolder(tree: nil, unchanged: Set(merged.unchanged)) }
        var written = git_oid()
        try checkObjectWrite("git_odb_write") {
            merged.contents.withUnsafeBytes { git_odb_write(&written, odb, $0.baseAddress, $0.count, GIT_OBJECT_TREE) }
        }
        return RebuiltFolder(tree: ObjectID(written), unchanged: Set(merged.unchanged))
    }
}

/// What rebuilding one folder gave.
private struct RebuiltFolder {
    let tree: ObjectID?
    let unchanged: Set<String>
}

/// The updates under one folder, with paths relative to it.
struct FolderUpdates: Sendable {
    let path: String
    let updates: [TreeUpdate]

    /// `updates` grouped by the folder holding each path, in path order; nil when a path is at
    /// the top or one of the folders holds another (the tree is then updated whole).
    static func group(_ updates: [TreeUpdate]) -> [FolderUpdates]? {
        var byFolder: [String: [TreeUpdate]] = [:]
        for update in updates {
            let path = update.path
            guard let slash = path.lastIndex(of: "/") else { return nil }
            let name = String(path[path.index(after: slash)...])
            let relative: TreeUpdate
            switch update {
            case .upsert(_, let blob): relative = .upsert(path: name, blob: blob)
            case .remove: relative = .remove(path: name)
            }
            byFolder[String(path[..<slash]), default: []].append(relative)
        }
        for folder in byFolder.keys {
            var prefix = Substring(folder)
            while let slash = prefix.lastIndex(of: "/") {
                prefix = prefix[..<slash]
                if byFolder[String(prefix)] != nil { return nil }
            }
        }
        return byFolder.keys.sorted().map { FolderUpdates(path: $0, updates: byFolder[$0]!) }
    }
}

extension ObjectID {
    /// The empty tree's id.
    static let emptyTree = ObjectID(hex: "4b825dc642cb6eb9a060e54bf8d69288fbee4904")!
}
