import Foundation
import GitStore
import Upstreams

/// Options of `sync`.
public struct SyncOptions: Sendable {
    /// Plan only: the report says what a sync would change (``SyncReport/Outcome/planned``), and
    /// nothing changes (upstream is still listed, unless `offline`).
    public var dryRun = false
    /// Do nothing when the last successful sync is younger than this many seconds (not negative).
    public var ifStaleSeconds: Double?
    /// Overwrite local edits.
    public var force = false
    /// Skip the fetch; apply what the last fetch stored.
    public var offline = false
    public var fetch = FetchOptions()
    /// Apply nothing when some items fail to download (a clone's first sync: it keeps what it
    /// stored on the upstream-tracking ref and checks nothing out).
    package var holdOnFailures = false
    public init(dryRun: Bool = false, ifStaleSeconds: Double? = nil, force: Bool = false,
                offline: Bool = false, fetch: FetchOptions = FetchOptions()) {
        self.dryRun = dryRun
        self.ifStaleSeconds = ifStaleSeconds
        self.force = force
        self.offline = offline
        self.fetch = fetch
    }
}

/// A sync that a killed run left unfinished (its journal in `.git/tidemark/sync-journal`): it was
/// moving `branch` from `from` to `to`, and the next `fetch`, `sync` or `rollback` finishes it.
public struct InterruptedSync: Sendable, Equatable {
    /// The branch's short name (`main`).
    public let branch: String
    public let from: ObjectID?
    public let to: ObjectID
    /// The pid of the run that is making this sync now, when it is running rather than killed
    /// (``Mirror/status()`` may run beside it); nil for a sync a killed run left.
    public var runningPid: Int32?
    /// The command that was making it: `rollback` when it moves the branch back to an earlier
    /// snapshot or to a commit restoring one, else `sync` (both keep one journal).
    public var command = "sync"
}

/// A branch with no commit in a mirror that shows it had one (``Mirror/lostBranch(_:)``).
public struct LostBranch: Sendable, Equatable {
    /// The newest id the branch's reflog records: its tip when the ref was lost.
    public let lastKnown: ObjectID?
    /// The files the index holds (a new branch's index is empty).
    public let indexedFiles: Int
}

/// What a sync did or, with `--dry-run`, would do.
public struct SyncReport: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// `--if-stale`: the last sync, and the fetch it applied, are recent enough (`lastSync`:
        /// the older of the two); nothing was contacted.
        case fresh(lastSync: Date)
        /// The branch already matched upstream.
        case upToDate
        /// The branch moved to a new snapshot.
        case updated
        /// `--dry-run`: what would change.
        case planned
        /// Some items could not be downloaded: the rest was applied (``MirrorError/incompleteSync(_:)``,
        /// whose report has the counts, `previous` and `current`), the failed items kept as the
        /// branch had them and no deletion applied; or, for a clone's first sync, nothing was
        /// (``MirrorError/incompleteFetch(_:)``). Never returned by ``Mirror/sync(_:)``, which
        /// throws instead; for reports made from those errors.
        case incompleteFetch
        /// The run was interrupted during its downloads (``MirrorError/interrupted(_:)``): what
        /// did download is stored on `refs/tidemark/upstream`; the branch did not move. Never
        /// returned by ``Mirror/sync(_:)``, which throws instead; for reports made from that error.
        case interrupted
    }
    public var outcome: Outcome
    public var fetch: FetchReport?
    /// Changes applied (or planned) to the branch.
    public var counts: ChangeCounts
    /// The paths whose files change in the working tree. A dry run's name the items' files only
    /// (without `.tidemark/<collection>.manifest`, which the sync's include).
    public var paths: [String]
    public var previous: ObjectID?
    public var current: ObjectID?
    /// Items a dry run would download (fetch requests beyond the listing).
    public var plannedDownloads: Int
    /// Items a dry run would store whose bodies the listing brought (a `rest` listing without
    /// `itemURL`; `dir` files read as they were listed): no download, though the sync counts
    /// them as downloaded.
    public var plannedBodiesInListing = 0
    /// HTTP requests a dry run made to list upstream (the sync would make them again); 0 for `dir`.
    public var listingRequests = 0
    /// With `--force`: the paths commits of the user's own had changed, which this sync gave
    /// upstream's version again (or removed); with `--dry-run` too, those it would.
    public var undoneOwnPaths: [String] = []
    /// `--dry-run`: what its listings saw amiss (``FetchReport/warnings``; a sync's are in its
    /// `fetch`). `--offline`: that the fetch it applies could not download some items.
    public var warnings: [String] = []
    /// With `--force`: the commits an unfinished merge would have joined (`MERGE_HEAD`), which the
    /// sync dropped as `git reset --hard` drops them, since they hold commits of the user's own,
    /// not only snapshots (short ids); empty when no merge was dropped.
    public var droppedMerge: [String] = []
    /// With `--force`: the commits of another clone's snapshots an unfinished merge joins, which
    /// the sync's new snapshot records as its other parents (short ids); with `--dry-run`, those
    /// it would. Empty when no such merge was under way.
    public var finishedMerge: [String] = []
    /// With `--force`: the items edited locally (or untracked files in the way) that this sync
    /// wrote over or removed; with `--dry-run` too, those it would.
    public var overwrittenEdits: [String] = []
    /// The sync a killed run left unfinished, finished before this one started.
    public var finishedInterrupted: InterruptedSync?
    /// `--dry-run` only: a sync a killed run left unfinished, which the sync would finish first.
    /// The plan is made against the branch, so its counts and paths include that sync's changes.
    public var interruptedSync: InterruptedSync?
}

extension SyncReport {
    /// The report of a sync whose fetch could not download every item: the branch did not move
    /// from `tip` (``Mirror/branchTip()``).
    package init(incompleteFetch fetch: FetchReport, branchAt tip: ObjectID?) {
        self.init(outcome: fetch.interrupted ? .interrupted : .incompleteFetch, fetch: fetch, counts: ChangeCounts(), paths: [], previous: tip,
                  current: tip, plannedDownloads: 0)
    }
}

extension Mirror {
    /// Fetches, then moves the branch to a snapshot equal to upstream (fast-forward when
    /// possible) and updates the working tree. Refuses to overwrite local edits unless
    /// `options.force`.
    public func sync(_ options: SyncOptions = SyncOptions()) async throws(MirrorError) -> SyncReport {
        try requireWorkingTree(for: "sync")
        try Mirror.checkJobs(options.fetch.jobs)
        if let seconds = options.ifStaleSeconds, !(seconds >= 0) {
            throw .invalidArgument("ifStaleSeconds must be 0 or more, not \(seconds)")
        }
        // Fresh: both the last sync and the fetch it applied are recent (a sync --offline applies
        // an older fetch, and a fetch alone leaves the working tree behind), no fetched snapshot
        // waits to be applied, and the last fetch got every item (none failed, none was gone, it
        // was neither interrupted, refused nor failed).
        let activity = lastActivity()
        if let seconds = options.ifStaleSeconds, let synced = activity.sync, let fetched = activity.fetch,
           case let last = min(synced, fetched), Date().timeIntervalSince(last) < seconds, max(synced, fetched).timeIntervalSinceNow <= 60,
           try upstreamCommit()?.tree == headCommit()?.tree, readState(Mirror.fetchFailuresState) == nil,
           readState(Mirror.fetchVanishedState) == nil, timedStateSinceLastFetch(Mirror.fetchInterruptedState) == nil,
           timedStateSinceLastFetch(Mirror.fetchRefusedState) == nil, timedStateSinceLastFetch(Mirror.fetchFailedState) == nil {
            let tip = try headCommit()?.id
            return SyncReport(outcome: .fresh(lastSync: last), fetch: nil, counts: ChangeCounts(), paths: [],
                              previous: tip, current: tip, plannedDownloads: 0)
        }
        await takeTurn()
        defer { endTurn() }
        // A dry run in a mirror the user cannot write (another user's, a read-only mount) plans
        // without the run lock: it writes nothing.
        let lock = options.dryRun && access(gitDirectory, W_OK) != 0 ? nil : try lock()
        defer { withExtendedLifetime(lock) {} }
        let branch = try checkedOutBranch()
        // Checked before anything is fetched or written; a clone's first checkout that a killed
        // run left (its journal) leaves an index behind too, which the sync finishes.
        if !options.force, readState("sync-journal") == nil, let lost = try lostBranch(branch) {
            throw .lostBranch(branch: Mirror.shortBranchName(branch), lost)
        }
        try requireIndex(of: try headCommit(), force: options.force, rebuild: !options.dryRun)
        if options.dryRun {
            // A dry run changes nothing: a sync a killed run left is reported, not finished.
            finishedInterruptedSync = nil
            var report = options.offline ? try planOfflineSync(options) : try await planSync(options)
            report.interruptedSync = try pendingInterruptedSync()
            if options.force {
                let merge = try forcedMerge(into: try headCommit())
                (report.finishedMerge, report.droppedMerge) = (merge.finished.map { $0.short() }, merge.dropped.map { $0.short() })
            }
            return report
        }
        try recoverInterruptedSync(force: options.force)
        try catchUpUpstreamRef()
        defer { indexPreload = nil }
        // The trees and manifests the fetch writes or rebuilds from, which the checkout reads again.
        try mirrorErrors { try repository.rememberObjects() }
        defer { repository.forgetRememberedObjects() }
        var fetchReport: FetchReport?
        if !options.offline {
            var fetchOptions = options.fetch
            fetchOptions.preloadIndex = true
            let report = try await fetchLocked(fetchOptions)
            if report.interrupted { throw .interrupted(report) }
            if !report.failures.isEmpty, options.holdOnFailures { throw .incompleteFetch(report) }
            fetchReport = report
        }
        var report = try apply(force: options.force, after: fetchReport)
        report.fetch = fetchReport
        if options.offline { report.warnings = offlineFetchWarnings() }
        report.finishedInterrupted = finishedInterruptedSync
        // With --force, the edits finishing that sync wrote over are named too.
        report.overwrittenEdits = Mirror.adding(report.overwrittenEdits, to: finishingOverwrote)
        // Items that failed do not hold the rest back (as rclone's and vdirsyncer's syncs go on):
        // the snapshot applied keeps them as the branch had them, deletes nothing and holds the
        // watermark, so the next sync asks for them again.
        if let fetchReport, !fetchReport.failures.isEmpty {
            report.outcome = .incompleteFetch
            throw .incompleteSync(report)
        }
        return report
    }

