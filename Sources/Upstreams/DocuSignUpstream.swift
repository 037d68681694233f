import Foundation

/// The `docusign` upstream: eSignature REST API v2.1 templates of one account.
///
/// Spec: `docusign:<account base URL>`, e.g.
/// `docusign:https://demo.docusign.net/restapi/v2.1/accounts/<accountId>`. Collection: `templates`.
/// Credentials: a bearer token (`tokenEnv` or `tokenCommand`).
///
/// Every listing is a full listing (`GET <base>/templates?order_by=modified&order=asc`, 100 per
/// page): it carries only ids and dates, so it stays cheap, and it is the only way to see templates
/// that were deleted or purged. `since` is therefore not used. When the first page gives
/// `totalSetSize` and its `nextUri` is the same query at the next `start_position`, the other pages
/// are requested by position, up to 8 at once (`jobs`), and added in order; otherwise `nextUri` is
/// followed page by page. A template edited while the pages are fetched is listed twice (it moves
/// to the end): the newer version is kept. The listing is complete only when every page arrived,
/// the number of distinct ids equals `totalSetSize` and no template changed while paging.
public struct DocuSignUpstream: Upstream {
    public let spec: String
    public let collections: [String]
    /// Templates per listing page.
    public let pageSize: Int
    /// Listing pages requested at once after the first (the `jobs` setting, at most 8).
    let parallelPages: Int
    private let base: URL
    private let session: HTTPSession

    /// - Parameters:
    ///   - settings: HTTP tunables (tests shorten the retry delays).
    ///   - environment: where `tokenEnv` variables are read.
    public init(
        _ configuration: UpstreamConfiguration, settings: HTTPSettings = HTTPSettings(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        let example = "https://demo.docusign.net/restapi/v2.1/accounts/<accountId>"
        var location = configuration.location
        while location.hasSuffix("/") { location.removeLast() }
        base = try URLSafety.specURL(location, kind: "docusign", example: example)
        spec = "docusign:" + location
        collections = configuration.collections.isEmpty ? ["templates"] : configuration.collections
        for collection in collections where collection != "templates" {
            throw UpstreamError.invalidConfiguration(
                "docusign upstream has only the collection 'templates', not '\(collection)'")
        }
        let credentials = try Credentials(options: configuration.options, environment: environment)
        if case .basicEnv = credentials.source {
            throw UpstreamError.invalidConfiguration("docusign upstream needs a bearer token: use tokenEnv or tokenCommand")
        }
        pageSize = try positiveOption(configuration.options, "pageSize", default: 100, max: 2000)
        parallelPages = max(1, min(configuration.jobs, 8))
        session = try HTTPSession(base: base, credentials: credentials, settings: settings, takesBasic: false)
    }

    public var statistics: HTTPStatistics { session.statistics }
    public func shutdown() async { await session.shutdown() }

    public func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        // A listing error may quote what the server sent (a next page's URL, a field).
        try await session.redactingErrors { try await listing(collection: collection, since: since, cached: cached) }
    }

    private func listing(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        try checkCollection(collection)
        let before = session.statistics.requests
        // A template deleted and another created while the pages are read leave the total as it
        // was, and still shift a row past a page boundary: the deletions a listing implies are
        // confirmed (``confirmingDeletions(_:cached:collection:exists:again:)``).
        let pass = try await confirmingDeletions(try await listPass(collection: collection), cached: cached, collection: collection,
                                                 exists: { id in try await exists(id) }) {
            try await listPass(collection: collection)
        }
        return Listing(pass, requests: session.statistics.requests - before)
    }

