import Foundation

/// Collects listed items across pages, a page at a time:
/// - an exact repeat (same id and version, as when items shift between pages) is dropped;
/// - an id listed again on a later page with another version changed while the listing was being
///   paged (listings ordered by modification date move an edited item to the end, so it shows
///   twice): the newer version is kept and ``changedWhilePaging`` is set, because the move also
///   shifted the pages after it, so an item may have slipped past a page boundary unseen;
/// - an id listed twice on one page with different versions is an error: a page is one snapshot
///   of upstream, where an item cannot have two versions, so two items share that id (e.g. an
///   `idField` that is not unique) and keeping either would silently lose the other. So is an id
///   listed twice (on any pages) with the same version but different bodies, unless it is undated
///   (``ListedItem/undated``) and on two pages: then it is an edit made while the pages were read,
///   kept as the later page lists it, and ``changedWhilePaging`` is set.
struct ListingAccumulator {
    let collection: String
    /// Most distinct ids the listing may hold (``HTTPSettings/maxListedItems``).
    let maxItems: Int
    /// Most bytes of bodies the listing's items may carry, all held until the listing ends (1 GiB).
    let maxBodyBytes: Int
    /// Bytes of bodies the items listed so far carry.
    private var bodyBytes = 0
    private(set) var items: [ListedItem] = []
    /// Where each id is in `items`.
    private var positions: [ItemID: Int] = [:]
    /// True when an id came back on a later page with another version, or pages gave different
    /// totals (``note(total:)``). The listing is then not complete: deletions must not be
    /// inferred from it.
    private(set) var changedWhilePaging = false
    /// The total the last page gave, when pages give one.
    private var pageTotal: Int?
    /// Pages in a row, up to the last one added, that brought no new id (empty, only repeats, or
    /// only newer versions of ids listed before: a server that dates one id a second later on
    /// every page would otherwise be paged for ever, each page "newer").
    private(set) var pagesWithoutProgress = 0
    /// How many pages in a row may bring no new id while the server still links a next one.
    static let stalledPagesAllowed = 20

    init(collection: String, maxItems: Int, maxBodyBytes: Int = 1 << 30) {
        self.collection = collection
        self.maxItems = maxItems
        self.maxBodyBytes = maxBodyBytes
    }

    /// Records the total a page says the listing holds. One that differs from an earlier page's
    /// means an item was added or deleted while the pages were read, which shifts the rows after
    /// it, so one may have gone unseen at a page boundary (and would look deleted): the listing
    /// changed while paged.
    mutating func note(total: Int) {
        if let seen = pageTotal, seen != total { changedWhilePaging = true }
        pageTotal = total
    }

    /// Throws when the listing would go on to `next` after ``stalledPagesAllowed`` pages in a row
    /// brought nothing new. Each next link a server sends may be a new URL (a cursor), so a
    /// paging that never ends is not always a loop back to a page already read; this ends it.
    func checkAdvancing(to next: URL?) throws {
        guard let next, pagesWithoutProgress >= Self.stalledPagesAllowed else { return }
        throw UpstreamError.malformedListing(
            collection: collection,
            reason: "\(pagesWithoutProgress) pages in a row brought no new item, and the server still links a next page "
                + "(\(URLSafety.redact(next))): its paging does not end")
    }

    /// The number of distinct ids so far.
    var count: Int { items.count }

    /// Adds the items of one listing page, in order. Returns true when the page brought a new id
    /// or a newer version of a known one: a page that did not only repeats earlier pages.
    /// - Throws: ``UpstreamError/duplicateID(collection:item:)`` for an id listed twice on this
    ///   page with different versions, or twice with the same version and different bodies;
    ///   ``UpstreamError/malformedListing(collection:reason:)`` past ``maxItems`` ids.
    @discardableResult
    mutating func add(page: [ListedItem]) throws -> Bool {
        var onThisPage: [ItemID: Timestamp] = [:]
        var progressed = false
        var newID = false
        for item in page {
            let other = onThisPage.updateValue(item.lastModified, forKey: item.id)
            if let other, !Self.same(other, item.lastModified) {
                throw UpstreamError.duplicateID(
                    collection: collection, item: "\(item.id) (versions \(other.raw) and \(item.lastModified.raw))")
            }
            guard let position = positions[item.id] else {
                guard items.count < maxItems else {
                    throw UpstreamError.malformedListing(
                        collection: collection,
                        reason: "it brought over \(maxItems) items, the most a listing may (option maxItems): "
                            + "upstream's paging may not end, or the collection needs a larger maxItems")
                }
                try hold(item.body, replacing: nil)
                positions[item.id] = items.count
                items.append(item)
                progressed = true
                newID = true
                continue
            }
            let known = items[position]
            if Self.same(known.lastModified, item.lastModified) {
                if let body = item.body, let knownBody = known.body, body != knownBody {
                    // Undated, the later page's body is an edit made while the pages were read.
                    guard item.undated, known.undated, other == nil else {
                        throw UpstreamError.duplicateID(
                            collection: collection, item: "\(item.id) (version \(item.lastModified.raw) twice, with different contents)")
                    }
                    changedWhilePaging = true
                    try hold(body, replacing: knownBody)
                    items[position] = item
                    progressed = true
                }
            } else {
                changedWhilePaging = true
                if item.lastModified > known.lastModified {
                    try hold(item.body, replacing: known.body)
                    items[position] = item
                    progressed = true
                }
            }
        }
        pagesWithoutProgress = newID ? 0 : pagesWithoutProgress + 1
        return progressed
    }