    /// A dry run of `sync --offline`: what applying the last fetched snapshot would change and
    /// refuse, without contacting upstream (as the sync does not).
    func planOfflineSync(_ options: SyncOptions) throws(MirrorError) -> SyncReport {
        // The sync first finishes a sync a killed run left (refusing what that would write
        // over), then applies the last fetch to the branch as that leaves it.
        if !options.force { try refuseUnfinishedGitWork() }
        var head = try headCommit()
        var finishing: [String] = []
        if let journal = readState("sync-journal"), let (old, target, _) = try unfinishedSync(journal) {
            finishing = try unfinishedCheckout(from: old, to: target, force: options.force).overwritten
            head = target
        }
        guard let upstream = try upstreamCommit() else { throw .nothingFetched("nothing to apply offline") }
        try requireSnapshot(upstream)
        guard let head, head.tree != upstream.tree else {
            var report = SyncReport(outcome: .planned, fetch: nil, counts: try changes(from: head?.tree, to: upstream.tree),
                                    paths: [], previous: head?.id, current: nil, plannedDownloads: 0)
            if let head { report.overwrittenEdits = Mirror.adding(try forcedGitOperationPaths(options, head: head.tree), to: finishing) }
            report.warnings = offlineFetchWarnings()
            return report
        }
        let undone = try ownChangesUndone(head: head, by: upstream.tree, force: options.force, branch: try checkedOutBranch())
        let paths = try mirrorErrors { try repository.diffTrees(head.tree, upstream.tree).deltas.map(\.path) }
        let overwritten = try changesInTheWay(from: head.tree, to: upstream.tree, among: paths, force: options.force, untracked: .always)
        var report = SyncReport(outcome: .planned, fetch: nil, counts: try changes(from: head.tree, to: upstream.tree),
                                paths: paths.filter { !$0.hasPrefix(Mirror.metadataFolder + "/") }, previous: head.id,
                                current: nil, plannedDownloads: 0)
        report.undoneOwnPaths = undone
        report.overwrittenEdits = Mirror.adding(Mirror.adding(try forcedGitOperationPaths(options, head: head.tree), to: overwritten),
                                                to: finishing)
        report.warnings = offlineFetchWarnings()
        return report
    }

    /// For `sync --offline`: a warning when the fetch it applies could not download some items
    /// (``FetchReport/failures``, kept in the state until a fetch stores them). Its snapshot holds
    /// them as the branch had them, which the sync applies as it would any snapshot, so it is no
    /// failure; but the user who did not see that fetch should know what it lacks.
    func offlineFetchWarnings() -> [String] {
        let failures = pendingFetchFailures()
        guard !failures.isEmpty else { return [] }
        let one = failures.count == 1
        return ["the fetch applied could not download \(failures.count) item\(one ? "" : "s") (\(one ? "it stays" : "they stay") as the "
                + "branch had \(one ? "it" : "them"), and \(one ? "its collection deletes" : "their collections delete") nothing): "
                + "'tidemark sync' asks for \(one ? "it" : "them") again, 'tidemark status' names \(one ? "it" : "them")"]
    }

    /// `names`, then those of `more` it lacks: one list of what a forced run writes over, a file
    /// both edited in its way and left by the git operation it ends named once.
    static func adding(_ more: [String], to names: [String]) -> [String] {
        names + more.filter { !names.contains($0) }
    }

    /// With `--force`, the files a plan's sync would write over to end a conflict or unfinished
    /// merge (``endGitOperation(at:)``), named as HEAD's tree names them; none without.
    func forcedGitOperationPaths(_ options: SyncOptions, head: ObjectID) throws(MirrorError) -> [String] {
        guard options.force else { return [] }
        return try describe(paths: try gitOperationPaths(against: head).paths, in: head)
    }

    /// A dry run: lists upstream and compares, but writes nothing (no objects, no refs).
    func planSync(_ options: SyncOptions) async throws(MirrorError) -> SyncReport {
        try await withUpstream(jobs: options.fetch.jobs) { (upstream) async throws(MirrorError) in
            try await planSync(options, from: upstream)
        }
    }

