import Foundation
import GitStore
import Upstreams

/// Options of `fetch` (and of the fetch inside `sync` and `clone`).
public struct FetchOptions: Sendable {
    /// Accept a listing that deletes every item or more than half of a collection.
    public var allowMassDelete: Bool
    /// Requests at once for this run (1-256): item downloads, and DocuSign listing pages (at most
    /// 8); nil uses `tidemark.jobs`.
    public var jobs: Int?
    /// List every item, whatever the watermark (`sync --full`, `fetch --full`): an incremental
    /// listing (`rest` with `sinceParam`) shows no deletions, a full one does; a `dir` upstream
    /// is scanned, not listed from `tidemark watch`'s answer. Without it a listing is full when
    /// the last full one is older than `tidemark.fullListingInterval`. It also downloads again
    /// the items listed at their cached version whose blob the object store lost (a pack
    /// deleted, a backup restored without it), which a fetch otherwise never asks for.
    public var fullListing: Bool
    /// Start reading the index once the listing is done (a sync, whose local-edit check needs it).
    var preloadIndex = false
    public init(allowMassDelete: Bool = false, jobs: Int? = nil, fullListing: Bool = false) {
        self.allowMassDelete = allowMassDelete
        self.jobs = jobs
        self.fullListing = fullListing
    }
}

/// What one fetch did, per collection and in total.
public struct FetchReport: Sendable {
    public struct Collection: Sendable {
        public var name: String
        /// Items upstream listed.
        public var listed: Int
        /// Bodies downloaded (or read) because their version differed from the cache.
        public var downloaded: Int
        /// Conditional requests answered 304.
        public var notModified: Int
        /// Changes against the current snapshot (HEAD): what a sync would apply.
        public var behind: ChangeCounts
        /// Requests the listing made.
        public var listingRequests: Int
        /// True for a collection no longer in `tidemark.collection`, whose files leave the snapshot
        /// (`behind` counts its items in HEAD as deleted).
        public var dropped = false
        /// True when the listing asked only for items changed since the watermark (`sinceParam`),
        /// so it could show no deletions.
        public var incremental = false
        /// Items listed as changed that an interrupted run did not download (not started, or cut
        /// short): the next fetch downloads them.
        public var notDownloaded = 0
        /// Items that could not be downloaded (among ``FetchReport/failures``): the collection
        /// deleted nothing and kept its watermark.
        public var failed = 0
    }

    public var collections: [Collection]
    /// The upstream-tracking commit before and after this fetch.
    public var previous: ObjectID?
    public var current: ObjectID?
    /// Items that could not be downloaded, as `collection/id: reason`.
    public var failures: [String]
    /// Items gone upstream (or replaced) between the listing and their download, as
    /// `collection/id: reason`: no failure, as nothing of theirs was there to store. Each stays
    /// as the mirror had it (absent when new), and its collection's watermark stays where it was,
    /// so the next fetch lists it again (and, if it is gone for good, deletes it).
    public var vanished: [String] = []
    /// Collections an interrupted run did not list, or not to the end: as the last fetch left them.
    public var unlisted: [String] = []
    /// Items the listing left out whose deletion could not be confirmed (asked for, they failed
    /// with an error other than 404 or 410), as `collection/id: error`: kept, and no deletion of
    /// their collection is inferred this run.
    public var unconfirmed: [String] = []
    /// What the listings saw amiss without failing (``Listing/warnings``), as `collection: text`:
    /// a page linking a next one the configured paging did not follow, say.
    public var warnings: [String] = []
    /// Requests made to upstream (listing pages, item bodies, retries) and body bytes received;
    /// zero for the `dir` upstream.
    public var requests = 0
    public var bytesReceived = 0
    /// How a `dir` upstream was listed: from `tidemark watch`'s answer, or by a scan; nil for
    /// other upstreams.
    public var folderListing: FolderListing?

    /// Changes against HEAD in all collections.
    public var behind: ChangeCounts { collections.map(\.behind).reduce(ChangeCounts(), +) }
    public var downloaded: Int { collections.map(\.downloaded).reduce(0, +) }
    public var listed: Int { collections.map(\.listed).reduce(0, +) }
    /// Items not downloaded because the run was interrupted (see ``Collection/notDownloaded``).
    public var notDownloaded: Int { collections.map(\.notDownloaded).reduce(0, +) }
    /// True when the run was interrupted (its task cancelled) before it downloaded or listed
    /// everything: what it did download is stored (``MirrorError/interrupted(_:)``).
    public var interrupted: Bool { notDownloaded > 0 || !unlisted.isEmpty }
    /// What an interrupted run left: `12 items not downloaded, collection 'pages' not listed`.
    package var leftByInterruption: String {
        var left: [String] = []
        if notDownloaded > 0 { left.append("\(notDownloaded) item\(notDownloaded == 1 ? "" : "s") not downloaded") }
        if !unlisted.isEmpty {
            left.append("collection\(unlisted.count == 1 ? "" : "s") \(unlisted.map { "'\($0)'" }.joined(separator: ", ")) not listed")
        }
        return left.joined(separator: ", ")
    }
    /// True when this fetch moved the upstream-tracking ref.
    public var updated: Bool { previous != current }
    /// What to warn of for ``vanished`` items, naming them (at most 20); nil when there are none.
    package var vanishedWarning: String? {
        guard !vanished.isEmpty else { return nil }
        let one = vanished.count == 1
        let them = one ? "it" : "them"
        return (one ? "1 item was" : "\(vanished.count) items were") + " gone or changed upstream by the time \(one ? "it was" : "they were") "
            + "downloaded (deleted, replaced or written to after the listing named \(them)); left as the mirror had \(them), and the "
            + "next sync lists \(them) again:\n" + MirrorError.list(vanished, limit: 20)
    }
    /// What to warn of for ``unconfirmed`` items, naming them (at most 20); nil when there are none.
    package var unconfirmedWarning: String? {
        guard !unconfirmed.isEmpty else { return nil }
        let one = unconfirmed.count == 1
        return (one ? "1 item" : "\(unconfirmed.count) items") + " the listing left out could not be confirmed deleted (asked for, "
            + (one ? "it" : "they") + " answered neither 404 nor 410); kept, and no deletion is applied until a listing "
            + "confirms them:\n" + MirrorError.list(unconfirmed, limit: 20)
    }

