import Foundation
import Tidemark

/// `--json` shapes. Field names are documented in Documentation/OutputFormats.md; add, never rename.

struct StatusJSON: Encodable {
    struct Item: Encodable {
        var collection: String
        var id: String
        var path: String
        var upstream: String
        var local: String
        /// Only for an unmerged item: which sides git's conflict has (`both modified`, ...).
        var conflict: String?
    }
    var branch: String
    var head: String?
    var upstream: String?
    var lastFetch: String?
    var lastSync: String?
    var behind: ChangeCounts
    var locallyModified: Int
    var clean: Bool
    var items: [Item]
    var interruptedSync: InterruptedSyncJSON?
    var ownCommits: [String]?
    /// True when the branch holds no snapshot of the mirror (absent otherwise).
    var unrelatedBranch: Bool?
    /// The branch has no commit while the mirror shows it had one (absent otherwise).
    var lostBranch: LostBranchJSON?
    var otherPaths: [OtherPath]?
    var fetchFailures: [String]?
    var fetchVanished: [String]?
    var fetchUnconfirmed: [String]?
    var fetchRefused: String?
    var fetchFailed: String?
    var fetchInterrupted: String?
    /// `all`, or how many items the next fetch downloads again for a changed `itemURL` or
    /// `bodyPath` (absent when none).
    var reshapePending: String?
    var upkeepFailure: String?
    /// True when `.git/index` is missing (absent otherwise).
    var indexMissing: Bool?
    var operationInProgress: String?

    struct LostBranchJSON: Encodable {
        var lastKnown: String?
        var indexedFiles: Int
    }

    struct OtherPath: Encodable {
        var path: String
        var local: String
        var upstream: String
        var conflict: String?
    }

    init(_ report: StatusReport) {
        branch = report.branch
        ownCommits = report.ownCommits.isEmpty ? nil : report.ownCommits
        unrelatedBranch = report.unrelatedBranch ? true : nil
        lostBranch = report.lostBranch.map { LostBranchJSON(lastKnown: $0.lastKnown?.hex, indexedFiles: $0.indexedFiles) }
        fetchFailures = report.fetchFailures.isEmpty ? nil : report.fetchFailures
        fetchVanished = report.fetchVanished.isEmpty ? nil : report.fetchVanished
        fetchUnconfirmed = report.fetchUnconfirmed.isEmpty ? nil : report.fetchUnconfirmed
        fetchRefused = report.fetchRefused
        fetchFailed = report.fetchFailed
        fetchInterrupted = report.fetchInterrupted
        reshapePending = report.reshapePending.map {
            switch $0 {
            case .everyItem: "all"
            case .items(let count): String(count)
            }
        }
        upkeepFailure = report.upkeepFailure
        indexMissing = report.indexMissing ? true : nil
        operationInProgress = report.operationInProgress
        head = report.head?.hex
        upstream = report.upstream?.hex
        lastFetch = report.lastFetch.map { Timestamp(date: $0).raw }
        lastSync = report.lastSync.map { Timestamp(date: $0).raw }
        behind = report.behind
        locallyModified = report.locallyModified
        clean = report.isClean
        items = report.items.map { item in
            Item(collection: item.collection, id: item.id.description, path: item.path,
                 upstream: ["M": "changed", "A": "new", "D": "deleted"][item.upstream.rawValue] ?? "unchanged",
                 local: ["M": "modified", "D": "deleted", "?": "untracked", "U": "unmerged"][item.local.rawValue] ?? "unchanged",
                 conflict: item.conflict?.label)
        }
        interruptedSync = report.interruptedSync.map(InterruptedSyncJSON.init)
        otherPaths = report.otherPaths.isEmpty ? nil : report.otherPaths.map {
            OtherPath(path: $0.path, local: ["M": "modified", "D": "deleted", "U": "unmerged"][$0.local.rawValue] ?? "unchanged",
                      upstream: ["M": "changed", "A": "new", "D": "deleted"][$0.upstream.rawValue] ?? "unchanged",
                      conflict: $0.conflict?.label)
        }
    }
}

struct FetchJSON: Encodable {
    struct Collection: Encodable {
        var name: String
        var listed: Int
        var downloaded: Int
        var notModified: Int
        var listingRequests: Int
        var behind: ChangeCounts
        var dropped: Bool?
        var incremental: Bool
        var notDownloaded: Int?
        var failed: Int?
    }
    var previous: String?
    var current: String?
    var updated: Bool
    var listed: Int
    var downloaded: Int
    var behind: ChangeCounts
    var collections: [Collection]
    var failures: [String]
    var vanished: [String]
    var unconfirmed: [String]?
    var warnings: [String]?
    var interrupted: Bool?
    var notDownloaded: Int?
    var unlisted: [String]?
    var requests: Int
    var bytesReceived: Int