    /// One reading of the listing, every page.
    private func listPass(collection: String) async throws -> ListingPass {
        var accumulator = ListingAccumulator(collection: collection, maxItems: session.settings.maxListedItems)
        // Page URLs are written as DocuSign writes nextUri: start_position first.
        func pageURL(_ start: Int) -> URL {
            URLSafety.setting(
                [("start_position", String(start)), ("count", String(pageSize)), ("order_by", "modified"), ("order", "asc")],
                in: URLSafety.appending(["templates"], to: base))
        }
        let templatesPath = URLSafety.appending(["templates"], to: base).path
        let first = pageURL(0)
        var next: URL? = first
        var visited: Set<String> = []
        var total: Int?
        var listedRows = 0
        /// Adds a page's templates; returns the next page's URL, nil after the last page.
        func consume(_ page: Page) throws -> URL? {
            if let pageTotal = page.total { accumulator.note(total: pageTotal) }
            total = page.total ?? total
            try accumulator.add(page: page.templates.enumerated().map { index, template in
                try listedTemplate(template, position: (page.startPosition ?? listedRows) + index, collection: collection)
            })
            listedRows += page.templates.count
            let size = page.resultSetSize ?? page.templates.count
            let start = page.startPosition ?? listedRows - page.templates.count
            if size == 0 || page.templates.isEmpty { return nil }
            // A nextUri that leads elsewhere than the templates (written against another base
            // than the account's, which DocuSign does not document) gives way to the position.
            if let uri = page.nextUri { return uri.path.hasPrefix(templatesPath) ? uri : pageURL(start + size) }
            if let total, start + size < total {
                return pageURL(start + size)
            }
            return nil
        }
        while let url = next {
            guard visited.insert(url.absoluteString).inserted else {
                throw UpstreamError.malformedListing(
                    collection: collection, reason: "paging loops back to \(URLSafety.redact(url))")
            }
            let page = try await self.page(url, collection: collection)
            next = try consume(page)
            // The first page gives the total; when its nextUri is our own query for the next
            // position, the remaining pages' URLs are known and fetched several at a time (each is
            // a round trip to DocuSign), then added in order. Any other nextUri is followed.
            if url == first, let following = next, let total, parallelPages > 1,
               let start = page.startPosition, page.templates.count == pageSize,
               sameQuery(following, pageURL(start + pageSize)) {
                // Made as they are asked for, and ended by the first page that is empty or brings
                // nothing new: a total upstream overstates (10^15) is no endless list of requests.
                var urls: [URL] = []
                let count = (total - start - 1) / pageSize
                next = nil
                try await pages(count: max(0, count), url: { index in
                    let url = pageURL(start + pageSize * (index + 1))
                    urls.append(url)
                    visited.insert(url.absoluteString)
                    return url
                }, collection: collection) { page in
                    next = try consume(page)
                    try accumulator.checkAdvancing(to: next)
                    return next != nil
                }
                if let following = next,
                   visited.contains(following.absoluteString) || urls.contains(where: { sameQuery($0, following) }) {
                    next = nil
                }
            }
            try accumulator.checkAdvancing(to: next)
        }
        let complete = (total.map { $0 == accumulator.count } ?? true) && !accumulator.changedWhilePaging
        return ListingPass(items: accumulator.items, complete: complete, changedWhilePaging: accumulator.changedWhilePaging,
                           pages: visited.count)
    }

    /// True when both URLs name the same origin, path and query items (in any order).
    private func sameQuery(_ a: URL, _ b: URL) -> Bool {
        guard let x = URLComponents(url: a, resolvingAgainstBaseURL: true),
              let y = URLComponents(url: b, resolvingAgainstBaseURL: true) else { return false }
        func items(_ c: URLComponents) -> [String] { (c.queryItems ?? []).map { "\($0.name)=\($0.value ?? "")" }.sorted() }
        return x.scheme == y.scheme && x.host == y.host && x.port == y.port && x.path == y.path && items(x) == items(y)
    }

    /// One listing page, parsed.
    private struct Page: Sendable {
        var total: Int?
        var resultSetSize: Int?
        var startPosition: Int?
        var templates: [JSONValue]
        var nextUri: URL?
    }

    private func page(_ url: URL, collection: String) async throws -> Page {
        let result = try await session.get(url)
        let json = try parseListingBody(result, collection: collection)
        guard case .object(let fields) = json else {
            throw UpstreamError.malformedListing(collection: collection, reason: "response is not a JSON object")
        }
        var page = Page(templates: [])
        page.total = try count(fields["totalSetSize"], "totalSetSize", collection)
        page.resultSetSize = try count(fields["resultSetSize"], "resultSetSize", collection)
        page.startPosition = try count(fields["startPosition"], "startPosition", collection)
        switch fields["envelopeTemplates"] {
        case nil, .null?: break
        case .array(let array)?: page.templates = array
        case let other?:
            throw UpstreamError.malformedListing(
                collection: collection, reason: "'envelopeTemplates' is \(other.typeName), not an array")
        }
        if case .string(let uri)? = fields["nextUri"], !uri.isEmpty {
            guard let resolved = URL(string: uri, relativeTo: base)?.absoluteURL else {
                throw UpstreamError.malformedListing(collection: collection, reason: "nextUri is not a URL")
            }
            page.nextUri = resolved
        }
        return page
    }