    /// What a sync in the same run may reuse instead of comparing trees again: HEAD when the
    /// fetch began, and the tree the fetch built its tree (that of `current`) from, by changing
    /// which paths.
    struct Built: Sendable {
        var head: ObjectID?
        var baseTree: ObjectID?
        var paths: [String]
    }
    var built: Built?
}

extension Mirror {
    /// What a listing's error is reported as: an ``UpstreamError`` as it is; another error (one an
    /// upstream of an app's own throws) as its text, naming the collection listed.
    static func upstreamError(_ error: any Error, listing collection: String) -> UpstreamError {
        error as? UpstreamError ?? .unreachable("listing of \(collection): \(String(describing: error))")
    }

    /// Lists upstream, downloads the items whose version differs from the last fetch, writes
    /// them as objects and moves `refs/tidemark/upstream` to a snapshot of upstream. Touches
    /// neither the branch nor the working tree.
    ///
    /// - Throws: ``MirrorError/incompleteFetch(_:)`` after storing what did download when some
    ///   items failed (the watermark then stays where it was); ``MirrorError/interrupted(_:)``
    ///   after storing what did download when the task was cancelled during the downloads;
    ///   ``MirrorError/cancelled`` when it was cancelled before anything was downloaded.
    public func fetch(_ options: FetchOptions = FetchOptions()) async throws(MirrorError) -> FetchReport {
        await takeTurn()
        defer { endTurn() }
        let lock = try lock()
        defer { withExtendedLifetime(lock) {} }
        try recoverInterruptedSync()
        try catchUpUpstreamRef()
        try Mirror.checkJobs(options.jobs)
        let report = try await fetchLocked(options)
        if report.interrupted { throw .interrupted(report) }
        if !report.failures.isEmpty { throw .incompleteFetch(report) }
        return report
    }

    /// Rejects `jobs` outside ``MirrorSettings/jobsRange``.
    static func checkJobs(_ jobs: Int?) throws(MirrorError) {
        if let message = MirrorSettings.jobsProblem(jobs) { throw .invalidArgument(message) }
    }

    func fetchLocked(_ options: FetchOptions) async throws(MirrorError) -> FetchReport {
        do {
            return try await withUpstream(jobs: options.jobs) { (upstream) async throws(MirrorError) in
                try await fetchLocked(options, from: upstream)
            }
        } catch {
            // Refused, or failed at upstream or writing what it got (a full disk), it stored
            // nothing: `status` says so until a fetch stores (it said "up to date", judging by the
            // snapshot before). Written if it can be: a disk that is full may take no state either.
            // Each record replaces the other: `status` tells the last fetch's outcome (it told a
            // failure the refusal after it had made stale, "does not exist" of a folder there).
            switch error {
            case .massDeletion, .droppedCollection:
                try? writeTimedState(Mirror.fetchRefusedState, error.description)
                removeState(Mirror.fetchFailedState)
                // The deletions it refused are seen only by a whole listing: the next one is whole
                // too, and refused again until they are allowed (an incremental one passed them
                // over, and status forgot the refusal).
                removeState(Mirror.fullListingState)
            case .upstream, .git, .objectsNotWritten:
                try? writeTimedState(Mirror.fetchFailedState, error.description)
                removeState(Mirror.fetchRefusedState)
            default: break
            }
            throw error
        }
    }

