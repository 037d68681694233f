import Foundation
import GitStore
import Upstreams

/// How one item differs, upstream and locally.
public struct ItemStatus: Sendable, Equatable {
    /// The upstream side: HEAD's manifest against the upstream-tracking ref's.
    public enum Upstream: Character, Sendable {
        case unchanged = " ", changed = "M", added = "A", deleted = "D"
    }
    /// The local side: the working tree against HEAD. `untracked`: an item new upstream whose
    /// file the working tree already has, untracked (a sync refuses to overwrite it).
    /// `unmerged`: a conflict git left (a merge, `git stash pop`); a sync and a rollback refuse
    /// to run until it is resolved.
    public enum Local: Character, Sendable {
        case unchanged = " ", modified = "M", deleted = "D", untracked = "?", unmerged = "U"
    }
    public var collection: String
    public var id: ItemID
    /// The item's file, relative to the working tree.
    public var path: String
    public var upstream: Upstream
    public var local: Local
    /// Which sides git's conflict has when `local` is `.unmerged` (`both modified`, `deleted by
    /// them`, ...), else nil.
    public var conflict: Conflict? = nil
}

/// A changed path that is not an item (an edited manifest, a file that no manifest lists): in
/// the working tree, or in a commit of the user's own that a sync would undo.
public struct PathStatus: Sendable, Equatable {
    /// Relative to the working tree.
    public var path: String
    /// `.modified`, `.deleted`, or `.unchanged` (only a commit of the user's own changed it).
    public var local: ItemStatus.Local
    /// What a sync does to it: `.deleted` (not in upstream's snapshot), `.changed`, `.added`
    /// (a file a commit of the user's own removed), or `.unchanged`.
    public var upstream: ItemStatus.Upstream = .unchanged
    /// Which sides git's conflict has when `local` is `.unmerged`, else nil.
    public var conflict: Conflict? = nil
    /// A file HEAD does not have (staged, as `git add` or `git mv` leaves one): `local` is
    /// `.modified`, which `status` shows as a new file, as git does.
    public var isNew = false
}

/// The result of `status`.
public struct StatusReport: Sendable {
    public var branch: String
    public var head: ObjectID?
    public var upstream: ObjectID?
    /// Items that differ on either side, sorted by collection and id.
    public var items: [ItemStatus]
    /// Changed paths in the working tree that are not items (e.g. an edited manifest), by path.
    public var otherPaths: [PathStatus]
    public var lastFetch: Date?
    public var lastSync: Date?
    /// A sync a killed run left unfinished: until the next `fetch`, `sync` or `rollback`
    /// finishes it, the files it wrote show as edited locally.
    public var interruptedSync: InterruptedSync?
    /// Commits on the branch not made by tidemark (`short-id subject`, newest first) whose
    /// changes a sync would undo; a sync refuses them without `--force`.
    public var ownCommits: [String] = []
    /// True when no commit down to the branch's root carries tidemark's trailers: it holds no
    /// snapshot, and is not the mirror's branch (a sync refuses it as such).
    public var unrelatedBranch = false
    /// The branch has no commit but the mirror shows it had one (``Mirror/lostBranch(_:)``):
    /// a sync refuses to start it over.
    public var lostBranch: LostBranch?
    /// The items the last fetch could not download (`collection/id: reason`), which the upstream
    /// snapshot therefore holds at an older version, or not at all; empty once a fetch got all.
    public var fetchFailures: [String] = []
    /// The items the last fetch found gone upstream since its listing (`collection/id: reason`),
    /// left as the snapshot had them; the next fetch lists them again.
    public var fetchVanished: [String] = []
    /// The items the last fetch's listing left out whose deletion it could not confirm (asked
    /// for, they failed with an error other than 404 or 410), `collection/id: error`: kept, and
    /// no deletion of their collection applied. Like ``fetchVanished``, no bar to ``isClean``.
    public var fetchUnconfirmed: [String] = []
    /// Items the next fetch downloads again because `itemURL`, `bodyPath` or `ignoreField`
    /// changed since they were stored (``Mirror/bodyReshape(base:)``); nil when none.
    public var reshapePending: ReshapePending?

    /// The settings that decide what is stored of an item, as messages name them.
    public static let bodySettingKeys = "tidemark.itemURL, tidemark.bodyPath or tidemark.ignoreField"

