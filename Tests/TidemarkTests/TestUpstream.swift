import Foundation
import Upstreams

/// An in-memory upstream for engine tests: items can be changed between runs, downloads counted,
/// and single items made to fail.
final class TestUpstream: Upstream, @unchecked Sendable {
    struct Item {
        var lastModified: String
        var body: String
    }
    let spec = "test:memory"
    let collections: [String]
    private let lock = NSLock()
    private var store: [String: [ItemID: Item]] = [:]
    private var failing: Set<ItemID> = []
    private var downloads: [ItemID] = []
    var listingIsComplete = true
    /// Listings say an item changed while they were paged (``Listing/changedWhilePaging``).
    var listingChangedWhilePaging = false
    /// Upstream's clock as listings report it (``Listing/upstreamTime``).
    var upstreamTime: Timestamp?
    /// The `since` of the last listing.
    private(set) var lastSince: Timestamp?
    /// How long each listing waits before answering, in seconds.
    var listingDelay = 0.0
    /// How long the listings of some collections wait, in seconds (besides ``listingDelay``).
    var listingDelays: [String: Double] = [:]
    /// Listings carry each item's body, and `fetch` fails: an adapter that trusts
    /// ``ListedItem/body`` ("then no download is needed").
    var listsBodies = false
    /// Downloads after this many hang until their task is cancelled (nil: none hangs).
    var downloadsBeforeHanging: Int?
    /// Items are listed by their date alone (no validator, none reported unchanged by position),
    /// as DocuSign, WordPress and `rest` with `itemURL` list them.
    var listsDatesOnly = false
    /// Items each listing says it could not confirm deleted (``Listing/unconfirmed``).
    var unconfirmed: [String] = []

    init(collections: [String] = ["items"]) {
        self.collections = collections
        for collection in collections { store[collection] = [:] }
    }

    func put(_ id: ItemID, _ lastModified: String, body: String? = nil, in collection: String = "items") {
        lock.withLock {
            store[collection]![id] = Item(lastModified: lastModified,
                                          body: body ?? #"{"id": "\#(id.bytes.count)", "v": "\#(lastModified)"}"#)
        }
    }
    func remove(_ id: ItemID, in collection: String = "items") { _ = lock.withLock { store[collection]!.removeValue(forKey: id) } }
    func removeAll(in collection: String = "items") { lock.withLock { store[collection] = [:] } }
    func fail(_ ids: Set<ItemID>) { lock.withLock { failing = ids } }
    /// Downloads started since the last ``takeDownloads()``.
    var downloadsStarted: Int { lock.withLock { downloads.count } }
    /// Downloads since the last call, and resets the count.
    func takeDownloads() -> [ItemID] { lock.withLock { defer { downloads = [] }; return downloads } }

    func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        if listingDelay > 0 { try await Task.sleep(nanoseconds: UInt64(listingDelay * 1e9)) }
        if let delay = listingDelays[collection] { try await Task.sleep(nanoseconds: UInt64(delay * 1e9)) }
        let stored = lock.withLock {
            lastSince = since
            return store[collection] ?? [:]
        }
        // The version doubles as the validator, so items the mirror holds at that version are
        // reported by position, as the `dir` adapter reports files whose signature matches.
        var items: [ListedItem] = []
        var unchanged: [Int] = []
        // In id order, so that downloads go in a known order.
        for (id, item) in stored.sorted(by: { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }) {
            if !listsDatesOnly, let position = cached.position(of: id), cached.etag(at: position) == item.lastModified {
                unchanged.append(position)
            } else {
                items.append(ListedItem(id: id, lastModified: Timestamp(item.lastModified)!, etag: listsDatesOnly ? nil : item.lastModified,
                                        body: listsBodies ? Data(item.body.utf8) : nil))
            }
        }
        var listing = Listing(items: items, isComplete: listingIsComplete, unchanged: unchanged, requests: 1)
        listing.changedWhilePaging = listingChangedWhilePaging
        listing.upstreamTime = upstreamTime
        listing.unconfirmed = unconfirmed
        return listing
    }

    func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        let hangs = lock.withLock { downloadsBeforeHanging.map { downloads.count >= $0 } ?? false }
        if hangs {
            lock.withLock { downloads.append(item.id) }
            while true { try await Task.sleep(nanoseconds: 10_000_000) }
        }
        return try lock.withLock {
            downloads.append(item.id)
            if listsBodies { throw UpstreamError.unreachable("listed with its body: no download expected") }
            if failing.contains(item.id) {
                throw UpstreamError.http(status: 503, url: "test:\(item.id)", message: "injected")
            }
            guard let stored = store[collection]?[item.id] else { throw UpstreamError.unreachable("gone") }
            return .body(Data(stored.body.utf8), etag: nil)
        }
    }
}
