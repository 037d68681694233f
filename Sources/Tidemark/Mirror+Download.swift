import Foundation
import GitStore
import Upstreams

/// What a fetch will download and delete in one collection.
struct FetchPlan {
    /// Items to download, with the path of their file and the entry they replace (nil: new).
    var downloads: [(item: ListedItem, path: String, old: ManifestEntry?)]
    /// Positions in the base manifest of the items upstream no longer lists, in id order.
    var deletions: [Int]
    /// Among the downloads, the items listed at the version cached that are downloaded again
    /// as racily clean (``Mirror/RacyCheck``).
    var racy: Set<ItemID> = []
}

extension Mirror {
    /// Which cached items listed at their version are downloaded again as racily clean: those
    /// dated `since` or later, and those a run that checked the others could not check
    /// (`pending`, by collection: it failed or was interrupted before their download), and with
    /// `undated`, every undated item whose body the listing does not carry
    /// (``ListedItem/undated``): no version tells whether it changed.
    struct RacyCheck {
        var since: Timestamp?
        var pending: [String: Set<ItemID>] = [:]
        /// False for a plan that counts what a sync would change, not what its fetch downloads.
        var undated = true
    }
}

/// What the downloads of one collection stored.
struct DownloadOutcome {
    /// New manifest entries, with the blob to put at the entry's path (nil: the cached blob stays).
    var stored: [(entry: ManifestEntry, blob: ObjectID?)] = []
    var failures: [String] = []
    /// Items gone (or replaced) upstream since the listing named them: left as the mirror had
    /// them, each as `collection/id: reason`.
    var vanished: [String] = []
    var downloaded = 0
    var notModified = 0
    /// Items the task's cancellation (an interrupted run) left undownloaded: not started, or cut
    /// short. No failures of upstream's: the next fetch downloads them.
    var notDownloaded = 0

    /// Makes the vanished items failures when a collection's first fetch (a clone) found every
    /// item it asked for (`asked`, more than one) gone: a wrong `itemURL` (a 404 for each) is
    /// likelier than that many deletions in the moment after the listing. Later runs do not weigh
    /// an item's 404 by what else changed (a run would fail or pass with unrelated changes
    /// upstream), nor does an upstream without item URLs (`dir`: its files were removed or
    /// replaced meanwhile).
    mutating func failIfEveryItemWasGone(asked: Int, firstFetch: Bool, itemURLs: Bool) {
        guard firstFetch, itemURLs, asked > 1, vanished.count == asked else { return }
        failures += vanished.map { $0 + " (every item asked for was gone: is the item URL right?)" }
        vanished = []
    }
}