    /// What waits to be downloaded again for a changed `itemURL`, `bodyPath` or `ignoreField`.
    public enum ReshapePending: Sendable, Equatable {
        /// Every item (the settings changed, or a fetch did not list a collection since).
        case everyItem
        /// Items a fetch downloading them again could not store.
        case items(Int)
    }
    /// Why the last fetch was refused, storing nothing (a mass deletion without
    /// `--allow-mass-delete`, a collection dropped from `tidemark.collection`): the
    /// upstream-tracking snapshot is an earlier fetch's. Nil once a fetch stores.
    public var fetchRefused: String?
    /// Why the last fetch failed before it stored anything (upstream unreachable, its folder
    /// unreadable, a listing page malformed): the upstream-tracking snapshot is an earlier
    /// fetch's. Nil once a fetch stores.
    public var fetchFailed: String?
    /// What the last fetch, interrupted by a signal or a cancelled task, did not get (`12 items
    /// not downloaded`, `collection 'pages' not listed`): the upstream-tracking snapshot holds
    /// the rest. Nil once a fetch gets everything.
    public var fetchInterrupted: String?
    /// Why the object store upkeep at the end of the last run that moved a ref failed (packing
    /// loose objects, combining packs); nil when it did not. The next such run tries again.
    public var upkeepFailure: String?
    /// True when the branch has a commit but `.git/index` is gone: the working tree is not
    /// compared (every file would show as deleted), and a sync refuses without `--force`.
    public var indexMissing = false
    /// A git operation left unfinished (`merge`, `revert`, `cherry-pick`, ...), which a sync and
    /// a rollback refuse to run under without `--force`.
    public var operationInProgress: String?
    /// True when that operation is a merge of snapshots another clone made alone, which
    /// `sync --force` finishes with upstream's snapshot (any other merge it ends as `git reset
    /// --hard` does, dropping the other side).
    public var mergeOfSnapshots = false

    /// True when nothing differs on either side and the last fetch got every item. Not in a
    /// `git clone` of a mirror that never fetched: there is nothing to compare with (`status
    /// --exit-code || tidemark sync` then syncs).
    public var isClean: Bool {
        items.isEmpty && otherPaths.isEmpty && ownCommits.isEmpty && fetchFailures.isEmpty && fetchRefused == nil && fetchFailed == nil
            && fetchInterrupted == nil && operationInProgress == nil && (upstream != nil || head == nil) && !unrelatedBranch
            && lostBranch == nil && !indexMissing
            && (interruptedSync == nil || interruptedSync?.runningPid != nil)
    }
    /// Counts of the upstream side: what a sync would apply.
    public var behind: ChangeCounts {
        var counts = ChangeCounts()
        for item in items {
            switch item.upstream {
            case .changed: counts.changed += 1
            case .added: counts.added += 1
            case .deleted: counts.deleted += 1
            case .unchanged: break
            }
        }
        return counts
    }
    public var locallyModified: Int { items.filter { $0.local != .unchanged }.count }
}