    /// Counts `body` in the bodies held, in place of `old`; throws past ``maxBodyBytes``.
    private mutating func hold(_ body: Data?, replacing old: Data?) throws {
        bodyBytes += (body?.count ?? 0) - (old?.count ?? 0)
        guard bodyBytes > maxBodyBytes else { return }
        throw UpstreamError.malformedListing(
            collection: collection,
            reason: "its items carry over \(maxBodyBytes >> 20) MiB of bodies, more than tidemark holds at once: "
                + "set itemURL to download each item on its own")
    }

    /// Whether two listed versions are the same (as written, or as instants).
    private static func same(_ a: Timestamp, _ b: Timestamp) -> Bool { a.raw == b.raw || a == b }
}

/// Reads the version field of one listed item.
func listedVersion(
    _ value: JSONValue?, collection: String, item: String, field: String, missingHint: String = "",
    redact: (String) -> String
) throws -> Timestamp {
    guard let value else {
        throw UpstreamError.malformedItem(collection: collection, item: item, reason: "field '\(field)' is missing" + missingHint)
    }
    guard let text = Timestamp.versionText(of: value) else {
        throw UpstreamError.malformedItem(
            collection: collection, item: item, reason: "field '\(field)' is \(value.typeName), not a date-time (it takes \(Timestamp.acceptedForms))")
    }
    guard let timestamp = Timestamp(text) else {
        throw UpstreamError.malformedItem(
            collection: collection, item: item,
            reason: "field '\(field)' is not a date-time: '\(CQuoting.excerpt(text, limit: 64, redact: redact))' (it takes \(Timestamp.acceptedForms))")
    }
    return timestamp
}

/// The date a JSON body gives itself in `field` (a key, or a JSON pointer): nil when it has none
/// that parses. A body dated before its listed version is stale.
func bodyVersion(of body: JSONValue, field: String) -> Timestamp? {
    let value: JSONValue?
    if field.hasPrefix("/") {
        value = body.at(pointer: field)
    } else if case .object(let fields) = body {
        value = fields[field]
    } else {
        value = nil
    }
    return value.flatMap { Timestamp(versionValue: $0) }
}

/// ``bodyVersion(of:field:)`` of a body's bytes.
func bodyVersion(of data: Data, field: String) -> Timestamp? {
    (try? JSONValue.parse(data)).flatMap { bodyVersion(of: $0, field: field) }
}

/// Parses a JSON response body or throws `malformedListing` naming the URL. A duplicate key is
/// refused, as in a body fetched alone: a listing that carries bodies would otherwise store the
/// first value (or id) where other clients read the last. A page may nest 64 levels deeper than an
/// item may (the array and the `itemsPath` above its items), so that an item past the item limit
/// fails alone, as its body would fetched by itself, instead of failing the whole listing.
func parseListingBody(_ result: HTTPResult, collection: String) throws -> JSONValue {
    do throws(JSONParseError) {
        return try JSONValue.parse(result.body, maxDepth: 256 + 64, duplicateKeys: .reject)
    } catch {
        throw UpstreamError.malformedListing(
            collection: collection, reason: "response from \(URLSafety.redact(result.url)) is \(error.summary)\(result.notJSONContext())")
    }
}

/// One reading of a paged listing: its items, whether it may count as complete (it saw every
/// item: nothing shifted while it was paged), whether upstream changed meanwhile, and how many
/// pages it read.
struct ListingPass {
    var items: [ListedItem]
    var complete: Bool
    var changedWhilePaging: Bool
    var pages: Int
    /// The `Date` of the first page's response (``Listing/upstreamTime``).
    var upstreamTime: Timestamp? = nil
    /// Positions in the cached versions of items neither reading listed that upstream still
    /// serves (``confirmingDeletions(_:cached:collection:exists:answeringIsLive:again:)``): kept as
    /// cached (``Listing/unchanged``).
    var kept: [Int] = []
    /// Items the listing left out whose deletion could not be confirmed (``Listing/unconfirmed``).
    var unconfirmed: [String] = []
    /// What looked amiss in the pages (``Listing/warnings``).
    var warnings: [String] = []
}

extension Listing {
    /// The listing of `pass`, with the tombstones `deleted` and the `requests` it took.
    init(_ pass: ListingPass, deleted: [ItemID] = [], requests: Int) {
        self.init(items: pass.items, isComplete: pass.complete, unchanged: pass.kept, deleted: deleted, requests: requests,
                  changedWhilePaging: pass.changedWhilePaging)
        upstreamTime = pass.upstreamTime
        unconfirmed = pass.unconfirmed
    }
}