    func fetchLocked(_ options: FetchOptions, from upstream: any Upstream) async throws(MirrorError) -> FetchReport {
        crashPoint("fetch-start")
        let head = try headCommit()
        // Moved up to any newer snapshot on the branch by its callers (``catchUpUpstreamRef()``).
        let previous = try trackedUpstreamCommit()
        var base = previous
        // A tracked snapshot whose tree is not the one tidemark wrote (the ref rewritten by `git
        // filter-branch --all` or `git filter-repo`) may lack files its manifest lists: the fetch
        // builds on the last snapshot below it that tidemark wrote, or on none (every item new).
        if let tracked = previous, try writtenSnapshotMessage(tracked) == nil { base = try lastSnapshot(from: tracked) }
        // Never fetched (a `git clone` of a mirror): the last snapshot on the branch, below any
        // commits of the user's own, which would otherwise pass for upstream's content; none
        // when the branch holds no snapshot (every item is then listed as new).
        if base == nil { base = try lastSnapshot(from: head) }
        let baseMessage = base.flatMap { SnapshotMessage.parse($0.message) }
        // When this fetch started: its snapshot's Tidemark-Listed-At, and the latest watermark
        // any of its collections may get.
        let fetchStarted = Timestamp(date: Date())
        let listedAt = fetchStarted.raw
        let trafficBefore = upstream.statistics

        var updates: [TreeUpdate] = []
        var fetched: [FetchedCollection] = []
        // A run failing after a collection's manifest write started waits for it to end.
        defer { for fetch in fetched { fetch.pending?.finish() } }
        var watermarks: [(name: String, watermark: String)] = []
        var failures: [String] = []
        var vanished: [String] = []
        var unconfirmed: [String] = []
        var warnings: [String] = []
        // An interrupted run (its task cancelled): items it did not download, and collections it
        // did not list (or not to the end). What did download is stored all the same.
        var notDownloaded = 0
        var unlisted: [String] = []
        var itemCount = 0
        let batch = ObjectBatch(repository: repository)
        // Each collection's manifest is read on another thread while its listing starts; the
        // first one's while the watcher (if any) is asked, too.
        func startLoad(_ collection: String) throws(MirrorError) -> (blob: ObjectID?, load: ManifestLoad) {
            let blob = try manifestBlob(collection, in: base?.tree)
            return (blob, ManifestLoad(collection: collection, blob: blob, gitDirectory: gitDirectory, copy: manifestCopy(collection)))
        }
        var firstLoad = try settings.collections.first.map { (collection) throws(MirrorError) in try startLoad(collection) }
        // A `dir` upstream with `tidemark watch` running: its answer names what changed, and
        // each collection checks those files alone instead of an `lstat` of every file.
        var watch = (upstream as? DirectoryUpstream).map {
            watchedChanges(previous: previous, folder: $0, fullListing: options.fullListing)
        }
        // Every collection listed whole this time, else from its watermark (what upstream
        // changed since); the time of the last full listing is recorded below.
        // Settings that shape the stored bodies changed since the last fetch that recorded them:
        // every item (or those such a fetch did not store) is listed and downloaded again,
        // without its stored validator.
        let reshape = bodyReshape(base: base)
        var reshapeLeft: [(collection: String, id: ItemID)] = []
        let fullListing = options.fullListing || !reshape.isEmpty || fullListingDue()
        var listedWhole = true
        let racy = try racyCheck(after: base)
        // Racily clean items this run planned to check and did not store, by collection.
        var racyPending: [(collection: String, id: ItemID)] = []

        collections: for (index, collection) in settings.collections.enumerated() {
            let started: (blob: ObjectID?, load: ManifestLoad)
            if let firstLoad { started = firstLoad } else { started = try startLoad(collection) }
            firstLoad = nil
            let (baseBlob, load) = started
            let previousWatermark = baseMessage?.watermark(of: collection).flatMap(Timestamp.init)
            progress?(.listing(collection: collection, items: 0))
            let listing: Listing
            let since = listingStart(collection, after: baseMessage, full: fullListing)
            do {
                if reshape.covers(collection) {
                    listing = try await upstream.list(collection: collection, since: since, cached: .none)
                } else if let answered = try watch?.list(collection, cached: load, hasManifest: baseBlob != nil) {
                    listing = answered
                } else {
                    listing = try await upstream.list(collection: collection, since: since, cached: load)
                }
            } catch {
                // A cancelled task's listing ends in whatever error the request met. The
                // collections fetched before it are stored; when they changed nothing, nothing is.
                if Task.isCancelled || error is CancellationError {
                    guard fetched.contains(where: \.changesSnapshot) else { throw .cancelled }
                    unlisted = Array(settings.collections[index...])
                    break collections
                }
                _ = try load.table()  // an unreadable manifest is the error to report
                throw .upstream(Mirror.upstreamError(error, listing: collection))
            }
            let cached = try load.table()
            unconfirmed += listing.unconfirmed
            warnings += listing.warnings
            // Whole, and showing every deletion: not one that changed while it was paged (its
            // deletions are held back), nor one whose items went missing before their download.
            if listing.incremental || !listing.isComplete { listedWhole = false }
            crashPoint("after-listing")
            // The rest of the fetch leaves a core free most of the time (downloads, pack writes, file reads).
            if options.preloadIndex, indexPreload == nil { indexPreload = repository.preloadIndex() }
            let listed = listing.items.count + listing.unchanged.count
            progress?(.listing(collection: collection, items: listed))

            // Downloaded again, whole, though listed at their cached version: items to store under
            // changed body settings, and, asked for a full listing, items whose blob is gone from
            // the store (a `dir` listing names unchanged files by position, with no body to store:
            // a file is read again once it changes).
            let reshaping = reshape.items(of: collection, in: listing)
            let again = reshaping.union(options.fullListing && !(upstream is DirectoryUpstream)
                                        ? try lostItems(collection, cached: cached, in: base?.tree) : [])
            let plan = try plan(collection: collection, listing: listing, base: cached, racy: racy, repair: again, options: options)
            // A sync's checkout writes over the changed items' files: their blocks are read in
            // meanwhile.
            if options.preloadIndex {
                repository.prefetchWorkingTree(plan.downloads.compactMap { $0.old.map { "\(collection)/\($0.path)" } })
            }
            var outcome = await download(plan.downloads, collection: collection, from: upstream,
                                         jobs: options.jobs ?? settings.jobs, base: base?.tree, unconditional: again, into: batch)
            // Cancelled before anything was downloaded: the mirror stays as it was.
            if Task.isCancelled, outcome.stored.isEmpty, !fetched.contains(where: \.changesSnapshot) { throw .cancelled }
            crashPoint("after-downloads")
            for stored in outcome.stored {
                guard let blob = stored.blob else { continue }
                updates.append(.upsert(path: "\(collection)/\(stored.entry.path)", blob: blob))
            }
            outcome.failIfEveryItemWasGone(asked: plan.downloads.count, firstFetch: baseBlob == nil,
                                           itemURLs: !(upstream is DirectoryUpstream))
            failures += outcome.failures
            vanished += outcome.vanished
            notDownloaded += outcome.notDownloaded
            let storedIDs = Set(outcome.stored.map(\.entry.id))
            racyPending += plan.racy.subtracting(storedIDs).map { (collection, $0) }
            reshapeLeft += reshaping.subtracting(storedIDs).map { (collection, $0) }
            let downloadedAll = outcome.failures.isEmpty && outcome.notDownloaded == 0
            if !downloadedAll { listedWhole = false }
            // Like rclone: after a failed download, infer no deletions this run. (An item gone
            // since the listing is no failure: the listing that implies them was whole.)
            let deletions = downloadedAll ? plan.deletions : []
            for position in deletions { updates.append(.remove(path: "\(collection)/\(cached.entry(at: position).path)")) }
            // The watermark advances only when every listed item is stored and the listing saw
            // every item (none changed while it was paged), and never goes back. Nor past the
            // time the fetch started (its Tidemark-Listed-At): an item dated in the future
            // (9999-12-31) would pin it there, and an incremental listing from it would never see
            // another change. Nor past upstream's time when the listing started (its `Date`), which
            // upstream's dates are in: an item edited on a page already read while later pages are
            // read is dated after it, also when upstream's clock is behind this machine's.
            var watermark = previousWatermark
            if downloadedAll, outcome.vanished.isEmpty, !listing.changedWhilePaging,
               let found = newestVersion(listing, cached: cached, since: previousWatermark, after: baseMessage),
               case let capped = min(found, fetchStarted, listing.upstreamTime ?? fetchStarted),
               // Written as upstream dates its items (a Unix time stays one when capped), and
               // rewritten when upstream moved to another form for the same instant.
               case let newest = capped.raw == found.raw ? found : capped.written(like: found),
               watermark.map({ newest > $0 || (newest == $0 && newest.isUnixTime != $0.isUnixTime) }) ?? true {
                watermark = newest
            }
            watermarks.append((collection, watermark?.raw ?? "none"))

            // A changed manifest (7 MB at 100k items) is hashed, compressed (as a delta against
            // the last one, mostly) and written on another thread while the item blobs and the
            // folder trees are written.
            var collectionFetch = FetchedCollection(
                report: FetchReport.Collection(name: collection, listed: listed, downloaded: outcome.downloaded,
                                               notModified: outcome.notModified, behind: ChangeCounts(),
                                               listingRequests: listing.requests, incremental: listing.incremental,
                                               notDownloaded: outcome.notDownloaded, failed: outcome.failures.count),
                baseBlob: baseBlob, cached: cached, stored: outcome.stored.map(\.entry), deletions: deletions,
                notModified: outcome.stored.filter { $0.blob == nil }.map(\.entry.path))
            if !outcome.stored.isEmpty || !deletions.isEmpty || baseBlob == nil {
                let (data, copies) = cached.splicing(collectionFetch.stored, removing: deletions)
                collectionFetch.newManifest = data
                // Stored as a delta against the last one where it can be.
                let edit = baseBlob.map { ObjectEdit(base: $0, baseSize: cached.bytes.count, copies: copies) }
                collectionFetch.pending = PendingBlob(data, into: repository, editing: edit)
            }
            fetched.append(collectionFetch)
            itemCount += cached.count - deletions.count + outcome.stored.filter { cached.position(of: $0.entry.id) == nil }.count
            crashPoint("after-manifest")
            // Interrupted: the collections after this one are not listed.
            if Task.isCancelled, index + 1 < settings.collections.count {
                unlisted = Array(settings.collections[(index + 1)...])
                break
            }
        }
        // Collections the interrupted run did not list stay as the base has them, watermark too.
        for collection in unlisted {
            watermarks.append((collection, baseMessage?.watermark(of: collection) ?? "none"))
            itemCount += try self.itemCount(collection, in: base?.tree)
        }
        let interrupted = notDownloaded > 0 || !unlisted.isEmpty
        if interrupted { listedWhole = false }
        // From here on the run goes to its end: a task cancelled now stores what it fetched all the same.
        progress?(.storing)
        // Collections the snapshot holds that the settings no longer name leave it (the history
        // keeps them), once allowed like any mass deletion.
        let dropped = try droppedCollections(base: base?.tree, head: head?.tree, allowed: options.allowMassDelete)
        for name in dropped.fromBase {
            updates += try filePaths(under: name, in: base!.tree).map { .remove(path: $0) }
            updates.append(.remove(path: Mirror.manifestPath(name)))
        }
        // Reported while HEAD still holds them: a sync deletes their items.
        let droppedReports = try dropped.all.map { (name) throws(MirrorError) in
            FetchReport.Collection(name: name, listed: 0, downloaded: 0, notModified: 0,
                                   behind: ChangeCounts(deleted: try self.itemCount(name, in: head?.tree)), listingRequests: 0, dropped: true)
        }
        // Blobs first (one pack, or loose for small batches), then trees, commit and ref.
        try mirrorErrors { try batch.flush() }
        crashPoint("after-objects")

        updates.sort { $0.path < $1.path }
        // The manifests' upserts, once they are hashed (and readable from the memo: their packs
        // may still be being written, which the trees need not wait for).
        let manifestWrites = fetched.compactMap { fetch in fetch.pending.map { (Mirror.manifestPath(fetch.report.name), $0) } }
        let manifestUpdates = { () throws(GitError) -> [TreeUpdate] in
            var upserts: [TreeUpdate] = []
            for (path, pending) in manifestWrites { upserts.append(.upsert(path: path, blob: try pending.id())) }
            return upserts
        }
        // Many changed paths rewrite many trees (one per fan-out folder): those are built on all
        // cores and go in one pack too. A new version with the same body changes the manifest,
        // not the file: its path is not among the changed ones.
        // A failure met when loose objects this fetch wrote (`written`, not yet named by a ref)
        // are gone from disk is put down to a `git gc --prune=now` run meanwhile.
        func unlessPruned<R>(_ written: @autoclosure () -> [ObjectID],
                             _ body: () throws(MirrorError) -> R) throws(MirrorError) -> R {
            do {
                return try body()
            } catch {
                let missing = (try? repository.missingFromDisk(written())) ?? []
                if let first = missing.first { throw objectsMissing(count: missing.count, first: first) }
                throw error
            }
        }
        // Loose blobs removed meanwhile fail the trees naming them.
        let updated: UpdatedTree
        do throws(MirrorError) {
            updated = try unlessPruned(
                batch.packsWritten > 0 ? [] : updates.compactMap { if case .upsert(_, let blob) = $0 { blob } else { nil } }
            ) { () throws(MirrorError) in
                try mirrorErrors { try repository.updateTreeInOnePack(base?.tree, updates, late: manifestUpdates) }
            }
        } catch {
            // A manifest whose pack could not be written (a read-only or full disk) fails the
            // trees naming it, as "invalid object": its own error is the one to name.
            for (_, pending) in manifestWrites { _ = try mirrorErrors { try pending.wait() } }
            throw error
        }
        // The manifests' packs are on disk before anything names the trees.
        for (_, pending) in manifestWrites { _ = try mirrorErrors { try pending.wait() } }
        let tree = updated.tree
        crashPoint("after-trees")
        // In path order, like the updates (a clone's 100k paths are not sorted again).
        var changedPaths = updates.map(\.path)
        for (path, _) in manifestWrites {
            changedPaths.insert(path, at: changedPaths.firstIndex { $0 > path } ?? changedPaths.endIndex)
        }
        changedPaths.removeAll { updated.unchanged.contains($0) }
        // Upserts that left their file as it was (the same body), and 304 answers.
        var sameContent = updated.unchanged
        for fetch in fetched { sameContent.formUnion(fetch.notModified.map { "\(fetch.report.name)/\($0)" }) }
        var perCollection: [String: ChangeCounts] = [:]
        var collections: [FetchReport.Collection] = []
        for fetch in fetched {
            var report = fetch.report
            report.behind = try unlessPruned([tree]) { () throws(MirrorError) in
                try behind(fetch, head: head, manifestBlob: try manifestBlob(report.name, in: tree), tree: tree,
                           sameContent: sameContent)
            }
            perCollection[report.name] = report.behind
            collections.append(report)
        }
        for report in droppedReports {
            perCollection[report.name] = report.behind
            collections.append(report)
        }
        var current = previous?.id
        if tree != previous?.tree || previous == nil {
            let counts = perCollection.values.reduce(ChangeCounts(), +)
            let commitID: ObjectID
            if let head, head.tree == tree, head.parents.count <= 1, previous == nil {
                commitID = head.id
            } else {
                var message = SnapshotMessage(
                    verb: head == nil ? "Clone" : "Sync", upstream: settings.upstream, collections: watermarks, counts: counts,
                    perCollection: perCollection, items: itemCount, listedAt: listedAt,
                    failed: failures.count + vanished.count + notDownloaded + unlisted.count, tree: tree.hex,
                    bodySettings: reshapeLeft.isEmpty && unlisted.isEmpty ? bodySettingsTag : nil)
                message.dropped = droppedReports.filter { $0.behind.total > 0 }.map(\.name)
                commitID = try unlessPruned([tree]) { () throws(MirrorError) in
                    try mirrorErrors {
                        try repository.createCommit(tree: tree, parents: head.map { [$0.id] } ?? [],
                                                    message: message.render(), author: signature(), committer: signature(.committer))
                    }
                }
            }
            crashPoint("after-commit")
            try checkStored(commit: commitID, tree: tree, paths: changedPaths, blobs: batch.packsWritten == 0)
            try updateRef(Mirror.upstreamRef, to: commitID, expected: previous?.id,
                          message: "tidemark fetch: \(counts.summary)")
            current = commitID
            crashPoint("after-upstream-ref")
        }
        // A run that checked every racily clean item ends what an earlier one noted. One that did
        // not store every item listed at `listedAt` and checked those it stored (also when they
        // changed no file, and it wrote no snapshot): with the snapshot the next run builds on,
        // that time and the items it did not get are noted, to be checked by the next run. One
        // that left a collection unlisted checked nothing there: nothing is noted, and the next
        // run takes its checks from the last complete run's snapshot (``racyCheck(after:)``).
        if failures.isEmpty, !interrupted {
            removeState(Mirror.racyPendingState)
        } else if unlisted.isEmpty, let current {
            try writeStateLines(Mirror.racyPendingState, [current.hex, listedAt] + racyPending.map { pending in
                var id: [UInt8] = []
                Manifest.escape(pending.id.bytes, leadingHash: false, into: &id)
                return pending.collection + "\t" + String(decoding: id, as: UTF8.self)
            })
        } else {
            removeState(Mirror.racyPendingState)
        }
        // Which items the last fetch could not download, for status until a fetch gets them all;
        // and those it found gone since its listing, for status, and so a sync `--if-stale` runs.
        // In order of their names, not of the downloads that ended first.
        failures.sort()
        vanished.sort()
        try writeStateLines(Mirror.fetchVanishedState, vanished)
        try writeStateLines(Mirror.fetchUnconfirmedState, unconfirmed)
        if failures.isEmpty, !interrupted { try writeState("last-fetch", listedAt + "\n", durable: false) }
        // A whole listing that was due (or asked for) and showed every deletion: the next is
        // due a `tidemark.fullListingInterval` later.
        // One that fell short (an item changed while the pages were read, or failed, or went
        // missing) makes the next listing whole too, also when this one was asked for early.
        if fullListing {
            if failures.isEmpty, vanished.isEmpty, listedWhole {
                try writeState(Mirror.fullListingState, listedAt + "\n", durable: false)
            } else {
                removeState(Mirror.fullListingState)
            }
        }
        try writeStateLines(Mirror.fetchFailuresState, failures)
        // The settings the stored items follow are recorded, with the items to reshape that this
        // fetch did not store (failed, or not downloaded before an interruption), and the
        // collections it did not list, as they were (every item of theirs, when the settings
        // changed): reverting the settings then reshapes what this fetch did store.
        for collection in unlisted {
            reshapeLeft += (reshape.pending[collection] ?? []).map { (collection, $0) }
        }
        try recordBodySettings(snapshot: current, pending: reshapeLeft,
                               wholeCollections: unlisted.filter { reshape.all || reshape.wholeCollections.contains($0) })
        removeState(Mirror.fetchRefusedState)
        removeState(Mirror.fetchFailedState)
        // The token covers what this fetch stored only when it stored every listed item.
        if failures.isEmpty, vanished.isEmpty, !interrupted, let watch, let current { saveWatchToken(watch, commit: current) }
        var report = FetchReport(collections: collections, previous: previous?.id, current: current, failures: failures)
        report.vanished = vanished
        report.unconfirmed = unconfirmed
        report.warnings = warnings
        report.unlisted = unlisted
        if interrupted {
            try writeTimedState(Mirror.fetchInterruptedState, report.leftByInterruption)
        } else {
            removeState(Mirror.fetchInterruptedState)
        }
        report.folderListing = watch?.listing
        report.built = FetchReport.Built(head: head?.id, baseTree: base?.tree, paths: changedPaths)
        let traffic = upstream.statistics
        report.requests = traffic.requests - trafficBefore.requests
        report.bytesReceived = traffic.bytesReceived - trafficBefore.bytesReceived
        return report
    }

