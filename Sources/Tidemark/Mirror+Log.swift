import Foundation
import GitStore
import Upstreams

/// One snapshot as `log` shows it.
public struct SnapshotInfo: Sendable, Codable, Equatable {
    public struct CollectionMark: Sendable, Codable, Equatable {
        public var name: String
        public var watermark: String
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
}

extension Mirror {
    /// Snapshots reachable from `revision` (default HEAD) along first parents, newest first.
    /// A range `A..B` gives those reachable from B and not from A (`HEAD..upstream`: what a
    /// sync would apply). At most `limit` snapshots; all when it is nil or negative (git's
    /// `log -n -1`).
    public func log(from revision: String? = nil, limit: Int? = nil) throws(MirrorError) -> [SnapshotInfo] {
        let limit = limit.flatMap { $0 < 0 ? nil : $0 }
        let start: ObjectID
        var hiding: [ObjectID] = []
        if let revision, let range = RevisionRange(revision) {
            guard !range.fromMergeBase else {
                throw .invalidArgument("log takes a range A..B; '\(revision)' (A...B) is for diff")
            }
            start = try resolve(range.to)
            hiding = [try resolve(range.from)]
        } else if let revision {
            start = try resolve(revision)
        } else {
            guard let head = try headCommit() else { return [] }
            start = head.id
        }
        let branch = try branch()
        let branchTip = try mirrorErrors { try repository.resolveReference(branch) }
        let upstreamTip = try mirrorErrors { try repository.resolveReference(Mirror.upstreamRef) }
        let branchName = Mirror.shortBranchName(branch)
        return try mirrorErrors {
            try repository.firstParentHistory(from: start, limit: limit, hiding: hiding).map { id in
                let commit = try repository.commit(id)
                let message = SnapshotMessage.parse(commit.message)
                var refs: [String] = []
                if id == branchTip { refs.append(branchName) }
                if id == upstreamTip { refs.append("tidemark/upstream") }
                return SnapshotInfo(
                    commit: id.hex, parents: commit.parents.map(\.hex),
                    date: Timestamp(seconds: commit.committer.time).raw, summary: commit.summary,
                    upstream: message?.upstream,
                    collections: message?.collections.map { SnapshotInfo.CollectionMark(name: $0.name, watermark: $0.watermark) } ?? [],
                    items: message?.items, changed: message?.counts.changed, new: message?.counts.added,
                    deleted: message?.counts.deleted, restores: message?.restores, refs: refs)
            }
        }
    }
}