    func planSync(_ options: SyncOptions, from upstream: any Upstream) async throws(MirrorError) -> SyncReport {
        let requestsBefore = upstream.statistics.requests
        // The sync first finishes a sync a killed run left, refusing what that would write over;
        // so does its plan, which then starts where that leaves the branch (a killed `--force`
        // run has already replaced commits of the user's own: they are not refused again).
        if !options.force { try refuseUnfinishedGitWork() }
        let unfinished = try readState("sync-journal").map { (journal) throws(MirrorError) in try unfinishedSync(journal) } ?? nil
        var head = try headCommit()
        var finishing: [String] = []
        if let (old, target, _) = unfinished {
            finishing = try unfinishedCheckout(from: old, to: target, force: options.force).overwritten
            head = target
        }
        // The plan's tree is not built: the last fetched snapshot stands in for it, so a change
        // of the user's own that upstream made too (an item both deleted) is not one undone.
        let fetched = try upstreamCommit()
        var base = fetched
        if base == nil { base = try lastSnapshot(from: head) }
        // Listed as the sync's fetch lists: incrementally from the base's watermarks, when the
        // upstream takes them (it listed everything, and planned deletions the sync never saw).
        let baseMessage = base.flatMap { SnapshotMessage.parse($0.message) }
        var counts = ChangeCounts()
        var downloads = 0
        var bodiesInListing = 0
        var paths: [String] = []
        var deleted = Set<String>()
        var added: [(path: String, name: String)] = []
        var changedCollections: [String] = []
        var planned: [String: ObjectID] = [:]
        var warnings: [String] = []
        // Per collection, the manifest the sync's fetch builds on and the items it changes there
        // (their versions not known before their downloads): what a manifest changed in the
        // working tree is compared with (``workingManifestSurvives(at:head:theirs:unknown:)``).
        var manifestBases: [String: (blob: ObjectID?, changing: Set<ItemID>)] = [:]
        let reshape = bodyReshape(base: base)
        let fullListing = options.fetch.fullListing || !reshape.isEmpty || fullListingDue()
        let racy = try racyCheck(after: base)
        for collection in settings.collections {
            let headBlob = try manifestBlob(collection, in: head?.tree)
            let headTable = try manifestTable(collection, blob: headBlob)
            let baseBlob = try manifestBlob(collection, in: base?.tree)
            let cached = try manifestTable(collection, blob: baseBlob)
            let listing: Listing
            do {
                let since = listingStart(collection, after: baseMessage, full: fullListing)
                listing = reshape.covers(collection) ? try await upstream.list(collection: collection, since: since, cached: .none)
                    : try await upstream.list(collection: collection, since: since, cached: cached)
            } catch {
                if Task.isCancelled || error is CancellationError { throw .cancelled }
                throw .upstream(Mirror.upstreamError(error, listing: collection))
            }
            warnings += listing.warnings
            let reshaping = reshape.items(of: collection, in: listing)
            if !reshaping.isEmpty {
                // Their bodies are not known before they come: the counts cannot show them.
                warnings.append("\(collection): \(reshaping.count) item\(reshaping.count == 1 ? " is" : "s are") downloaded again for "
                                + "the changed \(StatusReport.bodySettingKeys); the changes counted leave out what that does to their files")
            }
            let fetchPlan = try plan(collection: collection, listing: listing, base: cached, racy: racy,
                                     repair: reshaping, options: options.fetch)
            manifestBases[Mirror.manifestPath(collection)] = (
                baseBlob, Set(fetchPlan.downloads.map(\.item.id)).union(fetchPlan.deletions.map(cached.id(at:))))
            downloads += fetchPlan.downloads.filter { $0.item.body == nil }.count
            bodiesInListing += fetchPlan.downloads.filter { $0.item.body != nil }.count
            // What the sync would change: the same plan, made against HEAD (counting only, so the
            // mass-deletion guard already applied above against the fetched snapshot).
            var counting = options.fetch
            counting.allowMassDelete = true
            let changes = try plan(collection: collection, listing: listing, base: headTable,
                                   cachedFrom: cached, racy: RacyCheck(undated: false), options: counting)
            let sinceFetch = Set(fetchPlan.downloads.map { "\(collection)/\($0.path)" })
            let ignored = ignoredFields
            for (item, path, old) in changes.downloads {
                let file = "\(collection)/\(path)"
                // The blob the sync writes there, when known without downloading: the body the
                // listing carries, or the fetched snapshot's for an item unchanged since.
                if let body = item.body, let canonical = try? CanonicalJSON.canonicalize(body, leavingOut: ignored) {
                    planned[file] = ObjectID.hashBlob(canonical)
                } else if !sinceFetch.contains(file), let fetched {
                    planned[file] = try mirrorErrors { try repository.treeEntry(at: file, in: fetched.tree)?.id }
                }
                guard old != nil else {
                    counts.added += 1
                    added.append((file, "\(collection)/\(Quoting.display(item.id))"))
                    paths.append(file)
                    continue
                }
                // A new version with the same body (one the listing carries, or the fetched one)
                // changes the manifest, not the file: the sync neither counts it, writes it nor
                // checks it.
                if let head, let blob = planned[file], try mirrorErrors({ try repository.treeEntry(at: file, in: head.tree) })?.id == blob {
                    continue
                }
                counts.changed += 1
                paths.append(file)
            }
            counts.deleted += changes.deletions.count
            var gone = changes.deletions.map { "\(collection)/\(headTable.entry(at: $0).path)" }
            var fetchedChanges = false
            // A listing that is not whole (incremental, `sinceParam`) names only what changed since
            // the fetched snapshot's watermark: what that snapshot already holds against HEAD (a
            // fetch stored it, deletions a whole listing found among it) the sync applies too.
            if !listing.isComplete, let fetched, fetched.tree != head?.tree {
                var named = Set(listing.items.map(\.id)).union(listing.deleted)
                for position in listing.unchanged { named.insert(cached.id(at: position)) }
                let held = try manifestChanges(collection, from: headBlob, to: try manifestBlob(collection, in: fetched.tree))
                for change in held {
                    guard let entry = change.new ?? change.old, !named.contains(entry.id) else { continue }
                    fetchedChanges = true
                    let file = "\(collection)/\(entry.path)"
                    guard change.new != nil else {
                        counts.deleted += 1
                        gone.append(file)
                        continue
                    }
                    let blob = try mirrorErrors { try repository.treeEntry(at: file, in: fetched.tree)?.id }
                    planned[file] = blob
                    guard change.old != nil else {
                        counts.added += 1
                        added.append((file, "\(collection)/\(Quoting.display(entry.id))"))
                        paths.append(file)
                        continue
                    }
                    if let head, try mirrorErrors({ try repository.treeEntry(at: file, in: head.tree) })?.id == blob { continue }
                    counts.changed += 1
                    paths.append(file)
                }
            }
            paths += gone
            deleted.formUnion(gone)
            if !changes.downloads.isEmpty || !gone.isEmpty || fetchedChanges { changedCollections.append(collection) }
            // Nothing changed since the fetch: the sync writes the fetched snapshot's manifest.
            if fetchPlan.downloads.isEmpty, fetchPlan.deletions.isEmpty, let fetched {
                let manifest = Mirror.manifestPath(collection)
                planned[manifest] = try mirrorErrors { try repository.treeEntry(at: manifest, in: fetched.tree)?.id }
            }
        }
        // Collections no longer configured leave the snapshot, as the fetch would drop them (it
        // refuses to unless allowed), and a sync deletes what HEAD holds of them.
        let dropped = try droppedCollections(base: base?.tree, head: head?.tree, allowed: options.fetch.allowMassDelete)
        for name in dropped.all {
            guard let head else { continue }
            let gone = try filePaths(under: name, in: head.tree)
            counts.deleted += try itemCount(name, in: head.tree)
            paths += gone
            deleted.formUnion(gone)
            if !gone.isEmpty { changedCollections.append(name) }
        }
        // Commits of the user's own that the sync would undo: against the fetched snapshot and what
        // the listing changes since (the manifests of the collections that change, the items it
        // writes, and those it deletes that HEAD still holds: one the user deleted too is no undo).
        var changing = Set(changedCollections.map(Mirror.manifestPath))
        for path in paths where !deleted.contains(path) { changing.insert(path) }
        if let head {
            for path in deleted where try mirrorErrors({ try repository.treeEntry(at: path, in: head.tree) }) != nil {
                changing.insert(path)
            }
        }
        let undone = try ownChangesUndone(head: head, by: fetched?.tree, alsoChanging: changing,
                                          unknownItems: manifestBases.mapValues(\.changing),
                                          force: options.force, branch: try checkedOutBranch())
        // What the sync would refuse, refused here too: the plan of a run that cannot happen
        // would mislead (a script checking with --dry-run first). Not while a killed run's sync
        // is unfinished: the files it wrote differ from HEAD, and the sync finishes it first.
        // With --force, what it would write over instead, said before it does.
        // The target's blobs are those the listing gives (`planned`), its new items named as listed.
        var overwritten: [String] = []
        if let head, !changedCollections.isEmpty, unfinished == nil {
            let names = Dictionary(added.map { ($0.path, $0.name) }, uniquingKeysWith: { a, _ in a })
            overwritten = try changesInTheWay(
                from: head.tree, among: paths + changedCollections.map(Mirror.manifestPath), force: options.force, untracked: .always,
                targetBlob: { planned[$0] }, deletedByTarget: { deleted.contains($0) },
                manifestSurvives: { (path) throws(MirrorError) in
                    guard let (blob, changing) = manifestBases[path] else { return false }
                    return try workingManifestSurvives(at: path, head: head.tree, theirs: blob, unknown: changing)
                },
                inTheWay: { () throws(MirrorError) in
                    try untrackedPaths(among: added.map(\.path), head: head.tree, targetBlob: { planned[$0] }).map { inTheWay(names[$0]!, at: $0) }
                })
        }
        var report = SyncReport(outcome: .planned, fetch: nil, counts: counts, paths: Array(Set(paths + undone)).sorted(),
                                previous: head?.id, current: nil, plannedDownloads: downloads,
                                listingRequests: upstream.statistics.requests - requestsBefore)
        report.undoneOwnPaths = undone
        report.plannedBodiesInListing = bodiesInListing
        report.warnings = warnings
        let ending = try head.map { (head) throws(MirrorError) in try forcedGitOperationPaths(options, head: head.tree) } ?? []
        report.overwrittenEdits = Mirror.adding(Mirror.adding(ending, to: overwritten), to: finishing)
        return report
    }

    /// Moves the branch to the upstream-tracking snapshot and updates the working tree.
    ///
    /// - Parameter fetch: the fetch this run just made, whose comparisons are reused when HEAD
    ///   and the upstream-tracking ref are still where that fetch left them.
    func apply(force: Bool, after fetch: FetchReport? = nil) throws(MirrorError) -> SyncReport {
        // The sync moved the ref up to any newer snapshot on the branch (``catchUpUpstreamRef()``).
        guard let tracked = try trackedUpstreamCommit() else { throw .nothingFetched("nothing to apply offline") }
        try requireSnapshot(tracked)
        var upstream = tracked
        let head = try headCommit()
        let branch = try checkedOutBranch()
        // `--force` during a merge (a `git pull` of another clone of the mirror that conflicted)
        // finishes it: the new snapshot joins the commits merged, so the branch holds them and
        // can be pushed; ending the merge alone left it diverged, the pull to conflict again.
        let (joined, dropped) = force ? try forcedMerge(into: head) : ([], [])
        // A merged snapshot listed after the last fetch (`sync --offline`) is upstream's newest:
        // the merge ends on it, not on an older tree that would take its items back.
        for id in joined {
            if let commit = try? repository.commit(id), isNewerSnapshot(commit, than: upstream) { upstream = commit }
        }
        if head?.tree == upstream.tree, joined.isEmpty {
            // Nothing to apply; but as `git pull` does, not during a conflict or an unfinished
            // merge, which `--force` ends.
            overwrittenEdits = []
            if let head {
                if force { overwrittenEdits = try endGitOperation(at: head.tree) } else { try refuseUnfinishedGitWork() }
            }
            // A snapshot with the same tree stands for upstream from now on; a commit of the user's
            // (a merge that took a pulled snapshot whole) does not: it carries no watermarks.
            if head?.id != upstream.id, let head, try writtenSnapshotMessage(head) != nil {
                try updateRef(Mirror.upstreamRef, to: head.id, expected: tracked.id, message: "tidemark sync: up to date")
            }
            try writeState("last-sync", Timestamp(date: Date()).raw + "\n", durable: false)
            var report = SyncReport(outcome: .upToDate, fetch: nil, counts: ChangeCounts(), paths: [],
                                    previous: head?.id, current: head?.id, plannedDownloads: 0)
            report.overwrittenEdits = overwrittenEdits
            report.droppedMerge = dropped.map { $0.short() }
            return report
        }
        let undone = try ownChangesUndone(head: head, by: upstream.tree, force: force, branch: branch)
        // Fast-forward when the upstream snapshot sits on the branch tip; else a new snapshot
        // with upstream's tree on top of the branch.
        var target = upstream.id
        // The fetch of this run compared against this HEAD and built this upstream commit.
        let reusable = fetch.flatMap { $0.built.map { $0.head == head?.id } == true && $0.current == upstream.id ? $0 : nil }
        let counts: ChangeCounts
        if let reusable {
            counts = reusable.behind
        } else {
            counts = try changes(from: head?.tree, to: upstream.tree)
        }
        // A snapshot setting back commits of the user's own (`--force`) says so in its message:
        // one the fetch built on them is written again with it (`git log` read "no changes").
        if upstream.parents != (head.map { [$0.id] } ?? []) || !joined.isEmpty || !undone.isEmpty {
            var message = SnapshotMessage.parse(upstream.message)
                ?? SnapshotMessage(verb: "Sync", upstream: settings.upstream, collections: [], counts: counts, items: 0)
            message.verb = "Sync"
            message.counts = counts
            message.perCollection = [:]
            message.tree = upstream.tree.hex
            message.undone = undone.count
            // A sync restores nothing (the upstream snapshot may be a rollback that stood for it).
            message.restores = nil
            target = try mirrorErrors {
                try repository.createCommit(tree: upstream.tree, parents: (head.map { [$0.id] } ?? []) + joined,
                                            message: message.render(), author: signature(), committer: signature(.committer))
            }
        }
        let merged = joined.isEmpty ? "" : ", merging " + joined.map { $0.short() }.joined(separator: " ")
        let paths = try moveBranch(branch, from: head, to: target, force: force,
                                   reflog: head == nil ? "tidemark clone: from \(settings.upstream)"
                                       : "tidemark sync: \(counts.summary)\(SnapshotMessage.undid(undone.count))\(merged)",
                                   changed: reusable?.built.flatMap { $0.baseTree == head?.tree ? $0.paths : nil })
        if target != upstream.id {
            try updateRef(Mirror.upstreamRef, to: target, expected: tracked.id, message: "tidemark sync: rebased on \(branch)")
        }
        try writeState("last-sync", Timestamp(date: Date()).raw + "\n", durable: false)
        var report = SyncReport(outcome: .updated, fetch: nil, counts: counts, paths: paths, previous: head?.id,
                                current: target, plannedDownloads: 0)
        report.undoneOwnPaths = undone
        report.overwrittenEdits = overwrittenEdits
        report.droppedMerge = dropped.map { $0.short() }
        report.finishedMerge = joined.map { $0.short() }
        return report
    }

