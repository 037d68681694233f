import Foundation
import GitStore
import Upstreams

/// What `rollback` did.
public struct RollbackReport: Sendable {
    /// The snapshot restored.
    public var restored: ObjectID
    /// The branch tip before and after.
    public var previous: ObjectID
    public var current: ObjectID
    /// Files changed in the working tree.
    public var paths: [String]
    /// With `force`, the local edits it wrote over (and those finishing a sync a killed run had
    /// left wrote over), named as a refusal names them.
    public var overwrittenEdits: [String] = []
    /// With `force` and no `hard`: the paths of commits of the user's own that the restored
    /// snapshot sets back (as ``SyncReport/undoneOwnPaths``).
    public var undoneOwnPaths: [String] = []
    /// With `force` and `hard`: the commits of the user's own the reset took off the branch
    /// (`short-id subject`; `ORIG_HEAD` and the reflog still have them).
    public var droppedOwnCommits: [String] = []
}

extension Mirror {
    /// Restores an earlier snapshot. By default as a new commit on top of the branch (history
    /// kept); with `hard`, the branch is reset to it (the reflog still has the old tip).
    /// The upstream-tracking ref is left alone, so `status` then shows what is behind upstream,
    /// and the next sync re-uses the objects already stored instead of downloading them again.
    /// A commit with no snapshot in its first-parent history (an orphan branch's) is refused
    /// (``MirrorError/invalidArgument(_:)``).
    public func rollback(to revision: String, hard: Bool = false, force: Bool = false) throws(MirrorError) -> RollbackReport {
        try requireWorkingTree(for: "rollback")
        let lock = try lock()
        defer { withExtendedLifetime(lock) {} }
        let branch = try checkedOutBranch(by: "rollback")
        try recoverInterruptedSync(force: force)
        try catchUpUpstreamRef()
        guard let head = try headCommit() else {
            // A branch lost from a damaged .git is named, with the way to restore it.
            if let lost = try lostBranch(branch) { throw .lostBranch(branch: Mirror.shortBranchName(branch), lost, by: "rollback") }
            throw .unknownRevision("HEAD")
        }
        try requireIndex(of: head, force: force)
        let targetID = try resolve(revision)
        let target = try mirrorErrors { try repository.commit(targetID) }
        // A commit with no snapshot below it (an orphan branch's) holds no known upstream state:
        // restored, its files would all count as upstream's, and the next sync would delete
        // those of the user's without naming them.
        guard let restored = try snapshotMessage(restoring: target) else {
            throw .invalidArgument("rollback restores a snapshot, or a commit of yours made on one; '\(revision)' "
                                   + "(\(targetID.short())) has no snapshot in its history (first parents)")
        }
        // Nothing to restore: no empty commit (as git refuses one), no reset to the same commit.
        if hard ? targetID == head.id : target.tree == head.tree {
            // Forced, a conflict or unfinished merge still ends, as a sync's does.
            var report = RollbackReport(restored: targetID, previous: head.id, current: head.id, paths: [])
            if force { report.overwrittenEdits = Mirror.adding(try endGitOperation(at: head.tree), to: finishingOverwrote) }
            return report
        }
        // Commits of the user's own above the last snapshot: refused unless `force`, as a sync
        // refuses them; forced, named as a sync names them. A reset drops them from the branch
        // whatever it restores (but for one to a commit above them).
        var own: (commits: [String], paths: [String]) = ([], [])
        if !force {
            try checkOwnCommits(head: head, undoneBy: hard ? nil : target.tree, branch: branch, by: "rollback")
        } else {
            var aboveThem = false
            if hard { aboveThem = try mirrorErrors { try repository.isDescendant(targetID, of: head.id) } }
            if !aboveThem { own = try ownCommits(head: head, undoneBy: hard ? nil : target.tree) }
        }
        var newTip = targetID
        if !hard {
            // A manifest committed corrupt (the snapshot rolled back from, typically) leaves the
            // counts unknown: the rollback still goes ahead, as `--hard` would.
            // By collection: one the restored snapshot holds and the branch's does not (dropped
            // since) counts its items as new.
            let byCollection: [String: ChangeCounts]
            do {
                byCollection = try rollbackCounts(from: head.tree, to: target.tree)
            } catch .corruptManifest {
                byCollection = [:]
            }
            let counts = byCollection.values.reduce(ChangeCounts(), +)
            var message = restored
            message.verb = "Rollback"
            message.counts = counts
            message.perCollection = byCollection
            message.listedAt = nil
            message.restores = targetID.hex
            message.undone = own.paths.count
            var text = message.render()
            // The subject replaced; the rest (a blank line, the trailers) kept as it is. A
            // snapshot the branch does not hold below it (newer, after a `--hard` one; another
            // branch's) is restored, not rolled back to.
            let older = try mirrorErrors { try repository.isDescendant(head.id, of: targetID) }
            let subject = older ? "Roll back to \(targetID.short())" : "Restore \(targetID.short())"
            text = "\(subject): \(counts.summary)\(SnapshotMessage.undid(message.undone))" + text.drop(while: { $0 != "\n" })
            newTip = try mirrorErrors {
                try repository.createCommit(tree: target.tree, parents: [head.id], message: text, author: signature(), committer: signature(.committer))
            }
        }
        let paths: [String]
        do {
            paths = try moveBranch(branch, from: head, to: newTip, force: force,
                                   reflog: "tidemark rollback: \(hard ? "reset" : "restore") \(targetID.short())", by: "rollback")
        } catch .localEdits(let items, _) {
            throw .localEdits(items, by: "rollback")
        } catch .unmergedFiles(let paths, _) {
            throw .unmergedFiles(paths, by: "rollback")
        } catch .operationInProgress(let operation, _) {
            throw .operationInProgress(operation, by: "rollback")
        }
        var report = RollbackReport(restored: targetID, previous: head.id, current: newTip, paths: paths)
        if force { report.overwrittenEdits = Mirror.adding(overwrittenEdits, to: finishingOverwrote) }
        if hard { report.droppedOwnCommits = own.commits } else { report.undoneOwnPaths = own.paths }
        return report
    }

