import Foundation

/// The `wordpress` upstream: REST API `wp/v2` posts, pages or any post type of one site.
///
/// Spec: `wordpress:<site URL>`. Collections: post type REST bases (`posts` by default, `pages`,
/// custom types), matching `^[a-z0-9_-]+$`. Credentials (optional): `basicEnv` with an application
/// password, or a bearer token.
///
/// The REST root is discovered once: `<site>/wp-json/`, else the root the home page advertises in
/// its `Link: <...>; rel="https://api.w.org/"` header, else `<site>/?rest_route=/` (sites without
/// pretty permalinks). Every listing is a full id listing (`_fields=id,modified_gmt,status`, 100
/// per page, ordered by id: unique, where many posts share a `modified` second after a bulk edit
/// or an import and MySQL may order such ties differently for each page, so that some are on no
/// page), paged by `Link rel="next"` or `X-WP-TotalPages`, and cross-checked against `X-WP-Total`
/// (a post listed twice keeps its newer version, and the listing is not complete). With
/// credentials it covers the statuses `publish,future,draft,pending,private` (`inherit,private`
/// for `media`), and a second listing of `status=trash` reports trashed ids in
/// ``Listing/deleted``. The version is `modified_gmt` (UTC, no offset). WordPress's cron publishes
/// a scheduled post without changing `modified_gmt` (`wp_publish_post`), so such posts carry a
/// tag besides (``ListedItem/listingTagPrefix``): `listed-future` while scheduled, and
/// `listed-scheduled` once published until edited again (published, and dated after its last
/// save: `date_gmt` later than `modified_gmt`). A post published while a mirror still held it
/// scheduled is downloaded once, also in a mirror an older build made.
public struct WordPressUpstream: Upstream {
    public let spec: String
    public let collections: [String]
    /// Items per listing page (1...100).
    public let pageSize: Int
    private let site: URL
    private let session: HTTPSession
    private let root = RootBox()