    /// Checks the working tree for local edits on the paths that change, records a journal,
    /// updates the working tree, then moves the branch with compare-and-swap; git's index lock
    /// is held from the journal to the branch update.
    /// Returns the changed paths.
    ///
    /// - Parameter known: the paths that differ between HEAD's tree and the target's, when the
    ///   caller knows them (the fetch that built the target's tree from HEAD's).
    func moveBranch(_ branch: String, from head: Commit?, to target: ObjectID, force: Bool, reflog: String,
                    changed known: [String]? = nil, by command: String = "sync") throws(MirrorError) -> [String] {
        let targetCommit = try mirrorErrors { try repository.commit(target) }
        let changed: [String]
        if let known {
            changed = known
        } else {
            let deltas = try mirrorErrors { try repository.diffTrees(head?.tree, targetCommit.tree).deltas }
            changed = deltas.map(\.path)
            // Not this run's fetch (which just wrote them): a rollback to an old snapshot, a sync
            // of an earlier fetch. A blob a damaged store lost is named before any file is
            // touched: the checkout deleted files, failed on it, and left a journal that every
            // later run failed to finish.
            if head != nil { try checkPresent(deltas.filter { $0.status != .deleted && !$0.newIsSubmodule }, by: command) }
        }
        // A first checkout (clone) writes into a folder it found empty: only the top folders
        // are checked then, not each of a possibly 100k-item tree's paths.
        try checkWritable(head == nil ? [] : changed, target: targetCommit.tree)
        // A lock another git process holds is reported by name before anything else reads or
        // writes the index.
        try checkGitLocks(index: true, refs: [branch])
        if let preload = indexPreload {
            repository.adopt(preload)
            indexPreload = nil
        }
        overwrittenEdits = []
        if let head {
            if !force { try refuseUnfinishedGitWork() }
            // Without force the untracked files in the way are looked for only after an edit (the
            // checkout meets them anyway, and refuses them by name); with it, to be named.
            overwrittenEdits = try changesInTheWay(from: head.tree, to: targetCommit.tree, among: changed, force: force,
                                                   untracked: force ? .always : .afterAnEdit)
            if !force { crashPoint("after-local-edits") }
        }
        let moved = try withIndexLockHeld { () throws(MirrorError) in
            try checkOutAndMove(branch, from: head, to: targetCommit, force: force, reflog: reflog, changed: changed)
        }
        if force { overwrittenEdits = Mirror.adding(try endGitOperation(at: targetCommit.tree), to: overwrittenEdits) }
        return moved
    }

    /// Throws ``MirrorError/objectsMissing(count:first:path:reason:by:)`` when a file `deltas`
    /// writes has no object on disk.
    private func checkPresent(_ deltas: [DiffDelta], by command: String) throws(MirrorError) {
        guard !deltas.isEmpty else { return }
        let unreadable = try mirrorErrors { try repository.unreadableOnDisk(deltas.map(\.newID)) }
        let ids = Set(unreadable.map(\.id))
        guard let first = deltas.first(where: { ids.contains($0.newID) }),
              let error = unreadable.first(where: { $0.id == first.newID })?.error else { return }
        throw .objectsMissing(count: ids.count, first: first.newID, path: first.path,
                              reason: error.code == .notFound ? nil : error.message, by: command)
    }

    /// What `--force` does with an unfinished merge into `head` (`MERGE_HEAD`), for the sync, its
    /// dry run and `status` alike: when each commit it joins is a snapshot of this upstream
    /// (another clone's sync, which the new snapshot supersedes), they are `finished`, recorded as
    /// the new snapshot's other parents; otherwise (a commit of someone's own among them) they are
    /// `dropped`, the merge ending as `git reset --hard` ends it, so a change it leaves out is not
    /// recorded as merged. Both empty when no merge is under way.
    func forcedMerge(into head: Commit?) throws(MirrorError) -> (finished: [ObjectID], dropped: [ObjectID]) {
        guard let head, repository.operationInProgress() == "merge" else { return ([], []) }
        let heads = try mirrorErrors { try repository.mergeHeads() }.filter { $0 != head.id }
        for id in heads {
            guard let commit = try? repository.commit(id), let message = try writtenSnapshotMessage(commit),
                  isSnapshotOfThisUpstream(message) else { return ([], heads) }
        }
        return (heads, [])
    }

    /// Refuses unmerged files (which libgit2's checkout cannot start over), and an unfinished
    /// merge, revert or cherry-pick, rebase or `am`, as `git pull` does not start under them (the
    /// next `git commit` would record the merge on top of the snapshot): whatever a sync would
    /// change, its dry run too. `--force` ends them instead (``endGitOperation(at:)``).
    func refuseUnfinishedGitWork() throws(MirrorError) {
        let unmerged = try mirrorErrors { try repository.unmergedPaths() }
        if !unmerged.isEmpty { throw .unmergedFiles(unmerged) }
        if let operation = repository.operationInProgress() { throw .operationInProgress(operation) }
    }

    /// Ends a conflict or a merge, revert or cherry-pick git left, as `git reset --hard` ends
    /// them (a `git commit` must not record such a merge on top of the snapshot): the files it
    /// left unmerged, or staged, get `tree`'s version, and `MERGE_HEAD` and its kin go (a sequence
    /// of picks stays, to go on with). Returns those files' names, which were written over.
    func endGitOperation(at tree: ObjectID) throws(MirrorError) -> [String] {
        let (paths, ending) = try gitOperationPaths(against: tree)
        if !paths.isEmpty {
            try withIndexLockHeld { () throws(MirrorError) in try checkout(tree, baseline: nil, paths: paths, force: true) }
        }
        if ending { try mirrorErrors { try repository.endOperationInProgress() } }
        return try describe(paths: paths, in: tree)
    }

    /// The files ``endGitOperation(at:)`` writes over with `tree`'s version, and whether a merge,
    /// revert or cherry-pick is to end: what the operation staged is its own (it starts on an
    /// index equal to HEAD's); a conflict alone (`git stash pop`) leaves the rest of the index,
    /// staged work, alone.
    func gitOperationPaths(against tree: ObjectID) throws(MirrorError) -> (paths: [String], ending: Bool) {
        let ending = repository.operationInProgress().map { ["merge", "revert", "cherry-pick"].contains($0) } ?? false
        let paths = try mirrorErrors { ending ? try repository.stagedPaths(against: tree) : try repository.unmergedPaths() }
        return (paths, ending)
    }

    /// When ``changesInTheWay(from:to:among:force:untracked:)`` looks for untracked files in the way.
    enum UntrackedCheck { case always, afterAnEdit }

    /// What a move from the tree `head` to `target` writes over among the paths `changed`: local
    /// edits (not those already holding the target's version, nor files deleted that the target
    /// deletes too), then untracked files in the way. Without `force` these are refused
    /// (``MirrorError/localEdits(_:by:)``); with it they are returned, to be named. Its callers
    /// refuse unmerged files and unfinished git operations first (``refuseUnfinishedGitWork()``).
    func changesInTheWay(from head: ObjectID, to target: ObjectID, among changed: [String], force: Bool,
                         untracked: UntrackedCheck) throws(MirrorError) -> [String] {
        let blob = targetBlob(in: target)
        return try changesInTheWay(from: head, among: changed, force: force, untracked: untracked, targetBlob: blob,
                                   deletedByTarget: { (path) throws(MirrorError) in try blob(path) == nil },
                                   manifestSurvives: { (path) throws(MirrorError) in try workingManifestSurvives(at: path, head: head, theirs: try blob(path)) },
                                   inTheWay: { () throws(MirrorError) in try untrackedInTheWay(of: changed, head: head, target: target) })
    }

