import Foundation
import GitStore
import Upstreams

/// What a fetch will download and delete in one collection.
struct FetchPlan {
    var downloads: [(item: ListedItem, path: String)]
    var deletions: [ItemID]
}

/// What the downloads of one collection stored.
struct DownloadOutcome {
    /// New manifest entries, with the blob to put at the entry's path (nil: the cached blob stays).
    var stored: [(entry: ManifestEntry, blob: ObjectID?)] = []
    var failures: [String] = []
    var downloaded = 0
    var notModified = 0
}

extension Mirror {
    /// Compares a listing with the cached manifest: which items to download, which to delete.
    func plan(collection: String, listing: Listing, base: [ItemID: ManifestEntry],
              options: FetchOptions) throws(MirrorError) -> FetchPlan {
        let fanout = settings.fanout ?? (base.first.map { $0.value.path.contains("/") } ?? (listing.items.count > 10_000))
        var seen: [ItemID: Int] = [:]  // index in the listing
        seen.reserveCapacity(listing.items.count)
        var downloads: [(item: ListedItem, path: String)] = []
        var newPaths: [String: ItemID] = [:]
        for (index, item) in listing.items.enumerated() {
            if let priorIndex = seen.updateValue(index, forKey: item.id) {
                let prior = listing.items[priorIndex]
                // The same version listed twice (pages shifted while listing) is harmless.
                if prior.lastModified == item.lastModified && prior.etag == item.etag { continue }
                throw .upstream(.duplicateID(collection: collection, item: Quoting.display(item.id)))
            }
            if let old = base[item.id] {
                if old.lastModified == item.lastModified.raw || Timestamp(old.lastModified) == item.lastModified,
                   item.etag == nil || item.etag == old.etag {
                    continue
                }
                downloads.append((item, old.path))
                continue
            }
            let path: String
            do {
                path = try ItemPath.relativePath(for: item.id, fanout: fanout)
            } catch {
                throw .unsafeName("\(collection): upstream sent an item with an empty id; it cannot be stored")
            }
            if let other = newPaths[path] {
                throw .unsafeName("\(collection): items \(Quoting.display(other)) and \(Quoting.display(item.id)) map to the same file \(path)")
            }
            newPaths[path] = item.id
            downloads.append((item, path))
        }
        let deletions: [ItemID] = listing.isComplete
            ? base.keys.filter { seen[$0] == nil }.sorted()
            : listing.deleted.filter { base[$0] != nil && seen[$0] == nil }
        if !options.allowMassDelete, !deletions.isEmpty,
           (listing.isComplete && seen.isEmpty) || deletions.count * 2 > base.count {
            throw .massDeletion(collection: collection, deleting: deletions.count, of: base.count)
        }
        return FetchPlan(downloads: downloads, deletions: deletions)
    }

    /// Downloads bodies with at most `jobs` requests at once, canonicalises, hashes and
    /// compresses them in parallel and adds them to `batch`. Failures are collected, not thrown.
    func download(_ downloads: [(item: ListedItem, path: String)], collection: String,
                  from upstream: any Upstream, cached: [ItemID: ManifestEntry], jobs: Int,
                  into batch: ObjectBatch) async -> DownloadOutcome {
        var outcome = DownloadOutcome()
        guard !downloads.isEmpty else { return outcome }
        let total = downloads.count
        let jobs = max(1, jobs)
        typealias Result = (index: Int, body: Swift.Result<(PreparedObject, String?)?, UpstreamError>)
        await withTaskGroup(of: Result.self) { group in
            var next = 0
            func enqueue() {
                let index = next
                let item = downloads[index].item
                let cachedETag = cached[item.id].flatMap { $0.etag.isEmpty ? nil : $0.etag }
                next += 1
                group.addTask {
                    do {
                        switch try await upstream.fetch(collection: collection, item: item, cachedETag: cachedETag) {
                        case .notModified:
                            return (index, .success(nil))
                        case .body(let data, let etag):
                            do {
                                let canonical = try CanonicalJSON.canonicalize(data)
                                return (index, .success((PreparedObject.blob(canonical), etag)))
                            } catch {
                                return (index, .failure(.malformedItem(
                                    collection: collection, item: Quoting.display(item.id),
                                    reason: "body is not valid JSON: \(error)")))
                            }
                        }
                    } catch let error as UpstreamError {
                        return (index, .failure(error))
                    } catch {
                        return (index, .failure(.unreachable("\(collection)/\(Quoting.display(item.id)): \(error)")))
                    }
                }
            }
            while next < min(jobs, total) { enqueue() }
            var done = 0
            for await result in group {
                if next < total { enqueue() }
                done += 1
                let (item, path) = downloads[result.index]
                switch result.body {
                case .failure(let error):
                    outcome.failures.append(Mirror.describeFailure(error, collection: collection, item: item.id))
                case .success(nil):
                    guard let old = cached[item.id] else {
                        outcome.failures.append("\(collection)/\(Quoting.display(item.id)): server answered 304 for an item not in the cache")
                        continue
                    }
                    outcome.notModified += 1
                    outcome.stored.append((ManifestEntry(id: item.id, lastModified: item.lastModified.raw,
                                                         etag: item.etag ?? old.etag, path: path), nil))
                case .success(let .some((object, etag))):
                    do {
                        try batch.add(object)
                        outcome.downloaded += 1
                        outcome.stored.append((ManifestEntry(id: item.id, lastModified: item.lastModified.raw,
                                                             etag: item.etag ?? etag ?? "", path: path), object.id))
                    } catch {
                        outcome.failures.append("\(collection)/\(Quoting.display(item.id)): cannot store: \(error)")
                    }
                }
                progress?(.downloading(collection: collection, done: done, total: total))
            }
        }
        return outcome
    }

    /// A failed download as `collection/id: reason`, so every failure names its item (HTTP errors
    /// alone name only the URL).
    static func describeFailure(_ error: UpstreamError, collection: String, item: ItemID) -> String {
        let name = "\(collection)/\(Quoting.display(item))"
        let text = error.description
        return text.hasPrefix(name + ":") ? text : "\(name): \(text)"
    }
}