    /// Throws ``MirrorError/objectsRemoved(count:first:)`` when the repository's files lack the
    /// commit, its tree, or a tree on one of `paths` (changed paths of `tree`), or with `blobs`
    /// the blob at one of them: what this fetch wrote, which a `git gc --prune=now` run meanwhile
    /// may have removed while the sync's memo still served it. Checked before a ref names them.
    /// (Blobs written in a pack need no check: its `.keep` keeps it from any `git gc`.)
    func checkStored(commit: ObjectID, tree: ObjectID, paths: [String], blobs: Bool) throws(MirrorError) {
        var ids: Set<ObjectID> = [commit, tree]
        var folders = Set<String>()
        // A tree that cannot be read (removed meanwhile, and not in the memo) counts as missing.
        var unreadable = 0
        func lookUp(_ path: String) {
            do {
                if let entry = try repository.treeEntry(at: path, in: tree) { ids.insert(entry.id) }
            } catch {
                unreadable += 1
            }
        }
        for path in paths {
            var folder = Substring(path)
            while let slash = folder.lastIndex(of: "/"), folders.insert(String(folder[..<slash])).inserted {
                folder = folder[..<slash]
            }
            if blobs { lookUp(path) }
        }
        for folder in folders { lookUp(folder) }
        let missing = try mirrorErrors { try repository.missingFromDisk(Array(ids)) }
        if !missing.isEmpty || unreadable > 0 {
            throw objectsMissing(count: missing.count + unreadable, first: missing.first)
        }
    }