    /// ``changesInTheWay(from:to:among:force:untracked:)`` with the target given by what it holds
    /// at each path (`targetBlob`, nil when not known: a dry run's item to download), whether a
    /// manifest changed in the working tree keeps its changes in the target (`manifestSurvives`,
    /// ``workingManifestSurvives(at:head:theirs:unknown:)``) and the untracked files in its way,
    /// named for a refusal (`inTheWay`).
    func changesInTheWay(from head: ObjectID, among changed: [String], force: Bool, untracked: UntrackedCheck,
                         targetBlob: (String) throws(MirrorError) -> ObjectID?,
                         deletedByTarget: (String) throws(MirrorError) -> Bool,
                         manifestSurvives: (String) throws(MirrorError) -> Bool,
                         inTheWay: () throws(MirrorError) -> [String]) throws(MirrorError) -> [String] {
        // Files already holding the target's version, or staged as new (after `git reset --soft`):
        // the untracked files in the way are looked for before the checkout meets them, which
        // would have put those files back to HEAD's version on its way out.
        var unusual = false
        let edited = try localEdits(in: head, among: changed, targetBlob: targetBlob, passedOver: { unusual = true },
                                    deletedByTarget: deletedByTarget, manifestSurvives: manifestSurvives)
        let found = untracked == .always || !edited.isEmpty || unusual ? edited + (try inTheWay()) : edited
        if !force, !found.isEmpty { throw .localEdits(found) }
        return found
    }

    /// The part of ``moveBranch(_:from:to:force:reflog:changed:by:)`` that holds the index lock:
    /// journal, checkout, branch compare-and-swap (or undo).
    private func checkOutAndMove(_ branch: String, from head: Commit?, to targetCommit: Commit, force: Bool,
                                 reflog: String, changed: [String]) throws(MirrorError) -> [String] {
        let target = targetCommit.id
        try writeState("sync-journal", "\(head?.id.hex ?? "none") \(target.hex) \(branch)\n")
        crashPoint("after-journal")
        do throws(MirrorError) {
            do throws(MirrorError) {
                try checkout(targetCommit.tree, baseline: head?.tree, paths: changed, force: force)
            } catch .localEdits(let conflicts, let command) {
                // Files staged as new that hold what the sync writes (after `git reset --soft`):
                // removed, they are written as any other. Manifests whose item changes the
                // target keeps (``workingManifestSurvives(at:head:theirs:unknown:)``): HEAD's
                // put back, to be written over.
                let removed = try removeAlreadyWritten(among: changed, head: head?.tree, target: targetCommit.tree)
                let reset = try resetSurvivingManifests(among: changed, head: head?.tree, target: targetCommit.tree)
                guard removed || reset else {
                    throw .localEdits(conflicts, by: command)
                }
                // Refused for another file, those taken out stay out: each is staged, or the
                // checkout's own first attempt wrote it (a first sync's manifest).
                try checkout(targetCommit.tree, baseline: head?.tree, paths: changed, force: force)
            }
        } catch .localEdits(let conflicts, _) {
            // A safe checkout that meets a file in the way writes nothing (what a parallel one
            // wrote is put back): the sync did not start, so no journal is left for the next run.
            removeState("sync-journal")
            let inTheWay = try untrackedInTheWay(of: changed, head: head?.tree, target: targetCommit.tree)
            throw .localEdits(inTheWay.isEmpty ? conflicts : inTheWay)
        } catch .git(let error) {
            // Some files may be written: the journal stays for the next run to finish from.
            throw .workingTreeUnfinished(error)
        }
        crashPoint("after-checkout")
        do {
            try updateRef(branch, to: target, expected: head?.id, message: reflog)
        } catch {
            // The branch moved under us (a commit made during the sync), its lock is taken, or
            // the disk is full: put back the files this sync wrote, so the working tree and index
            // match the branch again, and leave the branch alone. If that fails too (a full
            // disk), the journal stays: with the branch still at the old snapshot, the next run
            // finishes the sync instead of taking the files written for it for local edits.
            if undoCheckout(of: targetCommit.tree, back: head?.tree, paths: changed) { removeState("sync-journal") }
            throw error
        }
        crashPoint("after-branch")
        removeState("sync-journal")
        // As git's pull and reset leave it: `git reset --hard ORIG_HEAD` undoes the sync or rollback.
        // Best effort: the branch has moved whatever happens to this. Noted as any ref write is:
        // the `ORIG_HEAD.lock` a kill left stayed for good (git's merge and reset failed at it).
        if let head {
            try? withLockNote(ref: "ORIG_HEAD", target: head.id) { () throws(MirrorError) in
                crashPoint("orig-head-noted")
                try mirrorErrors { try repository.setOrigHead(head.id) }
            }
        }
        return changed
    }

    /// Best effort after a refused branch update: files that still hold what `tree` gave them
    /// return to `old` (safe checkout: anything edited since is left as it is). False when that
    /// checkout failed (or a link in the way kept it from running).
    @discardableResult
    func undoCheckout(of tree: ObjectID, back old: ObjectID?, paths: [String]) -> Bool {
        guard let old, !paths.isEmpty else { return true }
        guard (try? checkWritable(paths)) != nil else { return false }
        return (try? withLockNote { () throws(MirrorError) in
            try mirrorErrors { try repository.checkout(tree: old, baseline: tree, paths: paths, strategy: .safe) }
        }) != nil
    }

    /// Items (as `collection/id`, or paths outside collections) edited in the working tree among
    /// `paths`, compared with `tree`. A file deleted there that `deletedByTarget` says the run
    /// deletes too is no edit: nothing of the user's is lost (git's checkout takes it as well).
    /// `passedOver` is called for each changed file that is no edit because it already holds
    /// what the run writes, or is staged as new (then in the way, which the caller looks for).
    /// A manifest whose changes `manifestSurvives` in the target is no edit either: the run
    /// writes over it, item lines and all (``resetSurvivingManifests(among:head:target:)``).
    func localEdits(in tree: ObjectID, among paths: [String],
                    targetBlob: (String) throws(MirrorError) -> ObjectID? = { _ in nil },
                    passedOver: () -> Void = {},
                    deletedByTarget: (String) throws(MirrorError) -> Bool = { _ in false },
                    manifestSurvives: (String) throws(MirrorError) -> Bool = { _ in false }) throws(MirrorError) -> [String] {
        guard !paths.isEmpty else { return [] }
        let wanted = Set(paths)
        let deltas = try mirrorErrors {
            // Exact paths, checked by stat first: libgit2 compares only those that may differ.
            try repository.workingTreeChanges(tree, paths: paths)
        }
        var seen = Set<String>()
        var edited: [String] = []
        for delta in deltas where wanted.contains(delta.path) && seen.insert(delta.path).inserted {
            if delta.status == .deleted, try deletedByTarget(delta.path) {
                // Gone from the index only (`git rm --cached`, a `git reset --soft` over a sync
                // that deleted it) while a file is there: the checkout removes it only when it
                // holds HEAD's version, and refuses otherwise (the dry run did not, and printed a
                // plan the sync refused).
                var info = stat()
                guard lstat(workingTree + delta.path, &info) == 0 else { continue }
                let headBlob = try mirrorErrors { try repository.treeEntry(at: delta.path, in: tree)?.id }
                if holds(headBlob, at: delta.path) { continue }
            }
            // Edited into the very version the run writes (`git reset --soft`, a copy by hand): the
            // checkout leaves it, and nothing is lost. (A file new to the target is still in the
            // way of libgit2's checkout: named by the untracked check.)
            if delta.status == .modified, holds(try targetBlob(delta.path), at: delta.path) {
                passedOver()
                continue
            }
            if delta.status == .modified, Mirror.collection(ofManifest: delta.path) != nil, try manifestSurvives(delta.path) { continue }
            // A file `tree` lacks (staged as new): the untracked check names it as in the way.
            if delta.status == .added {
                passedOver()
                continue
            }
            edited.append(delta.path)
        }
        // Edited files git is told not to look at (assume-unchanged, skip-worktree), which the
        // diff does not see either: the checkout would write over them.
        for path in try mirrorErrors({ try repository.hiddenEdits(among: paths, comparedWith: tree) })
        where seen.insert(path).inserted {
            if holds(try targetBlob(path), at: path) { continue }
            edited.append(path)
        }
        return try describe(paths: edited, in: tree)
    }

    /// ``untrackedPaths(among:head:)``, named as `target`'s items, for a refusal.
    func untrackedInTheWay(of paths: [String], head: ObjectID?, target: ObjectID) throws(MirrorError) -> [String] {
        let found = try untrackedPaths(among: paths, head: head, targetBlob: targetBlob(in: target))
        let names = (try? describe(paths: found, in: target)) ?? found
        return zip(names, found).map { inTheWay($0, at: $1) }
    }

    /// The blob `tree` holds at a path, nil when it holds none there.
    func targetBlob(in tree: ObjectID) -> (String) throws(MirrorError) -> ObjectID? {
        { [repository] (path) throws(MirrorError) in try mirrorErrors { try repository.treeEntry(at: path, in: tree)?.id } }
    }

    /// Removes the files in the way of a checkout of `target` among `paths` that already hold
    /// what it writes there (``alreadyWritten(_:targetBlob:)``), which libgit2's safe checkout
    /// takes for conflicts however the index stages them; the checkout writes the same bytes
    /// back (or, after a kill, the next run finishes the sync from its journal). False when
    /// there was none. (One that cannot be removed stays in the checkout's way, named by it.)
    func removeAlreadyWritten(among paths: [String], head: ObjectID?, target: ObjectID) throws(MirrorError) -> Bool {
        let written = try alreadyWritten(try untrackedPaths(among: paths, head: head), targetBlob: targetBlob(in: target))
        for path in written { unlink(workingTree + path) }
        return !written.isEmpty
    }

