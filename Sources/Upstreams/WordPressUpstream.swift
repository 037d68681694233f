import Foundation

/// The `wordpress` upstream: REST API `wp/v2` posts, pages or any post type of one site.
///
/// Spec: `wordpress:<site URL>`. Collections: post type REST bases (`posts` by default, `pages`,
/// custom types), matching `^[a-z0-9_-]+$`. Credentials (optional): `basicEnv` with an application
/// password, or a bearer token.
///
/// The REST root is discovered once: `<site>/wp-json/`, else `<site>/?rest_route=/` (sites without
/// pretty permalinks). Every listing is a full id listing (`_fields=id,modified_gmt`, 100 per
/// page, ordered by `modified` ascending), paged by `Link rel="next"` or `X-WP-TotalPages`, and
/// cross-checked against `X-WP-Total`. With credentials it covers the statuses
/// `publish,future,draft,pending,private`, and a second listing of `status=trash` reports trashed
/// ids in ``Listing/deleted``. The version is `modified_gmt` (UTC, no offset).
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

    public func list(collection: String, since: Timestamp?, cached: [ItemID: CachedVersion]) async throws -> Listing {
        try WordPressUpstream.validate(collection)
        let before = session.statistics.requests
        let authenticated = session.credentials.isConfigured
        let statuses = authenticated ? "publish,future,draft,pending,private" : nil
        let (items, complete) = try await listAll(collection: collection, status: statuses)
        var deleted: [ItemID] = []
        if authenticated {
            let (trashed, _) = try await listAll(collection: collection, status: "trash")
            let live = Set(items.map(\.id))
            deleted = trashed.map(\.id).filter { !live.contains($0) }
        }
        return Listing(items: items, isComplete: complete, deleted: deleted,
                       requests: session.statistics.requests - before)
    }

    public func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        try WordPressUpstream.validate(collection)
        let context = session.credentials.isConfigured ? "edit" : "view"
        let url = try await endpoint(["wp", "v2", collection, item.id.description], query: [("context", context)])
        let result = try await session.get(url, ifNoneMatch: cachedETag)
        if result.status == 304 { return .notModified }
        guard case .object? = try? JSONValue.parse(result.body) else {
            throw UpstreamError.malformedItem(collection: collection, item: item.id.description, reason: "body is not a JSON object")
        }
        return .body(result.body, etag: result.header("ETag"))
    }

    /// Lists every item of `collection` with the given `status` filter (nil: the default).
    private func listAll(collection: String, status: String?) async throws -> ([ListedItem], Bool) {
        var query = [("per_page", String(pageSize)), ("page", "1"), ("orderby", "modified"), ("order", "asc"),
                     ("_fields", "id,modified_gmt")]
        if let status { query.append(("status", status)) }
        let first = try await endpoint(["wp", "v2", collection], query: query)
        var accumulator = ListingAccumulator(collection: collection)
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
                                             message: "Bad Request" + (result.errorCode.map { " (\($0))" } ?? ""))
                }
                endedEarly = true
                break
            }
            total = result.header("X-WP-Total").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? total
            totalPages = result.header("X-WP-TotalPages").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? totalPages
            guard case .array(let rows) = try parseListingBody(result, collection: collection) else {
                throw UpstreamError.malformedListing(
                    collection: collection, reason: "response from \(URLSafety.redact(url)) is not a JSON array")
            }
            for (index, row) in rows.enumerated() {
                try accumulator.add(listedPost(row, position: (page - 1) * pageSize + index, collection: collection))
            }
            if let link = LinkHeader.target(in: result.headerValues("Link"), relation: "next"),
               let resolved = URL(string: link, relativeTo: url)?.absoluteURL {
                next = resolved
            } else if let totalPages, page < totalPages, !rows.isEmpty {
                next = URLSafety.setting([("page", String(page + 1))], in: first)
            } else {
                next = nil
            }
            page += 1
        }
        let countsAgree = total.map { $0 == accumulator.count } ?? !endedEarly
        return (accumulator.items, countsAgree)
    }

    private func listedPost(_ value: JSONValue, position: Int, collection: String) throws -> ListedItem {
        guard case .object(let fields) = value else {
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)", reason: "listed item is \(value.typeName), not an object")
        }
        let id: String
        switch fields["id"] {
        case .integer(let number)? where number >= 0: id = String(number)
        case nil:
            throw UpstreamError.malformedItem(collection: collection, item: "#\(position)", reason: "field 'id' is missing")
        case let other?:
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)",
                reason: "field 'id' is \(other.typeName), not a non-negative integer")
        }
        let version = try listedVersion(fields["modified_gmt"], collection: collection, item: id, field: "modified_gmt")
        return ListedItem(id: ItemID(id), lastModified: version)
    }

    /// The URL of REST route `segments` (percent-encoded) with `query`, under the discovered root.
    private func endpoint(_ segments: [String], query: [(String, String)]) async throws -> URL {
        let route = "/" + segments.map(URLSafety.encodePathSegment).joined(separator: "/")
        switch try await discoverRoot() {
        case .pretty(let root):
            let url = URL(string: root.absoluteString + route.dropFirst()) ?? root
            return query.isEmpty ? url : URLSafety.setting(query, in: url)
        case .plain:
            return URLSafety.setting([("rest_route", route)] + query, in: URL(string: site.absoluteString + "/") ?? site)
        }
    }

    enum Root: Sendable { case pretty(URL), plain }

    /// Finds the REST root once: `<site>/wp-json/` when it answers with the API index, else
    /// `<site>/?rest_route=`.
    private func discoverRoot() async throws -> Root {
        if let known = root.value { return known }
        let pretty = URL(string: site.absoluteString + "/wp-json/") ?? site
        let result = try await session.get(pretty, acceptStatuses: Set(400..<500))
        let found: Root
        if result.status == 200, case .object(let index)? = try? JSONValue.parse(result.body),
           index["namespaces"] != nil || index["routes"] != nil {
            found = .pretty(pretty)
        } else {
            found = .plain
        }
        root.value = found
        return found
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
