import Foundation
import GitStore
import Upstreams

/// One snapshot as `log` shows it.
public struct SnapshotInfo: Sendable, Codable, Equatable {
    public struct CollectionMark: Sendable, Codable, Equatable {
        public var name: String
        /// The collection's watermark (``SyncReport``): the newest `lastModified` stored, as
        /// upstream wrote it, which fetches and syncs never move back (items deleted since keep
        /// it; a rollback's commit carries the restored snapshot's, older); nil when no item of
        /// the collection was ever stored (its trailer says `none`).
        public var watermark: String?
    }
    public var commit: String
    public var parents: [String]
    /// Commit time, UTC, ISO 8601.
    public var date: String
    public var summary: String
    public var upstream: String?
    public var collections: [CollectionMark]
    public var items: Int?
    public var changed: Int?
    public var new: Int?
    public var deleted: Int?
    public var restores: String?
    /// Refs pointing here (`main`, `tidemark/upstream`).
    public var refs: [String]
    /// With `log -- <item or path>...`: what the snapshot changed of those; nil without.
    public var changes: [SnapshotChange]?

    /// True for a commit of the user's own (no tidemark trailers), which git and `log` head
    /// `commit`, not `snapshot`.
    public var isOwnCommit: Bool { items == nil && collections.isEmpty }
}

extension Mirror {
    /// Snapshots reachable from `revision` (default HEAD) along first parents, newest first.
    /// A range `A..B` gives those reachable from B and not from A (`HEAD..upstream`: what a
    /// sync would apply); `A...B` those reachable from either and not from both (each side's
    /// own snapshots since they parted, newest first, as `git log A...B` lists them). At most
    /// `limit` snapshots; all when it is nil or negative (git's `log -n -1`). With `alone`, the
    /// revision itself and no snapshot before it (git's `X^!`).
    ///
    /// With `items` (`collection/id` or paths, from `folder` as ``diff(_:items:relativeTo:format:detail:)``
    /// takes them), only the snapshots that changed one of those files against their first
    /// parent (`git log --first-parent -- <path>`), each with what it changed
    /// (``SnapshotInfo/changes``): an item is followed by its id, across the fan-out folders
    /// its file may have had, and through its deletion (``historyTargets(_:trees:relativeTo:)``).
    public func log(from revision: String? = nil, limit: Int? = nil, alone: Bool = false, items: [String] = [],
                    relativeTo folder: String? = nil) throws(MirrorError) -> [SnapshotInfo] {
        let limit = limit.flatMap { $0 < 0 ? nil : $0 }
        var starts: [ObjectID]
        var hiding: [ObjectID] = []
        if let revision, let range = RevisionRange(revision) {
            let from = try resolve(range.from), to = try resolve(range.to)
            if range.fromMergeBase {
                starts = [from, to]
                hiding = try mirrorErrors { try repository.mergeBases(from, to) }
            } else {
                starts = [to]
                hiding = [from]
            }
        } else if let revision {
            starts = [try resolve(revision)]
        } else {
            guard let head = try headCommit() else { return [] }
            starts = [head.id]
        }
        let branch = try branch()
        let branchTip = try mirrorErrors { try repository.resolveReference(branch) }
        let upstreamTip = try mirrorErrors { try repository.resolveReference(Mirror.upstreamRef) }
        let branchName = Mirror.shortBranchName(branch)
        // With HEAD detached, its commit is marked `HEAD`, and `main` where that branch points.
        let mainTip = branch == "HEAD" ? try mirrorErrors { try repository.resolveReference("refs/heads/main") } : nil
        let targets = items.isEmpty ? [] : try historyTargets(
            items, trees: try mirrorErrors { try starts.map { (start) throws(GitError) in try repository.commit(start).tree } },
            relativeTo: folder)
        var sides: [[(id: ObjectID, commit: Commit)]] = []
        var changes: [ObjectID: [SnapshotChange]] = [:]
        for start in starts {
            if targets.isEmpty {
                sides.append(try mirrorErrors {
                    try repository.firstParentHistory(from: start, limit: alone ? 1 : limit, hiding: hiding)
                        .map { (id: $0, commit: try repository.commit($0)) }
                })
                continue
            }
            let found = try history(from: start, hiding: hiding, limit: limit, alone: alone, targets: targets)
            for entry in found { changes[entry.id] = entry.changes }
            sides.append(found.map { (id: $0.id, commit: $0.commit) })
        }
        let shown = Mirror.newestFirst(sides, limit: limit)
        changes = try withVersions(changes, shown: shown)
        return try mirrorErrors {
            shown.map { id, commit in
                let message = SnapshotMessage.parse(commit.message)
                var refs: [String] = []
                if id == branchTip { refs.append(branchName) }
                if id == mainTip { refs.append("main") }
                if id == upstreamTip { refs.append("tidemark/upstream") }
                return SnapshotInfo(
                    commit: id.hex, parents: commit.parents.map(\.hex),
                    date: Timestamp(seconds: commit.committer.time).raw, summary: commit.summary,
                    upstream: message?.upstream,
                    collections: message?.collections.map { SnapshotInfo.CollectionMark(name: $0.name, watermark: $0.watermark == "none" ? nil : $0.watermark) } ?? [],
                    items: message?.items, changed: message?.counts.changed, new: message?.counts.added,
                    deleted: message?.counts.deleted, restores: message?.restores, refs: refs,
                    changes: targets.isEmpty ? nil : changes[id] ?? [])
            }
        }
    }

    /// Histories merged as git's log walks them: the newest commit of any side next, and among
    /// equal times the one waiting longest (git's queue), which interleaves the sides of
    /// `A...B` snapshot by snapshot when they were made in the same second.
    static func newestFirst(_ sides: [[(id: ObjectID, commit: Commit)]], limit: Int?) -> [(id: ObjectID, commit: Commit)] {
        guard sides.count > 1 else { return sides.first ?? [] }
        var next = [Int](repeating: 0, count: sides.count)
        var waitingSince = Array(sides.indices)
        var clock = sides.count
        var merged: [(id: ObjectID, commit: Commit)] = []
        var seen = Set<ObjectID>()
        while limit.map({ merged.count < $0 }) ?? true {
            let candidates = sides.indices.filter { next[$0] < sides[$0].count }
            guard let side = candidates.max(by: { a, b in
                let (timeA, timeB) = (sides[a][next[a]].commit.committer.time, sides[b][next[b]].commit.committer.time)
                return timeA != timeB ? timeA < timeB : waitingSince[a] > waitingSince[b]
            }) else { break }
            let entry = sides[side][next[side]]
            if seen.insert(entry.id).inserted { merged.append(entry) }
            next[side] += 1
            waitingSince[side] = clock
            clock += 1
        }
        return merged
    }
}