    /// Fetches `urls` with at most ``parallelPages`` requests at once and hands the pages to
    /// `consume` in order (a page that arrives early waits for the ones before it).
    ///
    /// No more requests are in flight than the rate limits say remain (the burst limit allows
    /// 30 requests in 30 s): at 0, one request at a time goes out and waits for the reset.
    /// Reads `count` pages, `url(index)` giving each (asked for in order, as they are launched),
    /// several at once, and hands them to `consume` in order until it returns false: no page is
    /// launched after that, and those in flight are left unread.
    private func pages(count: Int, url: (Int) -> URL, collection: String, consume: (Page) throws -> Bool) async throws {
        try await withThrowingTaskGroup(of: (Int, Page).self) { group in
            var launched = 0, consumed = 0, inFlight = 0
            var arrived: [Int: Page] = [:]
            var going = true
            func launchWhileAllowed() {
                let allowed = min(parallelPages, max(1, session.requestBudget ?? parallelPages))
                while going, launched < count, launched - consumed < parallelPages, inFlight < allowed {
                    let index = launched
                    let pageURL = url(index)
                    group.addTask { (index, try await self.page(pageURL, collection: collection)) }
                    launched += 1
                    inFlight += 1
                }
            }
            launchWhileAllowed()
            while let (index, page) = try await group.next() {
                inFlight -= 1
                guard going else { continue }
                arrived[index] = page
                while going, let ready = arrived.removeValue(forKey: consumed) {
                    going = try consume(ready)
                    consumed += 1
                }
                launchWhileAllowed()
            }
        }
    }

    public func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        try checkCollection(collection)
        // The template's tabs and documents are asked for: DocuSign names them among the
        // attributes it adds on request.
        let url = URLSafety.setting([("include", "documents,tabs")],
                                    in: URLSafety.appending(["templates", item.id.description], to: base))
        return try await session.downloadItem(url, collection: collection, item: item, cachedValidator: cachedETag,
                                              requireObject: true, versionField: "lastModified", goneCodes: Self.unknownTemplateCodes)
    }

    public func version(ofBody body: Data) -> Timestamp? { bodyVersion(of: body, field: "lastModified") }

    /// Whether the template `id` still exists (a 404, or a 400 `TEMPLATE_ID_INVALID`, says it does not).
    private func exists(_ id: ItemID) async throws -> Bool {
        try await session.answers(URLSafety.appending(["templates", id.description], to: base), goneCodes: Self.unknownTemplateCodes)
    }

    /// The error codes DocuSign answers a template id it does not know with: its API documents a
    /// 400 for it, `TEMPLATE_ID_INVALID` (a 404 is taken as gone too).
    static let unknownTemplateCodes: Set<String> = ["TEMPLATE_ID_INVALID"]

    private func checkCollection(_ collection: String) throws {
        guard collection == "templates" else {
            throw UpstreamError.invalidConfiguration("docusign upstream has no collection '\(collection)'")
        }
    }

    private func listedTemplate(_ value: JSONValue, position: Int, collection: String) throws -> ListedItem {
        guard case .object(let fields) = value else {
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)", reason: "listed template is \(value.typeName), not an object")
        }
        guard let idValue = fields["templateId"] else {
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)", reason: "field 'templateId' is missing")
        }
        guard let id = idValue.stringValue, !id.isEmpty else {
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)",
                reason: "field 'templateId' is \(idValue.typeName == "a string" ? "empty" : idValue.typeName + ", not a string")")
        }
        let version = try listedVersion(
            fields["lastModified"], collection: collection, item: "\(id) (#\(position))", field: "lastModified",
            redact: session.credentials.redact)
        return ListedItem(id: ItemID(id), lastModified: version)
    }

    /// DocuSign counts are strings ("100"); numbers are accepted too.
    /// The largest count a listing may give (2^40, about 10^12 templates): a larger one is
    /// malformed, and positions computed from it (`startPosition` + rows) must not overflow.
    static let largestCount = 1 << 40

    private func count(_ value: JSONValue?, _ field: String, _ collection: String) throws -> Int? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let number = Int(text), number >= 0, number <= Self.largestCount else {
                throw UpstreamError.malformedListing(collection: collection, reason: "'\(field)' is not a count: '\(CQuoting.excerpt(text, limit: 32, redact: session.credentials.redact))'")
            }
            return number
        case let number? where (0...Int64(Self.largestCount)).contains(number.exactInteger ?? -1): return Int(number.exactInteger!)
        case let other? where other.exactInteger != nil:
            throw UpstreamError.malformedListing(collection: collection, reason: "'\(field)' is not a count: \(other.exactInteger!)")
        case let other?:
            throw UpstreamError.malformedListing(collection: collection, reason: "'\(field)' is \(other.typeName), not a count")
        }
    }
}

/// Reads a positive integer option.
func positiveOption(_ options: [String: String], _ name: String, default value: Int, max limit: Int) throws -> Int {
    guard let text = options[name] else { return value }
    guard let number = Int(text), number >= 1, number <= limit else {
        throw UpstreamError.invalidConfiguration("option \(name) must be a whole number from 1 to \(limit), got '\(text)'")
    }
    return number
}