    /// The message a rollback to `target` starts from: `target`'s when it is a snapshot, else
    /// (a commit of the user's) that of the snapshot below it, whose watermarks it holds. Its
    /// `Tidemark-Tree` names the tree of upstream's content: what the restored tree holds beyond
    /// that stays the user's, which a sync then refuses to undo, as it refuses their commits.
    func snapshotMessage(restoring target: Commit) throws(MirrorError) -> SnapshotMessage? {
        var next: Commit? = target
        var steps = 0
        while let commit = next, steps < 1000 {
            if var message = SnapshotMessage.parse(commit.message) {
                message.tree = Mirror.upstreamTree(of: commit, message: message).hex
                return message
            }
            steps += 1
            next = try firstParent(of: commit)
        }
        return nil
    }

    /// A rollback's counts by collection: the manifests' changes, plus the item files that no
    /// manifest change accounts for, which a commit of the user's own changed without touching
    /// its manifest (a rollback to one that edited and deleted items recorded "no changes").
    func rollbackCounts(from old: ObjectID, to new: ObjectID) throws(MirrorError) -> [String: ChangeCounts] {
        let byCollection = try itemChangesByCollection(from: old, to: new)
        let collections = Array(byCollection.keys)
        var counts = byCollection.mapValues(ChangeCounts.init)
        var counted = Set<String>()
        for (collection, changes) in byCollection {
            for entry in changes.flatMap({ [$0.old, $0.new] }).compactMap({ $0 }) { counted.insert("\(collection)/\(entry.path)") }
        }
        for delta in try mirrorErrors({ try repository.diffTrees(old, new).deltas }) where !counted.contains(delta.path) {
            guard let collection = collections.first(where: { delta.path.hasPrefix($0 + "/") }) else { continue }
            switch delta.status {
            case .added: counts[collection, default: ChangeCounts()].added += 1
            case .deleted: counts[collection, default: ChangeCounts()].deleted += 1
            default: counts[collection, default: ChangeCounts()].changed += 1
            }
        }
        return counts
    }
}
