import CLibGit2
import CPackFormat
import Foundation

extension Repository {
    /// ``updateTree(_:_:)`` for many updates, with every new tree written as one pack (like
    /// ``writingOnePack(_:)``). The folders holding updated paths are rebuilt on all cores, each
    /// worker on its own handle, then the trees above them: a sync of 1% of a 100k-item mirror
    /// rewrites 250 fan-out folders of 400 entries each. The tree is the one `updateTree` gives.
    public func updateTreeInOnePack(_ base: ObjectID?, _ updates: [TreeUpdate]) throws(GitError) -> ObjectID {
        let workers = min(ProcessInfo.processInfo.activeProcessorCount, 8)
        guard workers > 1, let folders = FolderUpdates.group(updates), folders.count >= 4 * workers else {
            return try writingOnePack { (scratch) throws(GitError) in try scratch.updateTree(base, updates) }
        }
        var handles: [CaptureHandle] = []
        for _ in 0...workers { handles.append(try CaptureHandle(over: self)) }
        let top = handles[workers]
        // Worker w rebuilds folders w, w + workers, ...: fan-out folders are alike in size.
        let outcomes = UnsafeMutableBufferPointer<Result<[ObjectID?], GitError>>.allocate(capacity: workers)
        outcomes.initialize(repeating: .success([]))
        defer { outcomes.deinitialize(); outcomes.deallocate() }
        nonisolated(unsafe) let results = outcomes
        nonisolated(unsafe) let workerHandles = handles
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            results[worker] = Result { () throws(GitError) -> [ObjectID?] in
                let repository = workerHandles[worker].repository
                var built: [ObjectID?] = []
                for index in stride(from: worker, to: folders.count, by: workers) {
                    built.append(try repository.rebuild(folders[index], in: base))
                }
                return built
            }
        }
        var folderTrees: [RawTreeUpdate] = []
        for (index, folder) in folders.enumerated() {
            let tree = try outcomes[index % workers].get()[index / workers]
            folderTrees.append(RawTreeUpdate(path: folder.path, id: tree, mode: GIT_FILEMODE_TREE))
        }
        for handle in handles[..<workers] { tidemark_capture_take(top.capture, handle.capture) }
        let tree = try top.repository.applyUpdates(base, folderTrees)
        try write(top)
        return tree
    }

    /// The new tree of `folder`: its tree in `base` with its updates applied, or nil when nothing
    /// is left in it (the folder is then removed, as `git_tree_create_updated` removes it).
    fileprivate func rebuild(_ folder: FolderUpdates, in base: ObjectID?) throws(GitError) -> ObjectID? {
        var old: ObjectID?
        if let base, let entry = try treeEntry(at: folder.path, in: base) {
            guard entry.isTree else {
                throw GitError(code: .generic, message: "'\(folder.path)' is a file, not a folder",
                               operation: "git_tree_create_updated")
            }
            old = entry.id
        }
        let tree = try updateTree(old, folder.updates)
        return tree == ObjectID.emptyTree ? nil : tree
    }
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