    init(_ report: FetchReport) {
        previous = report.previous?.hex
        current = report.current?.hex
        updated = report.updated
        listed = report.listed
        downloaded = report.downloaded
        behind = report.behind
        collections = report.collections.map {
            Collection(name: $0.name, listed: $0.listed, downloaded: $0.downloaded, notModified: $0.notModified,
                       listingRequests: $0.listingRequests, behind: $0.behind, dropped: $0.dropped ? true : nil,
                       incremental: $0.incremental, notDownloaded: report.interrupted ? $0.notDownloaded : nil,
                       failed: $0.failed > 0 ? $0.failed : nil)
        }
        failures = report.failures
        vanished = report.vanished
        unconfirmed = report.unconfirmed.isEmpty ? nil : report.unconfirmed
        warnings = report.warnings.isEmpty ? nil : report.warnings
        if report.interrupted {
            interrupted = true
            notDownloaded = report.notDownloaded
            unlisted = report.unlisted
        }
        requests = report.requests
        bytesReceived = report.bytesReceived
    }
}

struct SyncJSON: Encodable {
    var outcome: String
    var previous: String?
    var current: String?
    var counts: ChangeCounts
    var paths: [String]
    var undoneOwnPaths: [String]?
    var overwrittenEdits: [String]?
    /// With `--force` during a merge: the merged commits recorded as parents, or dropped.
    var finishedMerge: [String]?
    var droppedMerge: [String]?
    var plannedDownloads: Int?
    var plannedBodiesInListing: Int?
    var listingRequests: Int?
    /// `--dry-run` (a sync's are in `fetch`): what its listings saw amiss; `--offline`: that the
    /// fetch it applies could not download some items.
    var warnings: [String]?
    var fetch: FetchJSON?
    var finishedInterrupted: InterruptedSyncJSON?
    var interruptedSync: InterruptedSyncJSON?

    init(_ report: SyncReport) {
        switch report.outcome {
        case .fresh: outcome = "fresh"
        case .upToDate: outcome = "up-to-date"
        case .updated: outcome = "updated"
        case .planned: outcome = "planned"
        case .incompleteFetch: outcome = "incomplete-fetch"
        case .interrupted: outcome = "interrupted"
        }
        previous = report.previous?.hex
        current = report.current?.hex
        counts = report.counts
        paths = report.paths
        undoneOwnPaths = report.undoneOwnPaths.isEmpty ? nil : report.undoneOwnPaths
        overwrittenEdits = report.overwrittenEdits.isEmpty ? nil : report.overwrittenEdits
        finishedMerge = report.finishedMerge.isEmpty ? nil : report.finishedMerge
        droppedMerge = report.droppedMerge.isEmpty ? nil : report.droppedMerge
        plannedDownloads = report.outcome == .planned ? report.plannedDownloads : nil
        plannedBodiesInListing = report.outcome == .planned ? report.plannedBodiesInListing : nil
        listingRequests = report.outcome == .planned ? report.listingRequests : nil
        warnings = report.warnings.isEmpty ? nil : report.warnings
        fetch = report.fetch.map(FetchJSON.init)
        finishedInterrupted = report.finishedInterrupted.map(InterruptedSyncJSON.init)
        interruptedSync = report.interruptedSync.map(InterruptedSyncJSON.init)
    }
}

/// A sync a killed run had left unfinished.
struct InterruptedSyncJSON: Encodable {
    var branch: String
    var from: String?
    var to: String
    /// Set while the sync is still running (a status beside it), in that run's process.
    var runningPid: Int32?
    /// `sync`, or `rollback` for a rollback's move (both keep one journal).
    var command: String

    init(_ sync: InterruptedSync) {
        branch = sync.branch
        from = sync.from?.hex
        to = sync.to.hex
        runningPid = sync.runningPid
        command = sync.command
    }
}

struct DiffJSON: Encodable {
    var from: String
    var to: String
    var files: [DiffEntry]
    var insertions: Int
    var deletions: Int
    init(_ result: DiffResult) {
        from = result.from
        to = result.to
        files = result.entries
        insertions = result.insertions
        deletions = result.deletions
    }
}

struct RollbackJSON: Encodable {
    var restored: String
    var previous: String
    var current: String
    var hard: Bool
    var paths: [String]
    var overwrittenEdits: [String]?
    var undoneOwnPaths: [String]?
    var droppedOwnCommits: [String]?
    init(_ report: RollbackReport, hard: Bool) {
        restored = report.restored.hex
        previous = report.previous.hex
        current = report.current.hex
        self.hard = hard
        paths = report.paths
        overwrittenEdits = report.overwrittenEdits.isEmpty ? nil : report.overwrittenEdits
        undoneOwnPaths = report.undoneOwnPaths.isEmpty ? nil : report.undoneOwnPaths
        droppedOwnCommits = report.droppedOwnCommits.isEmpty ? nil : report.droppedOwnCommits
    }
}