extension Mirror {
    /// Compares a listing with a manifest: which items to download, which to delete. One pass
    /// over the listing with lookups in the manifest's index, and a mark per entry for the
    /// deletions.
    ///
    /// - Parameters:
    ///   - cachedFrom: the manifest `listing.unchanged` indexes when it is not `base` (a dry run
    ///     plans against HEAD with a listing made against the fetched snapshot).
    ///   - racy: items `base` holds at a version as late as `racy.since` or later
    ///     (``racyCheck(after:)``), or pending, are downloaded again though listed at that
    ///     version, when the version is upstream's date alone (no ETag or content tag): they may
    ///     have changed again within its second.
    ///   - repair: items listed at their cached version that are downloaded all the same (their
    ///     blob is gone from the object store: ``lostItems(_:cached:in:)``; or the body settings
    ///     changed since they were stored: ``bodyReshape(base:)``).
    func plan(collection: String, listing: Listing, base: ManifestTable, cachedFrom: ManifestTable? = nil,
              racy racyCheck: RacyCheck = RacyCheck(), repair: Set<ItemID> = [], options: FetchOptions) throws(MirrorError) -> FetchPlan {
        let pending = racyCheck.pending[collection] ?? []
        var racyIDs: Set<ItemID> = []
        let count = base.count
        // A collection is fanned out as its first stored item is (unless set), and new items go in
        // folders as wide as those it has (two hex digits in mirrors fanned out before there were
        // three). The width is looked for when a new item needs a folder: past flat items (added
        // while fanout was off) when the first is one.
        let stored = count > 0 ? ItemPath.fanoutDigits(ofStoredPath: base.entry(at: 0).path) : nil
        let fanout = settings.fanout ?? (stored.map { $0 > 0 } ?? (listing.items.count > 10_000))
        var fanoutWidth: Int?
        func fanoutDigits() -> Int {
            if let fanoutWidth { return fanoutWidth }
            var width = 0
            if fanout {
                width = stored.flatMap { $0 > 0 ? $0 : nil }
                    ?? (0..<count).lazy.map { ItemPath.fanoutDigits(ofStoredPath: base.entry(at: $0).path) }.first { $0 > 0 }
                    ?? ItemPath.fanoutDigits
            }
            fanoutWidth = width
            return width
        }
        // Per base entry: not listed, listed unchanged, or the index in `listing.items` that listed it.
        let notListed = -2, listedUnchanged = -1
        var listedBy = [Int](repeating: notListed, count: count)
        var newItems: [ItemID: Int] = [:]
        var newPaths: [String: ItemID] = [:]
        var downloads: [(item: ListedItem, path: String, old: ManifestEntry?)] = []

        func duplicate(_ id: ItemID) -> MirrorError {
            .upstream(.duplicateID(collection: collection, item: Quoting.display(id)))
        }
        /// Records that `id` is listed at `version`; true when it is listed for the first time.
        /// The same version listed twice (pages shifted while listing) is harmless.
        func mark(_ index: Int, by listed: Int, sameAsBefore: () -> Bool) throws(MirrorError) -> Bool {
            guard listedBy[index] == notListed else {
                if sameAsBefore() { return false }
                throw duplicate(base.id(at: index))
            }
            listedBy[index] = listed
            return true
        }
        func newPath(for id: ItemID) throws(MirrorError) -> String {
            let path: String
            if let cachedFrom, let position = cachedFrom.position(of: id) {
                // Held by the fetched snapshot, which the sync's fetch builds on: its path there,
                // whatever `tidemark.fanout` says for items new to it.
                path = cachedFrom.entry(at: position).path
            } else {
                do {
                    path = try ItemPath.relativePath(for: id, fanoutDigits: fanoutDigits())
                } catch {
                    throw .unsafeName("\(collection): upstream sent an item with an empty id; it cannot be stored")
                }
            }
            if let other = newPaths.updateValue(id, forKey: path) {
                throw .unsafeName("\(collection): items \(Quoting.display(other)) and \(Quoting.display(id)) map to the same file \(path)")
            }
            return path
        }

        // An upstream of an app's own may give any position: one outside the cached versions it
        // was given is its error, named (it crashed the process).
        let positions = cachedFrom?.count ?? count
        if let bad = listing.unchanged.first(where: { !(0..<positions).contains($0) }) {
            throw .upstream(.malformedListing(collection: collection,
                                              reason: "it lists position \(bad) as unchanged, outside the \(positions) cached versions it was given"))
        }
        if let cachedFrom {
            // Positions in another manifest: each is an item listed at that manifest's version.
            for position in listing.unchanged {
                let listed = cachedFrom.entry(at: position)
                let item = ListedItem(id: listed.id, lastModified: Timestamp(listed.lastModified) ?? Timestamp(seconds: 0),
                                      etag: listed.etag.isEmpty ? nil : listed.etag)
                if let index = base.position(of: listed.id) {
                    guard try mark(index, by: listedUnchanged, sameAsBefore: { false }) else { continue }
                    let old = base.entry(at: index)
                    if !old.sameVersion(as: listed) { downloads.append((item, old.path, old)) }
                } else {
                    guard newItems.updateValue(-1, forKey: listed.id) == nil else { throw duplicate(listed.id) }
                    downloads.append((item, try newPath(for: listed.id), nil))
                }
            }
        } else {
            for position in listing.unchanged {
                _ = try mark(position, by: listedUnchanged, sameAsBefore: { false })
            }
        }
        for (listed, item) in listing.items.enumerated() {
            func sameAsBefore(_ prior: Int) -> Bool {
                guard prior >= 0 else { return false }
                let before = listing.items[prior]
                // Bodies the listing carries must agree too (one id, one version, two contents).
                return before.lastModified == item.lastModified && before.etag == item.etag && before.body == item.body
            }
            if let index = base.position(of: item.id) {
                guard try mark(index, by: listed, sameAsBefore: { sameAsBefore(listedBy[index]) }) else { continue }
                let old = base.entry(at: index)
                // A listing tag the cached entry has and the listing no longer gives: changed.
                let untagged = item.etag == nil && old.etag.hasPrefix(ListedItem.listingTagPrefix)
                if old.isDated(item.lastModified), !untagged, item.etag.map({ ListedItem.validator(of: old.etag.utf8).elementsEqual($0.utf8) }) ?? true {
                    // Racily clean, as git calls a file as new as its index: stored from a
                    // listing made in the second it was last dated (or before it; in its day,
                    // for a date alone), the item may have changed since, still dated the same.
                    let racy = item.etag == nil && item.body == nil
                        && (racyCheck.since.map { !(item.lastModified.latest < $0) } ?? false || pending.contains(item.id)
                            || item.undated && racyCheck.undated)
                    // Planned against HEAD, the fetched snapshot may hold another body at that
                    // date (a racily clean item's, tagged): a change all the same.
                    let fetchedAnother = cachedFrom.flatMap { from in from.position(of: item.id).map { from.entry(at: $0) } }
                        .map { $0.isDated(item.lastModified) && $0.etag != old.etag } ?? false
                    // Its blob lost from the store, or its body settings changed: stored again.
                    guard racy || fetchedAnother || repair.contains(item.id) else { continue }
                    if racy { racyIDs.insert(item.id) }
                }
                downloads.append((item, old.path, old))
            } else {
                if let prior = newItems.updateValue(listed, forKey: item.id) {
                    if sameAsBefore(prior) { continue }
                    throw duplicate(item.id)
                }
                downloads.append((item, try newPath(for: item.id), nil))
            }
        }
        let listedAny = !listing.items.isEmpty || !listing.unchanged.isEmpty
        let deletions: [Int] = listing.isComplete
            ? listedBy.indices.filter { listedBy[$0] == notListed }
            : listing.deleted.compactMap { id in base.position(of: id).flatMap { listedBy[$0] == notListed ? $0 : nil } }
        if !options.allowMassDelete, !deletions.isEmpty,
           (listing.isComplete && !listedAny) || deletions.count * 2 > count {
            let deleted = deletions.map { base.entry(at: $0).id }
            throw .massDeletion(collection: collection, deleting: deletions.count, of: count,
                                detail: Mirror.massDeletionDetail(collection, deleted: deleted,
                                                                  new: downloads.filter { $0.old == nil }.map(\.item.id)))
        }
        return FetchPlan(downloads: downloads, deletions: deletions, racy: racyIDs)
    }