extension Mirror {
    /// Compares HEAD with the upstream-tracking ref (which items are behind upstream) and the
    /// working tree with HEAD (which items are edited locally). Never contacts upstream. Like
    /// `git status`, records the files it found touched but unchanged in the index when it can
    /// take the index lock at once (``Repository/workingTreeChanges(_:paths:refreshingIndex:whileLocked:)``).
    ///
    /// The working-tree side runs on its own repository handle while the manifests are compared:
    /// on a 100k-item mirror each side is about half of the work.
    public func status() async throws(MirrorError) -> StatusReport {
        try requireWorkingTree(for: "status")
        let head = try headCommit()
        let upstream = try upstreamCommit()
        if let upstream { try requireSnapshot(upstream) }
        let indexMissing = head != nil && self.indexMissing
        let local = head.flatMap { head in indexMissing ? nil : head }.map { head in
            let (root, tree) = (workingTree, head.tree)
            return Task.detached { [self] () throws -> [DiffDelta] in
                try Repository.open(at: root, search: false).workingTreeChanges(
                    tree, refreshingIndex: true, whileLocked: { crashPoint("status-index-locked") })
            }
        }
        let collections = Result { () throws(MirrorError) in try comparedCollections(from: head?.tree) }
        let behind = Result { () throws(MirrorError) in
            try behindStatuses(head: head, upstream: upstream, collections: try collections.get())
        }
        // Awaited before anything is thrown, so no diff runs on while the process exits.
        let localResult = await local?.result
        var ordered = try behind.get()
        var others: [PathStatus] = []
        // Item files of HEAD's tree by collection and path, read from its manifests when needed.
        var byPath: [String: [String: ItemID]] = [:]
        func item(at path: String, in tree: ObjectID) throws(MirrorError) -> (collection: String, id: ItemID)? {
            let parts = path.split(separator: "/", maxSplits: 1).map(String.init)
            guard parts.count == 2, settings.collections.contains(parts[0]) else { return nil }
            if byPath[parts[0]] == nil {
                let entries = try manifest(parts[0], in: tree).entries
                byPath[parts[0]] = Dictionary(entries.map { ($0.path, $0.id) }, uniquingKeysWith: { a, _ in a })
            }
            return byPath[parts[0]]?[parts[1]].map { (parts[0], $0) }
        }

        // The items new upstream by file, for paths that are no item of HEAD's.
        var newItems: [String: (collection: String, id: ItemID)]?
        func newItem(at path: String) -> (collection: String, id: ItemID)? {
            if newItems == nil {
                newItems = [:]
                for (name, statuses) in ordered {
                    for status in statuses.values where status.upstream == .added { newItems?[status.path] = (name, status.id) }
                }
            }
            return newItems?[path]
        }

        // The local side, from libgit2's diff of HEAD's tree against the working tree.
        if let head, let localResult {
            let deltas: [DiffDelta]
            do {
                deltas = try localResult.get()
            } catch {
                throw .git(error as? GitError ?? GitError(code: .generic, message: "\(error)", operation: "status"))
            }
            // A conflict is listed as such, and also when the file matches HEAD again.
            let conflicts = try mirrorErrors { try repository.conflicts() }
            let listed = Set(deltas.map(\.path))
            let added = Set(deltas.filter { $0.status == .added }.map(\.path))
            let changes = deltas.map { ($0.path, $0.status == .deleted) }
                + conflicts.map(\.path).filter { !listed.contains($0) }.map { ($0, false) }
            let conflicted = Dictionary(conflicts, uniquingKeysWith: { first, _ in first })
            for (path, deleted) in changes {
                let conflict = conflicted[path]
                let local: ItemStatus.Local = conflict != nil ? .unmerged : deleted ? .deleted : .modified
                guard let (collection, id) = try item(at: path, in: head.tree) else {
                    // The file of an item new upstream, in the index already (written by a
                    // killed sync, or added by the user): the item's line, edited locally.
                    if let (collection, id) = newItem(at: path) {
                        ordered[collection]?[id]?.local = local
                        ordered[collection]?[id]?.conflict = conflict
                        continue
                    }
                    var other = PathStatus(path: path, local: local, conflict: conflict)
                    other.isNew = conflict == nil && added.contains(path)
                    others.append(other)
                    continue
                }
                if ordered[collection]?[id] != nil {
                    ordered[collection]?[id]?.local = local
                    ordered[collection]?[id]?.conflict = conflict
                } else {
                    ordered[collection, default: [:]][id] = ItemStatus(
                        collection: collection, id: id, path: path, upstream: .unchanged, local: local, conflict: conflict)
                }
            }
        }
        // Items that commits of the user's own changed: a sync gives them upstream's version
        // again, as it would an item changed upstream (the manifests do not show them). Never
        // fetched (a `git clone` of a mirror), there is no upstream snapshot to undo them yet.
        var ownCommits: [String] = []
        var unrelated = false
        if let head, upstream != nil {
            let own = try self.ownCommits(head: head, undoneBy: upstream?.tree)
            ownCommits = own.commits
            unrelated = try commitsWithoutSnapshot(from: head) != nil
            for path in own.paths {
                guard let (collection, id) = try item(at: path, in: head.tree) else {
                    // The file of an item new upstream, which the user's commit added first: one
                    // line, the item's, which the sync writes over that file.
                    if let (collection, id) = newItem(at: path) {
                        ordered[collection]?[id]?.upstream = .changed
                        continue
                    }
                    // Not an item of HEAD's: the sync deletes it, or gives it upstream's version.
                    let inHead = try mirrorErrors { try repository.treeEntry(at: path, in: head.tree) } != nil
                    let inUpstream = try upstream.map { (commit) throws(MirrorError) in
                        try mirrorErrors { try repository.treeEntry(at: path, in: commit.tree) } != nil
                    } ?? false
                    let change: ItemStatus.Upstream = !inUpstream ? .deleted : inHead ? .changed : .added
                    if let index = others.firstIndex(where: { $0.path == path }) {
                        others[index].upstream = change
                    } else {
                        others.append(PathStatus(path: path, local: .unchanged, upstream: change))
                    }
                    continue
                }
                if let status = ordered[collection]?[id] {
                    if status.upstream == .unchanged { ordered[collection]?[id]?.upstream = .changed }
                } else {
                    ordered[collection, default: [:]][id] = ItemStatus(
                        collection: collection, id: id, path: path, upstream: .changed, local: .unchanged)
                }
            }
        }
        // A manifest listed for its local state: what a sync does to it is whether upstream's differs.
        if let head, let upstream {
            for index in others.indices where others[index].upstream == .unchanged {
                guard let collection = Mirror.collection(ofManifest: others[index].path) else { continue }
                let ours = try manifestBlob(collection, in: head.tree), theirs = try manifestBlob(collection, in: upstream.tree)
                if ours != theirs { others[index].upstream = theirs == nil ? .deleted : ours == nil ? .added : .changed }
            }
        }
        var items: [ItemStatus] = []
        for collection in try collections.get().sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            items += (ordered[collection] ?? [:]).values.sorted { $0.id < $1.id }
        }
        let activity = lastActivity()
        others.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        var report = StatusReport(branch: try branch(), head: head?.id, upstream: upstream?.id, items: items,
                                  otherPaths: others, lastFetch: activity.fetch, lastSync: activity.sync,
                                  interruptedSync: try pendingInterruptedSync())
        report.ownCommits = ownCommits
        report.unrelatedBranch = unrelated
        if head == nil, report.interruptedSync == nil, report.branch != "HEAD" { report.lostBranch = try lostBranch(report.branch) }
        report.fetchFailures = pendingFetchFailures()
        report.fetchVanished = stateLines(Mirror.fetchVanishedState)
        report.fetchUnconfirmed = stateLines(Mirror.fetchUnconfirmedState)
        report.reshapePending = bodyReshape(base: upstream).waiting
        report.fetchRefused = timedStateSinceLastFetch(Mirror.fetchRefusedState)
        report.fetchFailed = timedStateSinceLastFetch(Mirror.fetchFailedState)
        report.fetchInterrupted = timedStateSinceLastFetch(Mirror.fetchInterruptedState)
        report.upkeepFailure = stateLines(Mirror.upkeepFailedState).first
        report.indexMissing = indexMissing
        report.operationInProgress = operationInProgress(headDetached: report.branch == "HEAD")
        if report.operationInProgress == "merge" { report.mergeOfSnapshots = try !forcedMerge(into: head).finished.isEmpty }
        return report
    }

    /// The upstream side of `status`, per collection of `collections`: HEAD's manifest against the upstream ref's.
    private func behindStatuses(head: Commit?, upstream: Commit?, collections: [String]) throws(MirrorError) -> [String: [ItemID: ItemStatus]] {
        var ordered: [String: [ItemID: ItemStatus]] = [:]
        for collection in collections {
            var statuses: [ItemID: ItemStatus] = [:]
            let headBlob = try manifestBlob(collection, in: head?.tree)
            let upstreamBlob = try manifestBlob(collection, in: upstream?.tree)
            guard upstream != nil, headBlob != upstreamBlob else { ordered[collection] = [:]; continue }
            let changes = try manifestChanges(collection, from: headBlob, to: upstreamBlob)
            for change in try contentChanges(changes, in: collection, from: head?.tree, to: upstream?.tree) {
                switch (change.old, change.new) {
                case (let mine?, _?):
                    statuses[mine.id] = ItemStatus(collection: collection, id: mine.id, path: "\(collection)/\(mine.path)",
                                                   upstream: .changed, local: .unchanged)
                case (nil, let theirs?):
                    // A file already at its path is in the way of the sync, unless it holds what the sync writes.
                    let path = "\(collection)/\(theirs.path)"
                    let inTheWay = try !untrackedPaths(among: [path], head: head?.tree,
                                                       targetBlob: upstream.map { targetBlob(in: $0.tree) } ?? { _ in nil }).isEmpty
                    statuses[theirs.id] = ItemStatus(collection: collection, id: theirs.id, path: path, upstream: .added,
                                                     local: inTheWay ? .untracked : .unchanged)
                case (let mine?, nil):
                    statuses[mine.id] = ItemStatus(collection: collection, id: mine.id, path: "\(collection)/\(mine.path)",
                                                   upstream: .deleted, local: .unchanged)
                case (nil, nil):
                    break
                }
            }
            ordered[collection] = statuses
        }
        return ordered
    }
}
