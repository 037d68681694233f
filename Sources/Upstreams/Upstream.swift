import Foundation

/// One item as upstream lists it: identity and version, without (usually) its body.
public struct ListedItem: Sendable, Equatable {
    /// The upstream id.
    public var id: ItemID
    /// The upstream `lastModified`, raw and parsed.
    public var lastModified: Timestamp
    /// A validator upstream gives besides the date (an HTTP ETag, or for `dir` a stat signature),
    /// or a tag of the listing's (``listingTagPrefix``).
    public var etag: String?
    /// The item's body when the listing already carries it (then no download is needed).
    public var body: Data?
    /// Where the adapter finds the body (a file path, an item URL); adapter-private.
    public var location: String?
    /// True when upstream gives the item no version (a `rest` item whose version field is `null`,
    /// or `modifiedField=none`): it is listed at ``undatedVersion``, and a fetch downloads it again
    /// every run (conditionally, with its stored ETag) unless the listing carries its body, whose
    /// content tag (``etag``) tells a change. Two bodies listed for it on two pages are an edit
    /// made while the pages were read, not two items sharing the id.
    public var undated: Bool

    /// The version an undated item is listed at: Unix time `0`, as a server writes "never".
    public static let undatedVersion = Timestamp("0")!

    /// What starts an ``etag`` that is a tag the listing gives, not a validator: never sent to a
    /// server, and an item cached with one that is listed without it has changed, though its
    /// date has not (WordPress lists a scheduled post `listed-future`: published by WordPress's
    /// cron, its status changes and its `modified_gmt` does not).
    public static let listingTagPrefix = "listed-"

    /// What joins a validator the listing gave to a tag of the body stored for it
    /// (`<validator>+body-<16 hex digits>`): an item stored again at its cached version with
    /// another body (the fields left out changed) keeps the validator (a `dir` stat signature)
    /// while its manifest line changes, as status and the counts compare lines. Validators are
    /// compared without it (``validator(of:)``).
    public static let storedBodyTagSeparator = "+body-"

    /// `etag` without the stored body's tag ``storedBodyTagSeparator`` adds (an HTTP ETag ends
    /// with `"`: it never ends like one).
    public static func validator<Bytes: Collection<UInt8>>(of etag: Bytes) -> Bytes.SubSequence {
        let tagLength = storedBodyTagSeparator.utf8.count + 16
        guard etag.count > tagLength else { return etag[...] }
        let tag = etag.suffix(tagLength)
        guard tag.prefix(storedBodyTagSeparator.utf8.count).elementsEqual(storedBodyTagSeparator.utf8),
              tag.dropFirst(storedBodyTagSeparator.utf8.count).allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) })
        else { return etag[...] }
        return etag.dropLast(tagLength)
    }

    /// ``validator(of:)`` of a `String`.
    public static func validator(of etag: String) -> String {
        String(decoding: validator(of: etag.utf8), as: UTF8.self)
    }

    public init(id: ItemID, lastModified: Timestamp, etag: String? = nil, body: Data? = nil, location: String? = nil,
                undated: Bool = false) {
        self.id = id
        self.lastModified = lastModified
        self.etag = etag
        self.body = body
        self.location = location
        self.undated = undated
    }
}

/// The versions the mirror already holds of one collection, for adapters that can tell an item
/// is unchanged without building it (the `dir` adapter compares stat signatures).
///
/// Positions are stable for one listing: an adapter reports unchanged items by position
/// (``Listing/unchanged``), so a no-change listing of 100k items allocates no items at all.
public protocol CachedVersions: Sendable {
    /// How many items are cached.
    var count: Int { get }
    /// The position of `id`, nil when it is not cached.
    func position(of id: ItemID) -> Int?
    /// The position of the id with these bytes, for adapters that look up many (may avoid making
    /// an ``ItemID``).
    func position(ofIDBytes bytes: UnsafeBufferPointer<UInt8>) -> Int?
    /// ``position(ofIDBytes:)`` of the ids at `ranges` of `names`, in their order: a table may
    /// overlap the lookups' memory reads.
    func positions(ofIDBytes names: UnsafeBufferPointer<UInt8>, _ ranges: [Range<Int>]) -> [Int?]
    /// The id at `position`.
    func id(at position: Int) -> ItemID
    /// The validator stored for the item at `position` (an HTTP ETag, a stat signature); nil when none.
    func etag(at position: Int) -> String?
    /// The validator's UTF-8 bytes, for adapters that compare many (may avoid making Strings).
    func etagUTF8(at position: Int) -> ArraySlice<UInt8>?
    /// False while the versions are still being read on another thread: an adapter may list
    /// upstream first and compare afterwards. Every other requirement waits for them.
    var isReady: Bool { get }
    /// The versions once read (waiting for them), to compare many against; throws when they could
    /// not be read.
    func loaded() throws -> any CachedVersions
}

extension CachedVersions {
    public func etagUTF8(at position: Int) -> ArraySlice<UInt8>? { etag(at: position).map { ArraySlice($0.utf8) } }
    public func position(ofIDBytes bytes: UnsafeBufferPointer<UInt8>) -> Int? { position(of: ItemID(bytes: Array(bytes))) }
    public func positions(ofIDBytes names: UnsafeBufferPointer<UInt8>, _ ranges: [Range<Int>]) -> [Int?] {
        ranges.map { position(ofIDBytes: UnsafeBufferPointer(rebasing: names[$0])) }
    }
    public var isReady: Bool { true }
    public func loaded() throws -> any CachedVersions { self }
}