    /// What a mass-deletion refusal names: a few of the items it would delete, and how many of
    /// them the listing brings back as new items under a name that differs only in its Unicode
    /// normalization (NFC and NFD: files copied from macOS, or renamed by a sync tool), which
    /// Swift's string comparison sees as the same.
    static func massDeletionDetail(_ collection: String, deleted: [ItemID], new: [ItemID]) -> String {
        let shown = deleted.prefix(3).map { "\(collection)/\(Quoting.display($0))" }.joined(separator: ", ")
        var detail = "it would delete " + shown + (deleted.count > 3 ? ", ..." : "")
        let newIDs = Set(new), newNames = Set(new.map(\.description))
        let renamed = deleted.filter { id in newNames.contains(id.description) && !newIDs.contains(id) }.count
        if renamed > 0 {
            detail += "; \(renamed) of them come back as new items named the same but for their Unicode normalization "
                + "(NFC and NFD: files copied from macOS, or renamed by a sync tool)"
        } else if new.count * 2 >= deleted.count {
            // As many new ids as gone ones: the ids changed, not the collection (a new idField).
            detail += "; the same listing brings \(new.count) new item\(new.count == 1 ? "" : "s"): the ids may have changed "
                + "(tidemark.idField set to another field, upstream renumbering)"
        }
        return detail
    }