    /// The error for objects this run wrote that are missing from disk: a write lost to a full
    /// disk when the disk is full (``MirrorError/objectsNotWritten(reason:)``), else a prune run
    /// meanwhile (``MirrorError/objectsRemoved(count:first:)``).
    func objectsMissing(count: Int, first: ObjectID?) -> MirrorError {
        repository.spaceShortage().map { .objectsNotWritten(reason: $0) } ?? .objectsRemoved(count: count, first: first)
    }

    /// What a sync would change in one collection: HEAD's manifest against the new one. HEAD's is
    /// usually the one just read (the last sync left the two refs equal): the changes are then
    /// those just applied to it. Otherwise the two files are compared line by line.
    /// `manifestBlob` is the manifest the new tree holds.
    /// Items whose file the new tree left as it was (`sameContent`: `collection/path`) changed
    /// only their manifest entry, and do not count (``contentChanges(_:in:from:to:)``).
    private func behind(_ fetch: FetchedCollection, head: Commit?, manifestBlob: ObjectID?, tree: ObjectID,
                        sameContent: Set<String>) throws(MirrorError) -> ChangeCounts {
        let name = fetch.report.name
        let headBlob = try self.manifestBlob(name, in: head?.tree)
        if headBlob == manifestBlob {
            return ChangeCounts()
        } else if headBlob == fetch.baseBlob {
            let changed = fetch.stored.filter { !sameContent.contains("\(name)/\($0.path)") }
            return fetch.cached.changeCounts(changed, removing: fetch.deletions)
        } else {
            let changes = try manifestChanges(name, from: try manifestData(headBlob, of: name), to: fetch.newManifest ?? Data(fetch.cached.bytes))
            return ChangeCounts(try contentChanges(changes, in: name, from: head?.tree, to: tree))
        }
    }