/// No cached versions: a first listing, or an adapter that does not look.
public struct NoCachedVersions: CachedVersions {
    public init() {}
    public var count: Int { 0 }
    public func position(of id: ItemID) -> Int? { nil }
    public func id(at position: Int) -> ItemID { preconditionFailure("no cached versions") }
    public func etag(at position: Int) -> String? { nil }
}

extension CachedVersions where Self == NoCachedVersions {
    /// No cached versions.
    public static var none: NoCachedVersions { NoCachedVersions() }
}

/// What one listing of a collection found.
public struct Listing: Sendable {
    /// Items upstream reported (all of them when `isComplete`, else those changed since the
    /// watermark), except those in `unchanged`.
    public var items: [ListedItem]
    /// Positions in the `cached` versions given to ``Upstream/list(collection:since:cached:)`` of
    /// items listed at exactly their cached version; they are listed too, but not in `items`.
    public var unchanged: [Int]
    /// True when `items` is every item upstream holds, so that an item missing from it was deleted.
    /// A listing that failed or ended early is never complete.
    public var isComplete: Bool
    /// Items upstream reported as deleted or trashed (tombstones), for incremental listings.
    public var deleted: [ItemID]
    /// HTTP requests (or file reads) the listing made.
    public var requests: Int
    /// True when an item changed while the listing was paged (it came back on a later page with
    /// another version): the pages after it shifted, so an item may have gone unseen. Such a
    /// listing is not complete, and the watermark does not move past what it did not see.
    public var changedWhilePaging = false
    /// Upstream's clock when the listing started (the `Date` header of its first response), when
    /// it said. The watermark does not pass it: an item changed after it is dated after it
    /// (upstream dates both), whatever order the pages list items in and however far this
    /// machine's clock is from upstream's.
    public var upstreamTime: Timestamp?
    /// True when only the items changed since the `since` given were asked for (`rest` with
    /// `sinceParam`); an upstream that always lists everything ignores `since`.
    public var incremental = false
    /// Items the listing left out that were asked for, to confirm their deletion, and did not
    /// answer 404 or 410 but failed (`collection/id: error`): they are kept, and the listing is
    /// not complete, so no deletion is inferred from it.
    public var unconfirmed: [String] = []
    /// What the adapter saw amiss without failing the listing, as `collection: text`: signs that
    /// it stopped short (a `rest` page linking a next page its paging did not follow, or a total
    /// above the items listed). Told to the user; the listing is taken as it is.
    public var warnings: [String] = []

    public init(items: [ListedItem], isComplete: Bool, unchanged: [Int] = [], deleted: [ItemID] = [], requests: Int = 0,
                changedWhilePaging: Bool = false) {
        self.items = items
        self.unchanged = unchanged
        self.isComplete = isComplete
        self.deleted = deleted
        self.requests = requests
        self.changedWhilePaging = changedWhilePaging
    }
}

/// What a download of one item returned.
public enum FetchedBody: Sendable {
    /// The item's JSON body, with the ETag the server sent for it (if any).
    case body(Data, etag: String?)
    /// The server answered 304 Not Modified to a conditional request: the cached body is current.
    case notModified
}

/// A place items come from. Adapters: `dir`, `docusign`, `wordpress`, `rest`.
///
/// An adapter lists a collection cheaply (id and version per item) and downloads single items.
/// It never touches the mirror: the engine decides what to download and stores it.
///
/// For an adapter of an app's own: `fetch` is called for up to `tidemark.jobs` items at once.
/// An error it throws reaches the app as a ``UpstreamError`` (``MirrorError/upstream(_:)``): one of
/// that type as it is, any other as its text (`.unreachable`, naming the collection listed or the
/// item downloaded), so an app that needs to tell its own errors apart throws `UpstreamError`s;
/// a `CancellationError` ends the run as cancelled. An item whose id cannot be stored (empty) fails
/// its collection's run; positions in ``Listing/unchanged`` outside `cached` and one id listed
/// twice with two versions or bodies are the adapter's errors, named. The engine never calls
/// ``shutdown()``: the app does, when it is done with the upstream.
public protocol Upstream: Sendable {
    /// The spec that names this upstream, e.g. `dir:/srv/items`; never contains a secret.
    var spec: String { get }
    /// The collections this upstream mirrors, e.g. `["templates"]`.
    var collections: [String] { get }
    /// Lists a collection. `since` is the stored watermark (already moved back by the overlap),
    /// which adapters with an incremental query may use; nil asks for a full listing. `cached`
    /// holds the versions the mirror already has, so an adapter can skip work for unchanged items.
    func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing
    /// Downloads one item's body. `cachedETag` is the ETag stored for the cached copy, for a
    /// conditional request. Not called for an item listed with its `body`: the engine stores that
    /// one as listed, with the listed `etag`.
    func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody
    /// The version a body gives itself (its own `lastModified`-like field), nil when it gives
    /// none or the adapter does not read one: a cached body dated before a newer listed version,
    /// which a server answered 304 Not Modified for, is stale.
    func version(ofBody body: Data) -> Timestamp?
    /// HTTP traffic so far (zero for adapters that make no requests).
    var statistics: HTTPStatistics { get }
    /// Releases connections. Call once when done with the upstream; it cannot be used afterwards.
    func shutdown() async
}

extension Upstream {
    public func version(ofBody body: Data) -> Timestamp? { nil }
    public var statistics: HTTPStatistics { HTTPStatistics() }
    public func shutdown() async {}
}