    /// An item a refusal names as an untracked file where it goes (at `path`), or as a folder
    /// there, whose files `--force` removes.
    nonisolated func inTheWay(_ item: String, at path: String) -> String {
        var info = stat()
        guard lstat(workingTree + path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return "\(item) (untracked file in the way)" }
        return "\(item) (untracked folder in the way: --force removes it and its files)"
    }

    /// Throws ``MirrorError/ownCommits(branch:commits:items:by:)`` when the branch tip is not a
    /// tidemark snapshot and the commits made since the last one (first parents) change paths
    /// that a tree `undoneBy` sets back (a dry run passes the last fetched snapshot's); any path
    /// they change when `undoneBy` is nil. A snapshot tip (the usual case) costs one message parse.
    func checkOwnCommits(head: Commit, undoneBy target: ObjectID?, alsoChanging more: Set<String> = [],
                         unknownItems: [String: Set<ItemID>] = [:], branch: String,
                         by command: String = "sync") throws(MirrorError) {
        if let count = try commitsWithoutSnapshot(from: head) {
            throw .unrelatedBranch(branch: Mirror.shortBranchName(branch), commits: count, by: command)
        }
        let (commits, paths) = try ownCommits(head: head, undoneBy: target, alsoChanging: more, unknownItems: unknownItems)
        guard !paths.isEmpty else { return }
        throw .ownCommits(branch: Mirror.shortBranchName(branch), commits: commits,
                          items: (try? describe(paths: paths, in: head.tree)) ?? paths, by: command)
    }

    /// True when `.git/index` does not exist (``MirrorError/indexMissing``).
    var indexMissing: Bool { access(gitDirectory + "index", F_OK) != 0 && errno == ENOENT }

    /// For a sync or rollback from `head`: a missing index would make every file count as a
    /// staged deletion (the sync refused the manifest, the rollback every file), so it is refused
    /// (``MirrorError/indexMissing``), or with `force` rebuilt from the branch when `rebuild`, as
    /// `git reset` does (no staged change can be lost: there is no index to hold one).
    func requireIndex(of head: Commit?, force: Bool, rebuild: Bool = true) throws(MirrorError) {
        guard let head, indexMissing else { return }
        guard force else { throw .indexMissing }
        if rebuild { try mirrorErrors { try repository.resetIndex(to: head.tree) } }
    }

    /// What shows that `branch`, which has no commit, had one: its reflog's newest entry, or
    /// files in the index (a `.git` damaged or partly restored; `git checkout --orphan`). Nil
    /// when it has a commit, and for a branch never started with an empty index (a clone's
    /// destination, one whose downloads partly failed).
    func lostBranch(_ branch: String) throws(MirrorError) -> LostBranch? {
        guard try headCommit() == nil else { return nil }
        let lastKnown = (try? repository.reflog(branch))?.first?.id
        let indexed = try mirrorErrors { try repository.indexEntryCount() }
        guard lastKnown != nil || indexed > 0 else { return nil }
        return LostBranch(lastKnown: lastKnown, indexedFiles: indexed)
    }

    /// How many commits the branch at `head` has when none down to its root (first parents)
    /// carries tidemark's trailers (a snapshot, amended or not, or a rollback's): the branch is
    /// not the mirror's (an orphan branch, empty or not). Nil when one does, or past 1,000 commits.
    /// A snapshot tip (the usual case) costs one message parse.
    func commitsWithoutSnapshot(from head: Commit) throws(MirrorError) -> Int? {
        var count = 0
        var commit = head
        while count < 1000 {
            if SnapshotMessage.parse(commit.message) != nil { return nil }
            count += 1
            guard let parent = try firstParent(of: commit) else {
                // The root; a shallow clone's boundary may hide a snapshot below it.
                return commit.parents.isEmpty ? count : nil
            }
            commit = parent
        }
        return nil
    }

    /// The paths of commits of the user's own that `target` sets back, which `--force` undoes;
    /// without it, refuses them (``checkOwnCommits(head:undoneBy:branch:by:)``).
    ///
    /// - Parameter more: paths the run changes besides those where `target` differs from HEAD (a
    ///   dry run's: what its listing changes, which the last fetched snapshot standing in for the
    ///   target does not hold).
    ///   `unknownItems`: per manifest path, the items whose versions the run changes there that
    ///   the target does not hold yet (a dry run's downloads).
    func ownChangesUndone(head: Commit?, by target: ObjectID?, alsoChanging more: Set<String> = [],
                          unknownItems: [String: Set<ItemID>] = [:], force: Bool,
                          branch: String) throws(MirrorError) -> [String] {
        guard let head else { return [] }
        guard force else {
            try checkOwnCommits(head: head, undoneBy: target, alsoChanging: more, unknownItems: unknownItems, branch: branch)
            return []
        }
        return try ownCommits(head: head, undoneBy: target, alsoChanging: more, unknownItems: unknownItems).paths
    }

    /// The commits ``checkOwnCommits(head:undoneBy:branch:by:)`` refuses (`short-id subject`) and the
    /// paths they change that `target` sets back; both empty when there are none.
    func ownCommits(head: Commit, undoneBy target: ObjectID?, alsoChanging more: Set<String> = [],
                    unknownItems: [String: Set<ItemID>] = [:]) throws(MirrorError)
        -> (commits: [String], paths: [String]) {
        var own: [Commit] = []
        var snapshotTree: ObjectID?
        var snapshotsByTree: [ObjectID: [Commit]]?
        // When the commits sit on a rollback: the snapshot it rolled back from, upstream's then.
        var rolledBackFrom: ObjectID?
        var next: Commit? = head
        // Past the first thousand (named), commits are looked through for the snapshot below
        // them, not kept: that snapshot is what they are compared with (a cap there compared
        // them with nothing, and a sync refused every file).
        var looked = 0
        while let commit = next, looked < 100_000 {
            looked += 1
            // As tidemark wrote it, reworded, or snapshots squashed into it.
            if let message = try writtenSnapshotMessage(commit, snapshotsByTree: &snapshotsByTree) {
                snapshotTree = commit.tree
                if message.restores != nil, let parent = try firstParent(of: commit) {
                    var budget = 100
                    rolledBackFrom = try firstWrittenSnapshot(along: parent, budget: &budget, accept: { $0.restores == nil },
                                                              snapshotsByTree: &snapshotsByTree)?.commit.tree
                }
                break
            }
            if own.count < 1000 { own.append(commit) }
            // A snapshot whose tree is not the one tidemark wrote (amended, or a rollback to a
            // commit of the user's): what differs from that tree is the user's.
            if let written = upstreamTree(of: commit), repository.contains(written) {
                snapshotTree = written
                break
            }
            next = try firstParent(of: commit)
        }
        guard !own.isEmpty else { return ([], []) }
        var paths = try mirrorErrors { try repository.diffTrees(snapshotTree, head.tree).deltas.map(\.path) }
        // Paths reach tidemark as UTF-8 text (a snapshot holds no other): a name that is not
        // (shown with U+FFFD) could be neither reported as it is nor removed.
        if let odd = paths.first(where: { $0.unicodeScalars.contains("\u{FFFD}") }) {
            throw .unsafeName("a commit of yours on the branch holds a file whose name is not UTF-8 ('\(odd)', "
                              + "undecodable bytes shown as U+FFFD); rename or remove it with git (git mv, git rm), "
                              + "then run the command again")
        }
        if let target {
            let undone = Set(try mirrorErrors { try repository.diffTrees(head.tree, target).deltas.map(\.path) }).union(more)
            // A manifest is undone only where the target sets an item the commits changed to
            // another version (a revert of a rollback put upstream's versions back: a sync that
            // changes other items keeps them).
            var kept: [String] = []
            for path in paths where undone.contains(path) {
                if let collection = Mirror.collection(ofManifest: path) {
                    let manifest = { (tree: ObjectID?) throws(MirrorError) in try self.manifestData(try self.manifestBlob(collection, in: tree), of: collection) }
                    if Mirror.manifestChangesSurvive(base: try manifest(snapshotTree), ours: try manifest(head.tree),
                                                     theirs: try manifest(target), unknown: unknownItems[path] ?? [],
                                                     following: try rolledBackFrom.map { (tree) throws(MirrorError) in try manifest(tree) }) { continue }
                }
                kept.append(path)
            }
            paths = kept
        }
        // A merge (`git pull` of another clone of the mirror) brought its other side's snapshot,
        // and a revert of a rollback below the commits put back the snapshot it rolled back from:
        // a file as either holds it is upstream's, not the user's.
        var merged: [ObjectID] = rolledBackFrom.map { [$0] } ?? []
        for merge in own where merge.parents.count > 1 {
            for parent in merge.parents.dropFirst() {
                var budget = 100
                if let side = try? repository.commit(parent),
                   let (snapshot, _) = try firstWrittenSnapshot(along: side, budget: &budget, accept: isSnapshotOfThisUpstream,
                                                                snapshotsByTree: &snapshotsByTree) {
                    merged.append(snapshot.tree)
                }
            }
        }
        if !merged.isEmpty {
            var kept: [String] = []
            for path in paths {
                let blob = try mirrorErrors { try repository.treeEntry(at: path, in: head.tree)?.id }
                var fromMerge = false
                for tree in merged where try mirrorErrors({ try repository.treeEntry(at: path, in: tree)?.id }) == blob { fromMerge = true }
                if !fromMerge { kept.append(path) }
            }
            paths = kept
        }
        guard !paths.isEmpty else { return ([], []) }
        return (own.map { "\($0.id.short()) \($0.summary)" }, paths)
    }