/// `first`, an incremental listing (changes since the watermark) over several pages, read a
/// second time: an item deleted upstream while its pages were read shifts the rows after it, so
/// a changed one at a page boundary can go unlisted, and the watermark would then pass it for
/// good. Items either reading lists are kept; one only the second lists, or listed at two
/// versions, marks the listing as changed while paged (the watermark stays).
func confirmingIncremental(_ first: ListingPass, again: () async throws -> ListingPass) async throws -> ListingPass {
    guard first.pages > 1 else { return first }
    let second = try await again()
    let both = merged(first, second)
    return ListingPass(items: both.items, complete: false, changedWhilePaging: both.changed || both.added,
                       pages: first.pages + second.pages, upstreamTime: first.upstreamTime ?? second.upstreamTime)
}

/// Two readings of one listing taken together: the first's items, then those only the second
/// lists (`added`); `changed` when either reading saw items change while paged, or an item has
/// another version in the second (upstream changed it meanwhile).
private func merged(_ first: ListingPass, _ second: ListingPass) -> (items: [ListedItem], changed: Bool, added: Bool) {
    var versions = [ItemID: Timestamp](minimumCapacity: first.items.count)
    for item in first.items { versions[item.id] = item.lastModified }
    var items = first.items
    var changed = first.changedWhilePaging || second.changedWhilePaging
    for item in second.items {
        if let version = versions[item.id] {
            if version.raw != item.lastModified.raw, version != item.lastModified { changed = true }
        } else {
            items.append(item)
        }
    }
    return (items, changed, items.count > first.items.count)
}

/// `first`, once the deletions it implies are confirmed: when it is a complete listing over
/// several pages that leaves cached items out (a complete listing deletes those).
///
/// An item deleted or added upstream while the pages are read shifts the rows after it, so one
/// at a page boundary can go unlisted and would look deleted; a total that did not change does
/// not rule that out (one item deleted, another added). With `exists` (a request for one item)
/// and no more such items than pages, each is asked for, and when none answers the deletions
/// stand. Otherwise (one still answers: it shifted, or the listing leaves it out while its own
/// URL still serves it, as DocuSign's recycle bin does) the listing is read again (`again`), and
/// an item either reading lists is kept (one deleted meanwhile goes at the next run), one neither
/// lists is deleted; a version that differs between the two, or a second reading that shifted
/// too, makes the listing incomplete.
///
/// With `answeringIsLive` (an upstream whose item that answers is live: `rest` at its `itemURL`,
/// a WordPress post in a listed status; not DocuSign, whose recycle bin answers), an item neither
/// reading lists that answers is kept as cached, not deleted: a server paging rows of tied sort
/// keys can repeat one row and leave another out the same way on every reading.
///
/// An item whose request fails (an HTTP error other than 404 or 410 after its retries: a 403
/// from a server that answers so for what it does not have, a 500) is taken as answering, and
/// the listing is incomplete: no deletion is inferred this run, and the item is named in
/// ``ListingPass/unconfirmed``.
func confirmingDeletions(_ first: ListingPass, cached: some CachedVersions, collection: String,
                         exists: ((ItemID) async throws -> Bool)? = nil, answeringIsLive: Bool = false,
                         again: () async throws -> ListingPass) async throws -> ListingPass {
    guard first.complete, first.pages > 1 else { return first }
    let cachedVersions = try cached.loaded()
    var listed = [Bool](repeating: false, count: cachedVersions.count)
    for item in first.items { if let position = cachedVersions.position(of: item.id) { listed[position] = true } }
    let unlisted = listed.indices.filter { !listed[$0] }.map(cachedVersions.id(at:))
    guard !unlisted.isEmpty else { return first }
    var answering: ItemID?
    let asking = exists != nil && unlisted.count <= first.pages
    var unconfirmed: [String] = []
    func stillServed(_ id: ItemID) async throws -> Bool {
        do {
            return try await exists!(id)
        } catch UpstreamError.http(let status, let url, let message) {
            // Without the advice on credentials a refusal gets: here it is no refusal of the listing's.
            let plain = message.components(separatedBy: "; no credentials are configured").first ?? message
            unconfirmed.append("\(collection)/\(CQuoting.quoted(id)): " + UpstreamError.http(status: status, url: url, message: plain).description)
            return true
        }
    }
    if asking {
        for id in unlisted where try await stillServed(id) {
            answering = id
            break
        }
        if answering == nil { return first }
    }
    let second = try await again()
    let both = merged(first, second)
    // Upstream's time when the first reading started: what either reading missed changed later.
    var pass = ListingPass(items: both.items, complete: second.complete && !both.changed, changedWhilePaging: both.changed,
                           pages: first.pages + second.pages, upstreamTime: first.upstreamTime ?? second.upstreamTime)
    if answeringIsLive, asking {
        let listed = Set(both.items.map(\.id))
        for id in unlisted where !listed.contains(id) {
            let answers: Bool
            if id == answering { answers = true } else { answers = try await stillServed(id) }
            if answers, let position = cachedVersions.position(of: id) { pass.kept.append(position) }
        }
    }
    if !unconfirmed.isEmpty {
        pass.complete = false
        pass.unconfirmed = unconfirmed
    }
    return pass
}
