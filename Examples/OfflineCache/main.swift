// The classic offline cache, with the Tidemark library: keep a local copy of an upstream
// collection, and re-download only the items that changed upstream.
//
//     swift run tidemark-example <upstream spec> <cache folder> [<collection>]
//     swift run tidemark-example dir:Demo/templates /tmp/template-cache
//
// The first run clones; later runs fetch, show what is behind, sync and read an item.
import Foundation
import Tidemark

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: tidemark-example <kind>:<location> <cache folder> [<collection>]\n".utf8))
    exit(2)
}
let spec = arguments[1], folder = arguments[2]

do {
    // 1. Open the cache, or create it with a first full download.
    let mirror: Mirror
    if let existing = try? Mirror.open(at: folder) {
        mirror = existing
        print("opened \(folder)")
    } else {
        let (created, report) = try await Mirror.clone(spec, to: folder)
        mirror = created
        print("cloned \(report.fetch?.listed ?? 0) items into \(folder)")
    }
    let collection = arguments.count > 3 ? arguments[3] : mirror.settings.collections.first ?? "items"

    // 2. Ask upstream what changed; only changed items are downloaded (onto refs/tidemark/upstream).
    let fetch = try await mirror.fetch()
    print("fetch: listed \(fetch.listed), downloaded \(fetch.downloaded)")

    // 3. Which cached items are stale? status() is local: it compares the cache with the fetch.
    for item in try await mirror.status().items where item.upstream != .unchanged {
        print("behind: \(item.upstream) \(item.collection)/\(item.id)")
    }

    // 4. Apply the fetched changes to the cache: one new snapshot (a git commit), or nothing.
    let sync = try await mirror.sync(SyncOptions(offline: true))
    print("sync: \(sync.counts.summary)")

    // 5. Read a cached item (canonical JSON, as the current snapshot holds it).
    if let first = try await mirror.cachedItems(in: collection).first,
       let data = try await mirror.cachedContents(of: first.id, in: collection) {
        print("item \(first.id) (lastModified \(first.lastModified)): \(data.count) bytes")
    }

    // 6. History: one snapshot per sync, newest first.
    for snapshot in try await mirror.log(limit: 3) {
        print("snapshot \(snapshot.commit.prefix(7)) \(snapshot.summary)")
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