    /// The newest `lastModified` of a listing. Items listed unchanged hold cached versions, which
    /// the stored watermark already covers when the snapshot it came from was complete; after a
    /// fetch that failed some items or found some gone (or before any watermark), their dates are
    /// read too.
    func newestVersion(_ listing: Listing, cached: ManifestTable, since watermark: Timestamp?,
                       after message: SnapshotMessage?) -> Timestamp? {
        var newest = listing.items.map(\.lastModified).max()
        if watermark == nil || (message?.failed ?? 0) > 0 {
            for position in listing.unchanged {
                if let time = Timestamp(cached.entry(at: position).lastModified), newest.map({ time > $0 }) ?? true {
                    newest = time
                }
            }
        }
        return newest
    }

    /// Moves a ref with compare-and-swap, keeping a reflog; a concurrent move becomes
    /// ``MirrorError/concurrentUpdate(ref:)``.
    func updateRef(_ name: String, to target: ObjectID, expected: ObjectID?, message: String) throws(MirrorError) {
        try withLockNote(ref: name, target: target) { () throws(MirrorError) in
            // A lock held a moment (`git gc` packing refs, another git command) is waited for,
            // as git waits `core.filesRefLockTimeout`; then the update is tried once more.
            for attempt in 1...2 {
                do throws(GitError) {
                    try repository.ensureReflog(for: name)
                    try repository.updateReference(name, to: target, expected: expected, message: message)
                    return
                } catch let error where error.code == .modified || error.code == .exists {
                    throw .concurrentUpdate(ref: name)
                } catch let error where error.code == .locked {
                    let lock = gitDirectory + name + ".lock"
                    guard attempt == 1, Mirror.waitBriefly(while: { FileManager.default.fileExists(atPath: lock) }) else {
                        throw .gitLocked(lock)
                    }
                } catch {
                    throw .git(error)
                }
            }
        }
    }