    public init(
        _ configuration: UpstreamConfiguration, settings: HTTPSettings = HTTPSettings(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        var location = configuration.location
        while location.hasSuffix("/") { location.removeLast() }
        site = try URLSafety.specURL(location, kind: "wordpress", example: "https://example.org")
        // The REST API's URL pasted for the site's: its routes would be looked for below it.
        if site.pathComponents.contains("wp-json") || site.query?.contains("rest_route=") == true {
            throw UpstreamError.invalidConfiguration(
                "wordpress upstream takes the site's URL, not its REST API's ('\(URLSafety.redact(site))'): "
                    + "wordpress:https://example.org (the API is found from there)")
        }
        spec = "wordpress:" + location
        collections = configuration.collections.isEmpty ? ["posts"] : configuration.collections
        for collection in collections { try WordPressUpstream.validate(collection) }
        pageSize = try positiveOption(configuration.options, "pageSize", default: 100, max: 100)
        session = try HTTPSession(
            base: site, credentials: try Credentials(options: configuration.options, environment: environment),
            settings: settings)
    }

    public var statistics: HTTPStatistics { session.statistics }
    public func shutdown() async { await session.shutdown() }

    /// Post type names become URL path segments: only `[a-z0-9_-]+` is accepted.
    static func validate(_ collection: String) throws {
        guard !collection.isEmpty, collection.utf8.count <= 64,
              collection.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95 })
        else {
            throw UpstreamError.invalidConfiguration(
                "wordpress collection '\(collection.prefix(80))' is not a post type REST base (allowed: a-z, 0-9, '-', '_')")
        }
    }

    public func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        // A listing error may quote what the server sent (a next page's URL, a field).
        try await session.redactingErrors { try await listing(collection: collection, since: since, cached: cached) }
    }

    private func listing(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        try WordPressUpstream.validate(collection)
        let before = session.statistics.requests
        let authenticated = session.credentials.isConfigured
        let statuses = authenticated ? Self.statusesWithCredentials(collection) : nil
        // A post trashed and another published while the pages are read leave the total as it
        // was, and still shift a row past a page boundary: the deletions a listing implies are
        // confirmed (``confirmingDeletions(_:cached:collection:exists:again:)``).
        let pass = try await confirmingDeletions(try await listAll(collection: collection, status: statuses),
                                                 cached: cached, collection: collection,
                                                 exists: { id in try await listed(id, in: collection, statuses: statuses) },
                                                 answeringIsLive: true) {
            try await listAll(collection: collection, status: statuses)
        }
        var deleted: [ItemID] = []
        let live = Set(pass.items.map(\.id))
        if authenticated {
            let trashed = try await listAll(collection: collection, status: "trash").items
            deleted = trashed.map(\.id).filter { !live.contains($0) }
        }
        // A listing whose counts do not add up, though nothing moved while it was read: with an
        // Author's or Contributor's credentials WordPress counts in `X-WP-Total` the posts they
        // may not read, which no listing of theirs ever adds up to, so none would show a deletion.
        // The few cached posts it leaves out are asked for one by one: those gone are deleted.
        if !pass.complete, !pass.changedWhilePaging {
            let versions = try cached.loaded()
            let known = live.union(deleted)
            let kept = Set(pass.kept)
            let unlisted = Array((0..<versions.count).lazy.filter { !kept.contains($0) }.map(versions.id(at:))
                .filter { !known.contains($0) }.prefix(Self.postsAskedFor + 1))
            if unlisted.count <= Self.postsAskedFor {
                for id in unlisted where try await !listed(id, in: collection, statuses: statuses) { deleted.append(id) }
            }
        }
        return Listing(pass, deleted: deleted, requests: session.statistics.requests - before)
    }

    /// The most cached posts a listing that does not add up asks for one by one; past it, it
    /// infers no deletion.
    static let postsAskedFor = 50

    /// The statuses a listing with credentials covers: attachments (`media`) have their own
    /// (WordPress refuses the others for them, 400 `rest_invalid_param`); any other post type
    /// the five a post can be seen in, short of the trash.
    static func statusesWithCredentials(_ collection: String) -> String {
        collection == "media" ? "inherit,private" : "publish,future,draft,pending,private"
    }

    /// The status a listing without credentials shows: `inherit` for attachments, else `publish`.
    static func defaultStatus(_ collection: String) -> String { collection == "media" ? "inherit" : "publish" }

    /// Whether the post `id` is still one the listing shows: it answers with one of `statuses`
    /// (``defaultStatus(_:)`` without credentials); a 404, a 401 or 403 without credentials, or a
    /// post in the trash or another status, is gone from what this mirror lists.
    private func listed(_ id: ItemID, in collection: String, statuses: String?) async throws -> Bool {
        let url = try await postURL(id, in: collection, query: [("_fields", "id,status")])
        let result = try await session.get(url, acceptStatuses: [401, 403, 404, 410])
        // Refused to credentials that did read it (a security plugin's passing 403, a role that
        // lost a right): no proof it is gone, and it is kept. Without credentials a refusal is a
        // post no longer public: gone from what this mirror lists.
        if [401, 403].contains(result.status), session.credentials.isConfigured { return true }
        guard result.status == 200 else { return false }
        let shown = Set((statuses ?? Self.defaultStatus(collection)).split(separator: ",").map(String.init))
        if case .object(let fields)? = try? JSONValue.parse(result.body), let status = fields["status"]?.stringValue {
            return shown.contains(status)
        }
        return true
    }

    public func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        try WordPressUpstream.validate(collection)
        do {
            return try await session.downloadItem(try await postURL(item.id, in: collection), collection: collection, item: item,
                                                  cachedValidator: cachedETag, requireObject: true, versionField: "modified_gmt")
        } catch UpstreamError.http(let status, let url, _) where (status == 401 || status == 403) && !session.credentials.isConfigured {
            // Public when listed, refused now: unpublished (or trashed) meanwhile, gone from what
            // this mirror shows; no failure (it said to configure credentials).
            throw UpstreamError.goneSinceListed(
                collection: collection, item: CQuoting.quoted(item.id),
                reason: "HTTP \(status) from \(url) after the listing named it (no longer public)")
        } catch UpstreamError.http(let status, _, let message)
            where (status == 401 || status == 403) && message.contains("rest_forbidden_context") && session.credentials.isConfigured {
            // Credentials that read the post but may not edit it (an Author's, another author's
            // published post): what anyone sees, without the raw fields.
            return try await session.downloadItem(try await postURL(item.id, in: collection, context: "view"), collection: collection,
                                                  item: item, cachedValidator: cachedETag, requireObject: true, versionField: "modified_gmt")
        }
    }

    public func version(ofBody body: Data) -> Timestamp? { bodyVersion(of: body, field: "modified_gmt") }

    /// The URL of the post `id` of `collection`, in the context the credentials allow (`edit`
    /// with them: drafts and private posts answer too, with their raw fields) or `context`,
    /// with `query` added.
    private func postURL(_ id: ItemID, in collection: String, context: String? = nil, query: [(String, String)] = []) async throws -> URL {
        let context = context ?? (session.credentials.isConfigured ? "edit" : "view")
        return try await endpoint(["wp", "v2", collection, id.description], query: [("context", context)] + query)
    }

    /// Lists every item of `collection` with the given `status` filter (nil: the default).
    private func listAll(collection: String, status: String?) async throws -> ListingPass {
        var query = [("per_page", String(pageSize)), ("page", "1"), ("orderby", "id"), ("order", "asc"),
                     ("_fields", "id,modified_gmt,status,date_gmt")]
        if let status { query.append(("status", status)) }
        let first = try await endpoint(["wp", "v2", collection], query: query)
        var accumulator = ListingAccumulator(collection: collection, maxItems: session.settings.maxListedItems)
        var next: URL? = first
        var page = 1
        var total: Int?
        var totalPages: Int?
        var visited: Set<String> = []
        var endedEarly = false
        while let url = next {
            guard visited.insert(url.absoluteString).inserted else {
                throw UpstreamError.malformedListing(collection: collection, reason: "paging loops back to \(URLSafety.redact(url))")
            }
            let result = try await session.get(url, acceptStatuses: page > 1 ? [400] : [])
            if result.status == 400 {
                // Past the end (the collection shrank while paging): not an error, but the
                // listing can no longer be trusted to be complete unless the counts agree.
                guard result.errorCode == "rest_post_invalid_page_number" else {
                    throw UpstreamError.http(status: 400, url: URLSafety.redact(url),
                                             message: "Bad Request" + result.shownErrorCode(redacting: session.credentials))
                }
                endedEarly = true
                break
            }
            if let pageTotal = result.header("X-WP-Total").flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) {
                accumulator.note(total: pageTotal)
                total = pageTotal
            }
            totalPages = result.header("X-WP-TotalPages").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? totalPages
            guard case .array(let rows) = try parseListingBody(result, collection: collection) else {
                throw UpstreamError.malformedListing(
                    collection: collection, reason: "response from \(URLSafety.redact(url)) is not a JSON array")
            }
            try accumulator.add(page: rows.enumerated().map { index, row in
                try listedPost(row, position: (page - 1) * pageSize + index, collection: collection)
            })
            if let link = LinkHeader.target(in: result.headerValues("Link"), relation: "next"),
               let resolved = URL(string: link, relativeTo: result.finalURL)?.absoluteURL {
                next = resolved
            } else if let totalPages, page < totalPages, !rows.isEmpty {
                next = URLSafety.setting([("page", String(page + 1))], in: first)
            } else {
                next = nil
            }
            try accumulator.checkAdvancing(to: next)
            page += 1
        }
        let countsAgree = total.map { $0 == accumulator.count } ?? !endedEarly
        return ListingPass(items: accumulator.items, complete: countsAgree && !accumulator.changedWhilePaging,
                           changedWhilePaging: accumulator.changedWhilePaging, pages: page - 1)
    }

    private func listedPost(_ value: JSONValue, position: Int, collection: String) throws -> ListedItem {
        guard case .object(let fields) = value else {
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)", reason: "listed item is \(value.typeName), not an object")
        }
        let id: String
        switch fields["id"] {
        case let number? where (number.exactInteger ?? -1) >= 0: id = String(number.exactInteger!)
        case nil:
            throw UpstreamError.malformedItem(collection: collection, item: "#\(position)", reason: "field 'id' is missing")
        case let other?:
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)",
                reason: "field 'id' is \(other.typeName), not a non-negative integer")
        }
        let version = try listedVersion(fields["modified_gmt"], collection: collection, item: id, field: "modified_gmt",
                                        redact: session.credentials.redact)
        return ListedItem(id: ItemID(id), lastModified: version, etag: Self.tag(status: fields["status"]?.stringValue,
                                                                               date: fields["date_gmt"]?.stringValue, modified: version))
    }

    /// The listing tag of a post: `listed-future` while scheduled; `listed-scheduled` when
    /// published and dated after its last save (its cron publication kept `modified_gmt`); nil
    /// for any other.
    static func tag(status: String?, date: String?, modified: Timestamp) -> String? {
        switch status {
        case "future": return ListedItem.listingTagPrefix + "future"
        case "publish":
            guard let date = date.flatMap(Timestamp.init), modified < date else { return nil }
            return ListedItem.listingTagPrefix + "scheduled"
        default: return nil
        }
    }

    /// The URL of REST route `segments` (percent-encoded) with `query`, under the discovered root.
    private func endpoint(_ segments: [String], query: [(String, String)]) async throws -> URL {
        let route = "/" + segments.map(URLSafety.encodePathSegment).joined(separator: "/")
        switch try await discoverRoot() {
        case .pretty(let root):
            let url = URL(string: root.absoluteString + route.dropFirst()) ?? root
            return query.isEmpty ? url : URLSafety.setting(query, in: url)
        case .plain(let base):
            return URLSafety.setting([("rest_route", route)] + query, in: base)
        }
    }

    /// Where the REST API lives: a root URL ending in `/` that routes are appended to, or a page
    /// that takes the route in `?rest_route=`.
    enum Root: Sendable, Equatable { case pretty(URL), plain(URL) }

    /// The REST root as discovered (once per upstream), for tests.
    var discoveredRoot: Root? { root.value }

    /// Finds the REST root once, as WordPress clients do:
    /// 1. `<site>/wp-json/` when it answers with the API index (`namespaces` or `routes`);
    /// 2. else the home page's `Link: <root>; rel="https://api.w.org/"` header (same origin only,
    ///    so credentials never leave the site): a `?rest_route=` link is used as is, another root
    ///    when it answers with the API index (e.g. `/index.php/wp-json/` on PATHINFO permalinks);
    /// 3. else `<site>/?rest_route=` (plain permalinks).
    /// A 4xx, a body that is not the index, or a request failing after its retries moves on to
    /// the next step; a 401 at `wp-json/` ends the search (the API is there, and refuses the
    /// credentials, or wants some).
    private func discoverRoot() async throws -> Root {
        if let known = root.value { return known }
        let pretty = URL(string: site.absoluteString + "/wp-json/") ?? site
        var found: Root = .plain(URL(string: site.absoluteString + "/") ?? site)
        if try await isIndex(pretty, refusing: [401]) {
            found = .pretty(pretty)
        } else if let advertised = try await advertisedRoot() {
            switch advertised {
            case .plain: found = advertised
            case .pretty(let url): if url != pretty, try await isIndex(url) { found = advertised }
            }
        }
        root.value = found
        return found
    }

    /// Whether `url` answers 200 with the REST API index; an answer in `refusing` is thrown.
    private func isIndex(_ url: URL, refusing: Set<Int> = []) async throws -> Bool {
        let result: HTTPResult
        do {
            result = try await session.get(url, acceptStatuses: Set(400..<500).subtracting(refusing))
        } catch UpstreamError.http(let status, _, _) where !refusing.contains(status) {
            return false
        }
        guard result.status == 200, case .object(let index)? = try? JSONValue.parse(result.body) else { return false }
        return index["namespaces"] != nil || index["routes"] != nil
    }

    /// The root the home page advertises in its `Link: <...>; rel="https://api.w.org/"` header.
    private func advertisedRoot() async throws -> Root? {
        let home = URL(string: site.absoluteString + "/") ?? site
        let result: HTTPResult
        do {
            result = try await session.get(home, acceptStatuses: Set(400..<500))
        } catch UpstreamError.http {
            return nil
        }
        guard let target = LinkHeader.target(in: result.headerValues("Link"), relation: "https://api.w.org/"),
              let url = URL(string: target, relativeTo: home)?.absoluteURL,
              Origin(url) == session.origin,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return nil }
        if components.queryItems?.contains(where: { $0.name == "rest_route" }) == true {
            components.query = nil
            components.fragment = nil
            return components.url.map(Root.plain)
        }
        components.fragment = nil
        if !components.path.hasSuffix("/") { components.path += "/" }
        return components.url.map(Root.pretty)
    }

    private final class RootBox: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Root?
        var value: Root? {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }
}