    /// Downloads bodies with at most `jobs` requests at once, canonicalises, hashes and
    /// compresses them in parallel and adds them to `batch`. Failures are collected, not thrown.
    /// Once the task is cancelled no download starts, those under way end (their requests are
    /// cancelled), and what did download is kept: the items left are counted as not downloaded.
    ///
    /// - Parameters:
    ///   - base: the tree the cached versions are in, whose body of an item the server
    ///     answered 304 Not Modified for must not be dated before the listed version (a stale cache
    ///     in front of the item's URL answered it).
    ///   - unconditional: items asked for without their stored validator (their blob was lost,
    ///     or they are stored again under changed body settings).
    func download(_ downloads: [(item: ListedItem, path: String, old: ManifestEntry?)], collection: String,
                  from upstream: any Upstream, jobs: Int, base: ObjectID?, unconditional: Set<ItemID> = [],
                  into batch: ObjectBatch) async -> DownloadOutcome {
        var outcome = DownloadOutcome()
        guard !downloads.isEmpty else { return outcome }
        let total = downloads.count
        let jobs = max(1, jobs)
        typealias Result = (index: Int, body: Swift.Result<(PreparedObject, String?)?, UpstreamError>)
        let ignored = ignoredFields
        await withTaskGroup(of: Result.self) { group in
            var next = 0
            func enqueue() {
                let index = next
                let (item, _, old) = downloads[index]
                // A lost blob, or a body stored again, is asked for whole: a 304 would store nothing.
                let cachedETag = unconditional.contains(item.id) ? nil : old.flatMap {
                    $0.etag.isEmpty || $0.etag.hasPrefix(Mirror.contentTagPrefix) || $0.etag.hasPrefix(ListedItem.listingTagPrefix)
                        ? nil : ListedItem.validator(of: $0.etag)
                }
                next += 1
                group.addTask {
                    do {
                        // A body the listing carried is stored as it is: no download (as `ListedItem.body` says).
                        let fetched = if let body = item.body { FetchedBody.body(body, etag: item.etag) } else {
                            try await upstream.fetch(collection: collection, item: item, cachedETag: cachedETag)
                        }
                        switch fetched {
                        case .notModified:
                            return (index, .success(nil))
                        case .body(let data, let etag):
                            do throws(JSONParseError) {
                                let canonical = try CanonicalJSON.canonicalize(data, leavingOut: ignored)
                                return (index, .success((PreparedObject.blob(canonical), etag)))
                            } catch {
                                return (index, .failure(.malformedItem(
                                    collection: collection, item: Quoting.display(item.id),
                                    reason: "body is \(error.summary)")))
                            }
                        }
                    } catch let error as UpstreamError {
                        return (index, .failure(error))
                    } catch {
                        return (index, .failure(.unreachable("\(collection)/\(Quoting.display(item.id)): \(error)")))
                    }
                }
            }
            // Cancelled meanwhile (the listing ended as the signal came): none starts.
            while next < min(jobs, total), !Task.isCancelled { enqueue() }
            var done = 0
            /// The blob `base` holds for a cached item (nil when it cannot be read).
            func cachedBlob(_ old: ManifestEntry) -> ObjectID? {
                guard let base else { return nil }
                return try? repository.treeEntry(at: "\(collection)/\(old.path)", in: base)?.id
            }
            for await result in group {
                if next < total, !Task.isCancelled { enqueue() }
                done += 1
                let (item, path, old) = downloads[result.index]
                switch result.body {
                case .failure where Task.isCancelled:
                    // Ended by the cancellation, most likely (a request cut short).
                    outcome.notDownloaded += 1
                case .failure(let error):
                    if case .goneSinceListed = error {
                        outcome.vanished.append(Mirror.describeFailure(error, collection: collection, item: item.id))
                    } else {
                        outcome.failures.append(Mirror.describeFailure(error, collection: collection, item: item.id))
                    }
                case .success(nil):
                    guard let old else {
                        outcome.failures.append("\(collection)/\(Quoting.display(item.id)): server answered 304 for an item not in the cache")
                        continue
                    }
                    if let blob = cachedBlob(old), let cached = try? repository.readBlob(blob), let served = upstream.version(ofBody: cached),
                       served.isBefore(atCoarserResolution: item.lastModified) {
                        outcome.failures.append("\(collection)/\(Quoting.display(item.id)): server answered 304 Not Modified, but the "
                                                + "cached body is dated \(served.raw), before the listed version \(item.lastModified.raw), "
                                                + "from a cache in front of it maybe; asked for again next run")
                        continue
                    }
                    outcome.notModified += 1
                    // At the date cached (racily clean), the line stays as it was.
                    let same = item.etag == nil && old.isDated(item.lastModified)
                    outcome.stored.append((same ? old : ManifestEntry(id: item.id, lastModified: item.lastModified.raw,
                                                                      etag: item.etag ?? old.etag, path: path), nil))
                case .success(let .some((object, etag))):
                    do {
                        try batch.add(object)
                        outcome.downloaded += 1
                        var entry = ManifestEntry(id: item.id, lastModified: item.lastModified.raw,
                                                  etag: item.etag ?? etag ?? "", path: path)
                        // Downloaded again at the version cached (racily clean, see ``plan``): the
                        // same body keeps its line as it was, the date's text too (a listing may
                        // write the same instant another way): no snapshot of "no changes". Another
                        // body needs a line of its own (status and the counts compare manifest
                        // lines), so without a new validator it is tagged by its blob, as `rest`
                        // tags the bodies its listing carries.
                        if item.etag == nil, let old, old.isDated(item.lastModified) {
                            if cachedBlob(old) == object.id {
                                // A validator the server sends now, where none was stored (or
                                // only tidemark's own tag), is kept: without it every later run
                                // downloads the body whole. One that merely differs is not (a
                                // server may send a new one with every answer).
                                let unvalidated = old.etag.isEmpty || old.etag.hasPrefix(Mirror.contentTagPrefix)
                                entry = unvalidated && !entry.etag.isEmpty && entry.etag != old.etag
                                    ? ManifestEntry(id: old.id, lastModified: old.lastModified, etag: entry.etag, path: old.path) : old
                            } else if entry.etag.isEmpty || entry.etag == old.etag {
                                entry.etag = Mirror.contentTagPrefix + String(object.id.hex.prefix(16))
                            }
                        }
                        // Stored again under changed body settings, at the version cached, with
                        // another body, where the line would stay as it was (the validator the
                        // listing gave, a `dir` stat signature, is the same): the body's tag is
                        // added to it.
                        if unconditional.contains(item.id), let old, old.sameVersion(as: entry),
                           let blob = cachedBlob(old), blob != object.id {
                            entry.etag = ListedItem.validator(of: entry.etag) + ListedItem.storedBodyTagSeparator
                                + String(object.id.hex.prefix(16))
                        }
                        outcome.stored.append((entry, object.id))
                        if outcome.downloaded == 1 { crashPoint("after-first-download") }
                    } catch {
                        outcome.failures.append("\(collection)/\(Quoting.display(item.id)): cannot store: \(error)")
                    }
                }
                progress?(.downloading(collection: collection, done: done, total: total))
            }
            outcome.notDownloaded += total - next
        }
        return outcome
    }

    /// What starts a validator tidemark made from a body (`rest`'s for bodies its listing
    /// carries, a racily clean item's that changed): never sent to a server.
    static let contentTagPrefix = "body-"

    /// A failed download as `collection/id: reason`, so every failure names its item (HTTP errors
    /// alone name only the URL).
    static func describeFailure(_ error: UpstreamError, collection: String, item: ItemID) -> String {
        let name = "\(collection)/\(Quoting.display(item))"
        let text = error.description
        return text.hasPrefix(name + ":") ? text : "\(name): \(text)"
    }
}