    /// Which items the snapshot `base` holds are downloaded again even when listed at the same
    /// version (``plan(collection:listing:base:cachedFrom:racy:options:)``): those dated from the
    /// time the last listing that checked every such item started, less `tidemark.overlap` for
    /// the two clocks (at least a second, the resolution of most dates). That listing is the last
    /// snapshot's below `base` (or `base`'s) whose downloads all succeeded (its
    /// `Tidemark-Listed-At`), or a later fetch's that succeeded without a snapshot (`last-fetch`):
    /// a failed download leaves its item to check again. When a run that failed or was
    /// interrupted noted `base`, the time it listed, and the racily clean items it did not get
    /// (``racyPendingState``), its listing counts, with those items pending: each interrupted run
    /// of a long catch-up moves on (they all downloaded the same items again). An item edited
    /// twice in one second, around a listing, keeps its date: WordPress's `modified_gmt` and many
    /// APIs' dates count whole seconds. No `since` without such a snapshot.
    func racyCheck(after base: Commit?) throws(MirrorError) -> RacyCheck {
        guard let base else { return RacyCheck() }
        let overlap = max(settings.overlapSeconds, 1)
        let noted = stateLines(Mirror.racyPendingState)
        if noted.count >= 2, noted[0] == base.id.hex, let listed = Timestamp(noted[1]) {
            var check = RacyCheck(since: max(listed, stateTime("last-fetch") ?? listed).adding(seconds: -overlap))
            for line in noted.dropFirst(2) {
                let fields = line.split(separator: "\t", maxSplits: 1).map(String.init)
                guard fields.count == 2, let bytes = Manifest.unescape(Array(fields[1].utf8)[...]) else { continue }
                check.pending[fields[0], default: []].insert(ItemID(bytes: bytes))
            }
            return check
        }
        var budget = 1000
        var snapshotsByTree: [ObjectID: [Commit]]?
        guard let checkedBy = try firstWrittenSnapshot(along: base, budget: &budget, accept: { $0.failed == 0 && $0.listedAt != nil },
                                                       snapshotsByTree: &snapshotsByTree),
              var checked = checkedBy.message.listedAt.flatMap(Timestamp.init) else { return RacyCheck() }
        if let fetched = stateTime("last-fetch"), fetched > checked { checked = fetched }
        return RacyCheck(since: checked.adding(seconds: -overlap))
    }