    /// The snapshot whose tree, as tidemark wrote it, `commit` (no snapshot by its message, or
    /// amended) holds: `commit` is that snapshot reworded (`git commit --amend -m`, `git rebase
    /// -i`: the same parents), or snapshots squashed into it (`fixup` in `git rebase -i`: the
    /// newest one's tree on the oldest one's parents, a later snapshot than those that `commit`
    /// does not descend from), holding nothing of the user's. A revert of a sync holds an older
    /// snapshot's tree: it is the user's. Nil when there is none among the snapshots the upstream-tracking
    /// ref or the branch pointed to. `snapshotsByTree` is filled once.
    func copiedSnapshot(_ commit: Commit, snapshotsByTree: inout [ObjectID: [Commit]]?) throws(MirrorError) -> Commit? {
        if snapshotsByTree == nil { snapshotsByTree = try recentSnapshotsByTree() }
        // A commit that changes nothing (its first parent's tree) squashes no snapshot: told
        // without the walks below, which made `status` over a thousand such commits take seconds.
        var empty: Bool?
        for snapshot in snapshotsByTree?[commit.tree] ?? [] where snapshot.id != commit.id {
            if snapshot.parents == commit.parents { return snapshot }
            if empty == nil { empty = try firstParent(of: commit)?.tree == commit.tree }
            guard empty == false else { return nil }
            // Squashed: a later snapshot on what `commit` was made on, which it does not descend
            // from (not when that cannot be told: a shallow clone lacks the history).
            guard let base = commit.parents.first, (try? repository.isDescendant(snapshot.id, of: base)) == true,
                  (try? repository.isDescendant(commit.id, of: snapshot.id)) == false else { continue }
            return snapshot
        }
        return nil
    }

    /// The snapshots the upstream-tracking ref and the branch pointed to (their last 100 reflog
    /// entries: a fetch builds on HEAD rather than on the ref's last snapshot, and a `git pull`
    /// moves only the branch) and the last 100 along the ref's first parents, by the tree
    /// tidemark wrote for each.
    func recentSnapshotsByTree() throws(MirrorError) -> [ObjectID: [Commit]] {
        var byTree: [ObjectID: [Commit]] = [:]
        func note(_ commit: Commit) {
            if let written = upstreamTree(of: commit), byTree[written]?.contains(where: { $0.id == commit.id }) != true {
                byTree[written, default: []].append(commit)
            }
        }
        let branch = (try? repository.headBranch()) ?? nil
        for name in [Mirror.upstreamRef] + (branch.map { [$0] } ?? []) {
            // Where each entry moved the ref from too: after `git reflog expire --expire=now`, the
            // entry of the fetch since still names the snapshot the ref left.
            for entry in ((try? repository.reflog(name)) ?? []).prefix(100) {
                for id in [entry.id] + (entry.previous.map { [$0] } ?? []) {
                    if let commit = try? repository.commit(id) { note(commit) }
                }
            }
        }
        var next = try trackedUpstreamCommit()
        for _ in 0..<100 {
            guard let commit = next else { break }
            note(commit)
            next = (try? firstParent(of: commit)) ?? nil
        }
        return byTree
    }

    /// The tree of upstream's content in `commit` when it is a snapshot: the one its
    /// `Tidemark-Tree` trailer names, else (a snapshot written before the trailer) its own; nil
    /// for a commit of the user's.
    func upstreamTree(of commit: Commit) -> ObjectID? {
        SnapshotMessage.parse(commit.message).map { Mirror.upstreamTree(of: commit, message: $0) }
    }

    /// ``upstreamTree(of:)`` of a snapshot whose message is parsed already.
    static func upstreamTree(of commit: Commit, message: SnapshotMessage) -> ObjectID {
        message.tree.flatMap { ObjectID(hex: $0) } ?? commit.tree
    }

    /// Throws ``MirrorError/symlinkInWorkingTree(path:target:)`` when one of `paths`, a folder on
    /// the way to one, a collection folder or `.tidemark` is a symbolic link in the working tree,
    /// ``MirrorError/specialFileInWorkingTree(path:kind:)`` when it is a FIFO, device or socket,
    /// ``MirrorError/nestedRepository(path:)`` when it or a folder on its way holds `.git`, and
    /// ``MirrorError/fileInPlaceOfFolder(path:)`` when a folder on the way is a file.
    /// Snapshots never hold any of these (every entry is a 100644 file), so one there was planted, and
    /// libgit2's checkout would write through it: outside the mirror, or into a FIFO forever.
    ///
    /// - Parameter target: the tree the paths are checked out from; a link at a path it does not
    ///   hold is only removed, which never follows the link, and is allowed.
    func checkWritable(_ paths: [String], target: ObjectID? = nil) throws(MirrorError) {
        // Every folder and file on the way, once, in the order checked.
        var prefixes: [String] = []
        var checked = Set<String>()
        var folders = Set(settings.collections + [Mirror.metadataFolder])
        for path in settings.collections + [Mirror.metadataFolder] + paths {
            var prefix = ""
            for component in path.split(separator: "/") {
                if !prefix.isEmpty { folders.insert(prefix) }
                prefix += prefix.isEmpty ? String(component) : "/" + component
                if checked.insert(prefix).inserted { prefixes.append(prefix) }
            }
        }
        let found = repository.workingTreeKinds(prefixes)
        let changed = Set(paths)
        for (prefix, kind) in zip(prefixes, found) {
            guard let (mode, holdsGit) = kind else { continue }
            switch mode & S_IFMT {
            case S_IFDIR:
                if holdsGit { throw .nestedRepository(path: prefix) }
            case S_IFLNK:
                if let target, changed.contains(prefix),
                   try mirrorErrors({ try repository.treeEntry(at: prefix, in: target) }) == nil {
                    continue
                }
                let linked = (try? FileManager.default.destinationOfSymbolicLink(atPath: workingTree + prefix)) ?? "?"
                throw .symlinkInWorkingTree(path: prefix, target: linked)
            // Opened for writing, a FIFO blocks until a reader comes and a device takes the bytes
            // (even with --force: libgit2 writes into the file it finds).
            case S_IFIFO: throw .specialFileInWorkingTree(path: prefix, kind: "FIFO")
            case S_IFCHR: throw .specialFileInWorkingTree(path: prefix, kind: "character device")
            case S_IFBLK: throw .specialFileInWorkingTree(path: prefix, kind: "block device")
            case S_IFSOCK: throw .specialFileInWorkingTree(path: prefix, kind: "socket")
            // libgit2 cannot make the folder there (and would fail after writing part of the sync).
            case S_IFREG where folders.contains(prefix): throw .fileInPlaceOfFolder(path: prefix)
            default: break
            }
        }
    }

    /// Writes `tree` into the working tree at `paths` (all paths that differ when empty).
    /// Callers check the paths with ``checkWritable(_:)`` first.
    func checkout(_ tree: ObjectID, baseline: ObjectID?, paths: [String], force: Bool) throws(MirrorError) {
        progress?(.checkingOut(files: paths.count))
        try withLockNote { () throws(MirrorError) in try checkoutNoted(tree, baseline: baseline, paths: paths, force: force) }
    }

    private func checkoutNoted(_ tree: ObjectID, baseline: ObjectID?, paths: [String], force: Bool) throws(MirrorError) {
        do {
            try repository.checkout(tree: tree, baseline: baseline, paths: paths,
                                    strategy: force ? .force : .safe)
        } catch let error where error.code == .conflict {
            // Edits the local-edit check could not see (an item marked assume-unchanged, a conflict
            // left in the index for a run that finishes a sync).
            guard !error.paths.isEmpty else { throw .localEdits(["(\(error.message))"]) }
            throw .localEdits(describe(paths: error.paths, in: tree, orElseIn: baseline))
        } catch {
            throw .git(error)
        }
    }

    /// Each of `paths` named as `tree`'s item, or else as `other`'s (an item `tree` deleted), or
    /// else by its path.
    func describe(paths: [String], in tree: ObjectID, orElseIn other: ObjectID?) -> [String] {
        let asTree = (try? describe(paths: paths, in: tree)) ?? paths
        let asOther = other.flatMap { try? describe(paths: paths, in: $0) } ?? paths
        return paths.indices.map { asTree[$0] != paths[$0] ? asTree[$0] : asOther[$0] }
    }