    /// The items of `collection` in `tree` whose blob the repository's files do not hold (read
    /// afresh, as ``Repository/missingFromDisk(_:)`` does): a pack deleted or a backup restored
    /// without it. A fetch asks for none of them while its version stays the same.
    func lostItems(_ collection: String, cached: ManifestTable, in tree: ObjectID?) throws(MirrorError) -> Set<ItemID> {
        guard let tree, cached.count > 0,
              let root = try mirrorErrors({ try repository.treeEntry(at: collection, in: tree) }), root.isTree else { return [] }
        // The blobs first, without their paths (none is missing, most times), then the paths
        // of those that are.
        func walk(_ folder: String, _ id: ObjectID, missing: Set<ObjectID>?, _ found: inout [ObjectID], _ paths: inout Set<String>) throws(MirrorError) {
            for child in try mirrorErrors({ try repository.treeEntries(id) }) {
                if child.isTree {
                    let path = missing == nil ? "" : folder + String(decoding: child.name, as: UTF8.self) + "/"
                    try walk(path, child.id, missing: missing, &found, &paths)
                } else if let missing {
                    if missing.contains(child.id) { paths.insert(folder + String(decoding: child.name, as: UTF8.self)) }
                } else {
                    found.append(child.id)
                }
            }
        }
        var blobs: [ObjectID] = [], paths: Set<String> = []
        try walk("", root.id, missing: nil, &blobs, &paths)
        let missing = Set(try mirrorErrors { try repository.missingFromDisk(blobs) })
        guard !missing.isEmpty else { return [] }
        try walk("", root.id, missing: missing, &blobs, &paths)
        return Set((0..<cached.count).lazy.map(cached.entry(at:)).filter { paths.contains($0.path) }.map(\.id))
    }

    /// Where `collection`'s listing starts after the snapshot whose message is `base`: its
    /// watermark, less `tidemark.overlap`; nil (every item) for a `full` listing, or without one.
    func listingStart(_ collection: String, after base: SnapshotMessage?, full: Bool) -> Timestamp? {
        guard !full else { return nil }
        return base?.watermark(of: collection).flatMap(Timestamp.init)?.adding(seconds: -settings.overlapSeconds)
    }

    /// True when the last whole listing (``fullListingState``) is `tidemark.fullListingInterval`
    /// old or older, or there was none since this clone of the mirror was made (or since the
    /// setting came to be): a listing that would start at a watermark lists every item instead.
    func fullListingDue(now: Date = Date()) -> Bool {
        guard let last = stateTime(Mirror.fullListingState)?.date else { return true }
        return !(0..<settings.fullListingSeconds).contains(now.timeIntervalSince(last))
    }

    /// How the items of every collection differ between two trees.
    func changes(from old: ObjectID?, to new: ObjectID) throws(MirrorError) -> ChangeCounts {
        try changesByCollection(from: old, to: new).values.reduce(ChangeCounts(), +)
    }

    /// ``changes(from:to:)`` for each collection either tree holds or the settings name.
    func changesByCollection(from old: ObjectID?, to new: ObjectID) throws(MirrorError) -> [String: ChangeCounts] {
        try itemChangesByCollection(from: old, to: new).mapValues(ChangeCounts.init)
    }

    /// The items' changes (``contentChanges(_:in:from:to:)``) of each collection either tree
    /// holds or the settings name.
    func itemChangesByCollection(from old: ObjectID?, to new: ObjectID) throws(MirrorError) -> [String: [ManifestChange]] {
        var byCollection: [String: [ManifestChange]] = [:]
        for collection in try comparedCollections(from: old, to: new) {
            let changes = try manifestChanges(collection, from: try manifestBlob(collection, in: old),
                                              to: try manifestBlob(collection, in: new))
            byCollection[collection] = try contentChanges(changes, in: collection, from: old, to: new)
        }
        return byCollection
    }
}

/// One collection's part of a fetch, kept until its new manifest is written.
private struct FetchedCollection {
    /// The report, without ``FetchReport/Collection/behind`` yet.
    var report: FetchReport.Collection
    /// The manifest the fetch started from, and its entries.
    let baseBlob: ObjectID?
    let cached: ManifestTable
    /// The entries stored and the positions removed.
    let stored: [ManifestEntry]
    let deletions: [Int]
    /// Paths (in the collection) of items answered 304: a new version, the same body.
    var notModified: [String] = []
    /// The new manifest, when it changed, and its write.
    var newManifest: Data? = nil
    var pending: PendingBlob? = nil

    /// True when it changes the snapshot: items stored or deleted.
    var changesSnapshot: Bool { !stored.isEmpty || !deletions.isEmpty }
}