    /// Maps paths of `tree` to `collection/id` names through the manifests; ids C-quoted for a
    /// terminal unless `quoted` is false (JSON carries them as they are).
    ///
    /// A file's name gives its id (``ItemPath/decode(_:)``), which the manifest's table confirms
    /// at that path: a 1,000-file diff of a 100k mirror looks up 1,000 lines instead of parsing
    /// 100k (500 ms). Only names cut short with a hash are looked for among all entries.
    func describe(paths: [String], in tree: ObjectID, quoted: Bool = true) throws(MirrorError) -> [String] {
        var names: [String] = []
        var tables: [String: ManifestTable] = [:]
        var byPath: [String: [String: ItemID]] = [:]
        for path in paths {
            let parts = path.split(separator: "/", maxSplits: 1).map(String.init)
            guard parts.count == 2, CollectionName.isValid(parts[0]) else { names.append(path); continue }
            let (collection, file) = (parts[0], parts[1])
            var found: ItemID?
            let stem = file.split(separator: "/").last.map { $0.hasSuffix(".json") ? String($0.dropLast(5)) : "" } ?? ""
            if let id = ItemPath.decode(stem) {
                if tables[collection] == nil { tables[collection] = try describingTable(collection, in: tree) }
                if let table = tables[collection], let position = table.position(of: id), table.entry(at: position).path == file {
                    found = id
                }
            } else {
                if byPath[collection] == nil {
                    byPath[collection] = Dictionary(try collectionManifest(collection, in: tree).entries.map { ($0.path, $0.id) },
                                                    uniquingKeysWith: { a, _ in a })
                }
                found = byPath[collection]?[file]
            }
            if let id = found {
                names.append("\(collection)/\(quoted ? Quoting.display(id) : id.description)")
            } else {
                names.append(path)
            }
        }
        return names
    }

    /// The table of `collection`'s manifest in `tree` for ``describe(paths:in:quoted:)``, read as
    /// ``collectionManifest(_:in:)`` reads the manifest.
    private func describingTable(_ collection: String, in tree: ObjectID) throws(MirrorError) -> ManifestTable {
        try readingCollection(collection, empty: ManifestTable()) { () throws(MirrorError) in
            try manifestTable(collection, blob: try manifestBlob(collection, in: tree))
        }
    }

    /// True when the working tree file at `path` is a regular file with exactly the contents
    /// `tree` gives it (or nothing is there where `tree`, or no tree, has no file).
    func workingTreeMatches(_ path: String, in tree: ObjectID?) throws(MirrorError) -> Bool {
        guard let entry = try tree.flatMap({ (tree) throws(MirrorError) in try mirrorErrors { try repository.treeEntry(at: path, in: tree) } }) else {
            var info = stat()
            return lstat(workingTree + path, &info) != 0
        }
        return holds(entry.id, at: path)
    }

    /// True when the working-tree file at `path` holds what a write of its contents in `tree`,
    /// cut short by a crash, leaves: the first bytes of the new contents, then nothing (a file
    /// written anew) or the rest of its contents in `old` (a file written over in place, which is
    /// how a checkout of many paths writes; a file that gets shorter is cut last).
    func isTornWrite(_ path: String, of tree: ObjectID, over old: ObjectID?) throws(MirrorError) -> Bool {
        guard let entry = try mirrorErrors({ try repository.treeEntry(at: path, in: tree) }),
              let data = FileManager.default.contents(atPath: workingTree + path) else { return false }
        let new = try mirrorErrors { try repository.readBlob(entry.id) }
        guard data != new else { return false }
        let written = zip(data, new).prefix(while: { $0 == $1 }).count
        if written == data.count { return true }
        guard let old, let oldEntry = try mirrorErrors({ try repository.treeEntry(at: path, in: old) }) else { return false }
        let previous = try mirrorErrors { try repository.readBlob(oldEntry.id) }
        // The old contents whole are not a torn write, whatever prefix they share with the new:
        // the file was not reached, and is checked out safely.
        guard data.count == previous.count, data != previous else { return false }
        // The old bytes from where the new ones stop: they must start at or before `written`.
        var kept = data.count
        while kept > 0, data[data.startIndex + kept - 1] == previous[previous.startIndex + kept - 1] { kept -= 1 }
        return kept <= min(written, new.count)
    }

    /// A sync journal's old and new snapshot and branch; nil when it cannot be read.
    private static func parseJournal(_ journal: String) -> (old: ObjectID?, target: ObjectID, branch: String)? {
        let fields = journal.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard fields.count == 3, let target = ObjectID(hex: fields[1]) else { return nil }
        return (ObjectID(hex: fields[0]), target, fields[2])
    }

    /// The sync `journal` describes, while it is unfinished: the branch is still at the old
    /// snapshot and the target commit exists. nil when the journal cannot be read, the branch is
    /// already at the target, or someone moved the branch since (the journal is stale).
    private func unfinishedSync(_ journal: String) throws(MirrorError) -> (old: ObjectID?, target: Commit, branch: String)? {
        guard let (old, target, branch) = Mirror.parseJournal(journal) else { return nil }
        let current = try mirrorErrors { try repository.resolveReference(branch) }
        guard current == old, current != target, let targetCommit = try? repository.commit(target) else { return nil }
        return (old, targetCommit, branch)
    }

    /// The sync a killed run left unfinished, which the next `fetch`, `sync` or `rollback` will
    /// finish; nil when there is none (or its journal is stale). Changes nothing.
    func pendingInterruptedSync() throws(MirrorError) -> InterruptedSync? {
        guard let journal = readState("sync-journal"), let (old, target, branch) = try unfinishedSync(journal) else { return nil }
        return InterruptedSync(branch: Mirror.shortBranchName(branch), from: old, to: target.id,
                               runningPid: RunLock.livingHolder(gitDirectory: gitDirectory), command: journalCommand(from: old, to: target))
    }

    /// Which command a journal's move from `old` to `target` is: a rollback restores a snapshot
    /// (a new commit saying so) or moves the branch back (`--hard`); a sync does neither.
    func journalCommand(from old: ObjectID?, to target: Commit) -> String {
        if SnapshotMessage.parse(target.message)?.restores != nil { return "rollback" }
        if let old, (try? repository.isDescendant(old, of: target.id)) == true { return "rollback" }
        return "sync"
    }

    /// What finishing an interrupted sync from `old` to `target` writes, among the paths that
    /// differ (`changed`): files its checkout was writing when it died (`torn`, the new contents
    /// cut short, over the old ones or alone), rewritten; and those it had not reached
    /// (`remaining`), updated safely. Files it wrote are left alone. Those it had not reached hold
    /// the old snapshot's contents: any other (an edit, an untracked file in the way) is refused
    /// by name before anything is written, unless `force`, as is a link on the way.
    func unfinishedCheckout(from old: ObjectID?, to target: Commit, force: Bool) throws(MirrorError)
        -> (oldTree: ObjectID?, changed: [String], remaining: [String], torn: [String], overwritten: [String]) {
        let oldTree = try old.map { id throws(MirrorError) in try mirrorErrors { try repository.commit(id).tree } }
        let changed = try mirrorErrors { try repository.diffTrees(oldTree, target.tree).deltas.map(\.path) }
        var remaining: [String] = []
        var torn: [String] = []
        var edited: [String] = []
        for path in changed where try !workingTreeMatches(path, in: target.tree) {
            if try isTornWrite(path, of: target.tree, over: oldTree) {
                torn.append(path)
            } else {
                remaining.append(path)
                if try !workingTreeMatches(path, in: oldTree) { edited.append(path) }
            }
        }
        try checkWritable(remaining + torn)
        let named = edited.isEmpty ? [] : describe(paths: edited, in: target.tree, orElseIn: oldTree)
        if !force, !named.isEmpty { throw .localEdits(named) }
        return (oldTree, changed, remaining, torn, named)
    }

    /// Finishes a sync a crash interrupted: its journal names the old and new snapshot.
    /// Sets ``finishedInterruptedSync``.
    ///
    /// - Parameter force: overwrite files edited since (else they are named in
    ///   ``MirrorError/localEdits(_:)`` before anything is written).
    func recoverInterruptedSync(force: Bool = false) throws(MirrorError) {
        finishedInterruptedSync = nil
        finishingOverwrote = []
        guard let journal = readState("sync-journal") else { return }
        guard let (old, targetCommit, branch) = try unfinishedSync(journal) else {
            removeState("sync-journal")
            return
        }
        let target = targetCommit.id
        let (oldTree, changed, remaining, torn, overwritten) = try unfinishedCheckout(from: old, to: targetCommit, force: force)
        crashPoint("finishing-checked")
        // A copy made to separate a hard-linked file, not yet renamed over it when the run died
        // (its file was not written yet, so it is among these; their folders are no links).
        repository.removeHardLinkCopies(near: remaining + torn)
        try withIndexLockHeld { () throws(MirrorError) in
            if !torn.isEmpty {
                // Rewritten with force: each must still be the torn write found above (one edited
                // since is refused by name, as an edit found above is, and nothing is written).
                if !force {
                    var changed: [String] = []
                    for path in torn where try !isTornWrite(path, of: targetCommit.tree, over: oldTree) { changed.append(path) }
                    if !changed.isEmpty {
                        throw .localEdits(describe(paths: changed, in: targetCommit.tree, orElseIn: oldTree))
                    }
                }
                try checkout(targetCommit.tree, baseline: oldTree, paths: torn, force: true)
            }
            if !remaining.isEmpty {
                try checkout(targetCommit.tree, baseline: oldTree, paths: remaining, force: force)
            }
            // The files the killed run wrote get their entries; the rest of the index (other
            // files' stat data, staged work) stays as it is.
            let written = Set(remaining + torn)
            try withLockNote { () throws(MirrorError) in
                try mirrorErrors { try repository.recordCheckedOut(changed.filter { !written.contains($0) }, of: targetCommit.tree) }
            }
            try updateRef(branch, to: target, expected: old, message: "tidemark: finish interrupted sync")
        }
        removeState("sync-journal")
        finishedInterruptedSync = InterruptedSync(branch: Mirror.shortBranchName(branch), from: old, to: target,
                                                  command: journalCommand(from: old, to: targetCommit))
        finishingOverwrote = overwritten
    }
}
