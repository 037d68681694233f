import Foundation

/// The `rest` upstream: a generic JSON collection described by options.
///
/// Spec: `rest:<list URL>`. Collection: `items` (the name only labels the mirror folder).
/// Options:
/// - `itemsPath`: JSON pointer to the array of items in a listing page (default: the page is the array).
/// - `idField`, `modifiedField`: the id (string or integer) and version fields of an item
///   (defaults `id` and `lastModified`); a value starting with `/` is a JSON pointer into the item.
///   An item whose version is `null` is undated (``ListedItem/undated``); `modifiedField=none`
///   makes every item so, for a collection that dates none.
/// - `itemURL`: URL template with `{id}` for an item's body (id percent-encoded as a path
///   segment). Without it the listed object is the body (re-serialized with sorted keys).
///   `bodyPath`: a JSON pointer to the item in what `itemURL` answers (`/data` for JSON:API and
///   Strapi, whose responses wrap it); default the whole response.
/// - `paging`: `none` (default), `page` (`page`/`per_page`, until an empty page), `offset`
///   (`offset`/`limit`, until an empty page; the next offset counts the rows received, so a server
///   that caps `limit` skips nothing), `link` (`Link: rel="next"`),
///   `next-field:<JSON pointer>` (next page URL in the body; a link object's `href` too), or
///   `cursor:<JSON pointer>` (a token in the body, sent back as `cursorParam`, until it is null,
///   empty or missing). `pageSize` (default 100). With `page` and `offset`, a page that lists no
///   id not seen before is an error (the server ignores the paging parameters and would send the
///   same page forever).
/// - `pageParam`, `perPageParam`, `firstPage` (`page`, `per_page`, `1`), `offsetParam`,
///   `limitParam` (`offset`, `limit`), `cursorParam` (`cursor`): the query parameters of those
///   pagings, for servers that name them otherwise (Strapi's `pagination[page]`, Spring's `size`
///   and pages from 0).
/// - `sinceParam`: a query parameter taking the watermark. When set and `since` is given the
///   listing is incremental: `isComplete` is false and no deletions can be inferred.
public struct RestUpstream: Upstream {
    public enum Paging: Sendable, Equatable {
        case none, page, offset, link
        case nextField(String)
        case cursor(String)
    }

    /// The query parameters `page`, `offset` and `cursor` paging send (options `pageParam`,
    /// `perPageParam`, `firstPage`, `offsetParam`, `limitParam`, `cursorParam`).
    public struct PagingParameters: Sendable, Equatable {
        public var page = "page", perPage = "per_page", firstPage = 1
        public var offset = "offset", limit = "limit"
        public var cursor = "cursor"
    }

    public let spec: String
    public let collections: [String]
    public let paging: Paging
    public let pageSize: Int
    public let parameters: PagingParameters
    private let listURL: URL
    private let itemsPath: String
    private let idField: String
    /// The version field; nil for `modifiedField=none`.
    private let modifiedField: String?
    private let itemURL: String?
    private let bodyPath: String?
    /// Whether `bodyPath` was set at all: set empty, it keeps a JSON:API envelope on purpose.
    private let bodyPathSet: Bool
    private let sinceParam: String?
    /// Fields left out of the bodies the listing carries, before their content tag is taken: a
    /// field left out that changes does not make the item changed.
    private let ignoredFields: IgnoredFields
    private let session: HTTPSession
    /// Paging options set for another paging than the one configured: told with every listing.
    private let unusedOptions: [String]

    public init(
        _ configuration: UpstreamConfiguration, settings: HTTPSettings = HTTPSettings(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        let options = configuration.options
        let location = configuration.location
        listURL = try URLSafety.specURL(location, kind: "rest", example: "https://api.example.org/items")
        spec = "rest:" + location
        collections = configuration.collections.isEmpty ? ["items"] : configuration.collections
        // One URL lists one collection: a second name would mirror the same items again.
        guard collections.count == 1 else {
            throw UpstreamError.invalidConfiguration(
                "a rest upstream mirrors one collection (its URL's items), not \(collections.count) "
                    + "(\(collections.map { "'\($0)'" }.joined(separator: ", "))); clone each URL into a mirror of its own")
        }
        itemsPath = options["itemsPath"] ?? ""
        guard itemsPath.isEmpty || itemsPath.hasPrefix("/") else {
            throw UpstreamError.invalidConfiguration("option itemsPath must be a JSON pointer starting with '/', got '\(itemsPath)'")
        }
        idField = options["idField"] ?? "id"
        let modified = options["modifiedField"] ?? "lastModified"
        guard !idField.isEmpty, !modified.isEmpty else {
            throw UpstreamError.invalidConfiguration("options idField and modifiedField must not be empty")
        }
        modifiedField = modified == "none" ? nil : modified
        if var template = options["itemURL"] {
            // A path alone is on the listing's server.
            if template.hasPrefix("/"), !template.hasPrefix("//"), let scheme = listURL.scheme, let host = listURL.host {
                let port = listURL.port.map { ":\($0)" } ?? ""
                template = "\(scheme)://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host)\(port)" + template
            }
            guard template.contains("{id}") else {
                throw UpstreamError.invalidConfiguration("option itemURL must contain '{id}', got '\(URLSafety.redact(template))'")
            }
            _ = try URLSafety.specURL(template.replacingOccurrences(of: "{id}", with: "x"), kind: "rest",
                                      example: "https://api.example.org/items/{id}", option: "itemURL")
            itemURL = template
        } else {
            itemURL = nil
        }
        bodyPath = options["bodyPath"].flatMap { $0.isEmpty ? nil : $0 }
        bodyPathSet = options["bodyPath"] != nil
        ignoredFields = IgnoredFields(IgnoredFields.checked(configuration.ignoredFields).usable)
        if let bodyPath {
            guard bodyPath.hasPrefix("/") else {
                throw UpstreamError.invalidConfiguration("option bodyPath must be a JSON pointer starting with '/', got '\(bodyPath)'")
            }
            guard itemURL != nil else {
                throw UpstreamError.invalidConfiguration("option bodyPath points into itemURL's answers: set itemURL too")
            }
        }
        switch options["paging"] ?? "none" {
        case "none": paging = .none
        case "page": paging = .page
        case "offset": paging = .offset
        case "link": paging = .link
        case let value where value.hasPrefix("next-field:"):
            let pointer = String(value.dropFirst("next-field:".count))
            guard pointer.hasPrefix("/") else {
                throw UpstreamError.invalidConfiguration("paging next-field needs a JSON pointer: next-field:/links/next")
            }
            paging = .nextField(pointer)
        case let value where value.hasPrefix("cursor:"):
            let pointer = String(value.dropFirst("cursor:".count))
            guard pointer.hasPrefix("/") else {
                throw UpstreamError.invalidConfiguration("paging cursor needs a JSON pointer: cursor:/next_cursor")
            }
            paging = .cursor(pointer)
        case let value:
            throw UpstreamError.invalidConfiguration(
                "option paging must be none, page, offset, link, next-field:<JSON pointer> or cursor:<JSON pointer>, got '\(value)'")
        }
        pageSize = try positiveOption(options, "pageSize", default: 100, max: 100_000)
        var parameters = PagingParameters()
        for (key, path) in [("pageParam", \PagingParameters.page), ("perPageParam", \.perPage), ("offsetParam", \.offset),
                            ("limitParam", \.limit), ("cursorParam", \.cursor)] {
            guard let name = options[key] else { continue }
            guard !name.isEmpty, !name.contains(where: { "&=#".contains($0) || $0.isWhitespace }) else {
                throw UpstreamError.invalidConfiguration("option \(key) must be a query parameter name (no '&', '=', '#' or spaces), got '\(name)'")
            }
            parameters[keyPath: path] = name
        }
        if let first = options["firstPage"] {
            guard first == "0" || first == "1" else {
                throw UpstreamError.invalidConfiguration("option firstPage must be 0 or 1 (the number of the first page), got '\(first)'")
            }
            parameters.firstPage = Int(first)!
        }
        self.parameters = parameters
        // Set for another paging (a `firstPage` left from `paging=page`): unused, and said so.
        let readers: [String: [String]] = [
            "pageParam": ["page"], "perPageParam": ["page"], "firstPage": ["page"], "offsetParam": ["offset"],
            "limitParam": ["offset"], "cursorParam": ["cursor"], "pageSize": ["page", "offset"],
        ]
        let reading: String? = switch paging {
        case .page: "page"
        case .offset: "offset"
        case .cursor: "cursor"
        case .none, .link, .nextField: nil
        }
        unusedOptions = readers.keys.sorted().filter { options[$0] != nil && !readers[$0]!.contains { $0 == reading } }.map { key in
            "option \(key) is unused with paging=\(options["paging"] ?? "none") (\(readers[key]!.joined(separator: " or ")) paging reads it)"
        }
        sinceParam = options["sinceParam"].flatMap { $0.isEmpty ? nil : $0 }
        if modifiedField == nil, let sinceParam {
            throw UpstreamError.invalidConfiguration(
                "option sinceParam (\(sinceParam)) needs dated items: with modifiedField=none every listing is whole")
        }
        session = try HTTPSession(
            base: listURL, credentials: try Credentials(options: options, environment: environment), settings: settings)
    }

    public var statistics: HTTPStatistics { session.statistics }
    public func shutdown() async { await session.shutdown() }

    public func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        // A listing error may quote what the server sent (a next page's URL, a field).
        try await session.redactingErrors { try await listing(collection: collection, since: since, cached: cached) }
    }

    private func listing(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        let before = session.statistics.requests
        var base = listURL
        var incremental = false
        if let sinceParam, let since {
            base = URLSafety.setting([(sinceParam, since.raw)], in: base)
            incremental = true
        }
        // Paging gives no total to check: the deletions a listing over several pages implies
        // are confirmed (``confirmingDeletions(_:cached:collection:exists:again:)``), and an
        // incremental one is read twice (``confirmingIncremental(_:again:)``).
        let first = try await listPages(from: base, collection: collection, incremental: incremental)
        // The versions the items asked for at their itemURL gave (``probe(_:)``).
        var served: [ItemID: Timestamp] = [:]
        var pass = incremental
            ? try await confirmingIncremental(first) { try await listPages(from: base, collection: collection, incremental: true) }
            : try await confirmingDeletions(first, cached: cached, collection: collection,
                                            exists: itemURL == nil ? nil : { id in
                                                let (answers, version) = try await probe(id)
                                                served[id] = version
                                                return answers
                                            }, answeringIsLive: true) {
                try await listPages(from: base, collection: collection, incremental: incremental)
            }
        // An item kept because its itemURL serves it though no reading lists it is listed at the
        // version it served, so that a newer one is downloaded rather than passed over.
        if !pass.kept.isEmpty {
            let versions = try cached.loaded()
            for position in pass.kept {
                let id = versions.id(at: position)
                if let version = served[id] { pass.items.append(ListedItem(id: id, lastModified: version)) }
            }
            pass.kept.removeAll { served[versions.id(at: $0)] != nil }
        }
        var listing = Listing(pass, requests: session.statistics.requests - before)
        listing.incremental = incremental
        listing.warnings = unusedOptions.map { "\(collection): \($0)" } + first.warnings
        return listing
    }

    /// Every page of the listing at `base`, in order.
    private func listPages(from base: URL, collection: String, incremental: Bool) async throws -> ListingPass {
        var accumulator = ListingAccumulator(collection: collection, maxItems: session.settings.maxListedItems)
        var next: URL? = firstPage(base)
        var pageNumber = 1
        // Pages that held rows (the empty one that ends `page` or `offset` paging is not one).
        var pagesWithRows = 0
        var offset = 0
        /// Rows received on earlier pages: an item's position in the listing is this plus its index.
        var received = 0
        var visited: Set<String> = []
        var upstreamTime: Timestamp?
        /// The `next-field` value last followed when it was a bare word, with its pointer.
        var bareNext: (pointer: String, text: String)?
        /// The cursor `cursor` paging sent last.
        var lastCursor: String?
        var firstResponse: (result: HTTPResult, json: JSONValue)?
        let check = RestPagingCheck(paging: paging, itemsPath: itemsPath, redact: session.credentials.redact)
        /// The totals the pages announced (`count`, `X-Total-Count`...), one per page that had one.
        var announced: [Int64] = []
        while let url = next {
            guard visited.insert(url.absoluteString).inserted else {
                // A server that does not read the cursor where it is sent answers the first page
                // again, with the same cursor.
                let ignored = if case .cursor = paging, let lastCursor {
                    " (the server gave the cursor '\(CQuoting.excerpt(lastCursor, limit: 64, redact: session.credentials.redact))' again: "
                        + "does it read it from the query parameter '\(parameters.cursor)'? cursorParam names it)"
                } else { "" }
                throw UpstreamError.malformedListing(
                    collection: collection, reason: "paging loops back to \(URLSafety.redact(url))" + cursorHint(bareNext) + ignored)
            }
            let result: HTTPResult
            do {
                result = try await session.get(url)
            } catch UpstreamError.http(let status, let shown, let message) where status == 400 || status == 404 {
                let failure = UpstreamError.http(status: status, url: shown, message: message)
                if bareNext != nil {
                    throw UpstreamError.malformedListing(collection: collection, reason: failure.description + cursorHint(bareNext))
                }
                // Django REST Framework answers 404 past its last page, where others send an empty one.
                guard pageNumber > 1, paging == .page || paging == .offset else { throw failure }
                // Its pages say how many items there are (`count`): once that many came, and every
                // page said the same (none added or deleted while they were read, which shifts
                // the rows), a 404 for the page after them is the end, not a failure.
                let totals = Set(announced)
                if status == 404, announced.count == pageNumber - 1, totals == [Int64(received)], received == accumulator.items.count {
                    break
                }
                let why = announced.isEmpty ? "its pages give no total (as count) to tell the end by"
                    : totals.count > 1 ? "the total its pages give changed while they were read (\(announced.map(String.init).joined(separator: ", "))): "
                        + "items were added or deleted meanwhile, and the next run lists again"
                    : "its pages say there are \(announced[0]) items, and \(received) came"
                throw UpstreamError.malformedListing(
                    collection: collection,
                    reason: failure.description + " (past its last page? A server that answers \(status) there, as Django REST Framework "
                        + "does, is paged with paging=\(paging == .page ? "page" : "offset") until as many items came as its pages "
                        + "say there are, but \(why); if its pages link the next one, paging=next-field:<JSON pointer to that link>, as "
                        + "/next, follows them instead)")
            }
            if pageNumber == 1 { upstreamTime = result.header("Date").flatMap(HTTPDate.parse) }
            let json = try parseListingBody(result, collection: collection)
            if pageNumber == 1 { firstResponse = (result, json) }
            if paging == .page || paging == .offset, let total = check.announcedTotal(result, json: json)?.value { announced.append(total) }
            // An empty array written as `null` (Go's nil slice), or left out past the first page
            // (Go's `omitempty`): a page without rows, which ends `page` and `offset` paging.
            let found: JSONValue
            switch json.at(pointer: itemsPath) {
            case .null? where !itemsPath.isEmpty: found = .array([])
            case nil where pageNumber > 1 && !itemsPath.isEmpty: found = .array([])
            case let value?: found = value
            case nil:
                // What the page holds instead: an error object (`{"error": ...}`), another envelope.
                throw UpstreamError.malformedListing(
                    collection: collection,
                    reason: "no value at itemsPath '\(itemsPath)' in \(URLSafety.redact(url))" + (json.quotedKeys.map { " (the response has \($0))" } ?? ""))
            }
            guard case .array(let rows) = found else {
                throw UpstreamError.malformedListing(
                    collection: collection,
                    reason: itemsPath.isEmpty
                        ? "the response is \(found.typeName), not an array of items: set itemsPath to the JSON pointer of the array (as /data/items)"
                            + (found.quotedKeys.map { "; it has \($0)" } ?? "")
                        : "value at itemsPath '\(itemsPath)' is \(found.typeName), not an array")
            }
            let progressed = try accumulator.add(page: rows.enumerated().map { index, row in
                try listedItem(row, position: received + index, collection: collection)
            })
            received += rows.count
            if !rows.isEmpty { pagesWithRows += 1 }
            // A server that ignores `page` or `offset` answers every page with the first one, so the
            // listing would never reach an empty page: a page with nothing new (no new id, no newer
            // version) ends it.
            if !rows.isEmpty, !progressed, paging == .page || paging == .offset {
                throw UpstreamError.malformedListing(
                    collection: collection,
                    reason: "page \(pageNumber) repeats the items of earlier pages: "
                        + "does the server support paging=\(paging == .page ? "page" : "offset"), with the query parameters "
                        + (paging == .page ? "'\(parameters.page)' and '\(parameters.perPage)' (pageParam, perPageParam)"
                                           : "'\(parameters.offset)' and '\(parameters.limit)' (offsetParam, limitParam)")
                        + "? (Or items changed upstream while the pages were read, shifting them: then the next run gets through.)")
            }
            switch paging {
            case .none:
                next = nil
            case .page:
                next = rows.isEmpty ? nil : URLSafety.setting(
                    [(parameters.page, String(parameters.firstPage + pageNumber)), (parameters.perPage, String(pageSize))], in: base)
            case .offset:
                offset += rows.count
                next = rows.isEmpty ? nil : URLSafety.setting([(parameters.offset, String(offset)), (parameters.limit, String(pageSize))], in: base)
            case .link:
                // Relative links resolve against where the page came from (after redirects).
                next = LinkHeader.target(in: result.headerValues("Link"), relation: "next")
                    .flatMap { URL(string: $0, relativeTo: result.finalURL)?.absoluteURL }
            case .nextField(let pointer):
                var link = json.at(pointer: pointer)
                // A link object (JSON:API 1.1, HAL): `{"href": "..."}`.
                if case .object(let fields)? = link, let href = fields["href"] { link = href }
                switch link {
                case .string(let text)? where !text.isEmpty:
                    // A bare word may be a relative link (`page2`) or a cursor token (`34`).
                    bareNext = text.contains(where: { "/?:".contains($0) }) ? nil : (pointer, text)
                    guard let resolved = URL(string: text, relativeTo: result.finalURL)?.absoluteURL else {
                        throw UpstreamError.malformedListing(collection: collection, reason: "next link at '\(pointer)' is not a URL")
                    }
                    next = resolved
                case nil, .null?, .string?:
                    next = nil
                case let other?:
                    throw UpstreamError.malformedListing(
                        collection: collection, reason: "next link at '\(pointer)' is \(other.typeName), not a string")
                }
            case .cursor(let pointer):
                switch json.at(pointer: pointer) {
                case .string(let token)? where !token.isEmpty:
                    next = URLSafety.setting([(parameters.cursor, token)], in: base)
                    lastCursor = token
                case let number? where number.integerText != nil:
                    next = URLSafety.setting([(parameters.cursor, number.integerText!)], in: base)
                    lastCursor = number.integerText
                case nil, .null?, .string?, .bool(false)?:
                    next = nil
                case let other?:
                    throw UpstreamError.malformedListing(
                        collection: collection, reason: "cursor at '\(pointer)' is \(other.typeName), not a string or integer")
                }
            }
            try accumulator.checkAdvancing(to: next)
            pageNumber += 1
        }
        var pass = ListingPass(items: accumulator.items, complete: !incremental && !accumulator.changedWhilePaging,
                               changedWhilePaging: accumulator.changedWhilePaging, pages: pagesWithRows, upstreamTime: upstreamTime)
        if let firstResponse {
            pass.warnings = check.warnings(first: firstResponse.result, json: firstResponse.json, pages: pageNumber - 1,
                                           listed: pass.items.count, complete: pass.complete)
            if itemURL != nil, !bodyPathSet, RestPagingCheck.isJSONAPI(firstResponse.json, itemsPath: itemsPath) {
                pass.warnings.append("the listing is a JSON:API document, whose item URLs answer {\"data\": <item>}: each item is "
                                     + "stored in that envelope; set bodyPath=/data to store the item itself ('git config "
                                     + "tidemark.bodyPath /data' in a mirror: its next fetch downloads every item again), or set it "
                                     + "empty to keep the envelope without this warning")
            }
            pass.warnings = pass.warnings.map { "\(collection): \($0)" }
        }
        return pass
    }

    /// What a listing that failed after following a bare word as a next link adds: that word may
    /// be a cursor token, which `cursor` paging sends back (resolved as a relative URL, a Slack
    /// style `next_cursor` named a page the server never linked).
    private func cursorHint(_ bare: (pointer: String, text: String)?) -> String {
        guard let bare else { return "" }
        return " (following '\(CQuoting.excerpt(bare.text, limit: 64, redact: session.credentials.redact))' at \(bare.pointer) as a relative link: if it is a "
            + "cursor token, set paging=cursor:\(bare.pointer), which sends it back as the query parameter cursorParam, default 'cursor')"
    }

    /// Whether the item `id` still answers at `itemURL` (a 404 or 410 says it is gone), with the
    /// version its body gives (`modifiedField`) when it does; one with no valid URL counts as
    /// answering (the listing is then read again).
    private func probe(_ id: ItemID) async throws -> (answers: Bool, version: Timestamp?) {
        guard let url = itemURL(for: id) else { return (true, nil) }
        guard let result = try await session.answering(url) else { return (false, nil) }
        guard let modifiedField else { return (true, nil) }
        var body = try? JSONValue.parse(result.body)
        if let bodyPath { body = body?.at(pointer: bodyPath) }
        return (true, body.flatMap { bodyVersion(of: $0, field: modifiedField) })
    }

    /// `itemURL` with `id` in place of `{id}`; nil without one, or when that is no valid URL.
    private func itemURL(for id: ItemID) -> URL? {
        itemURL.flatMap { URL(string: $0.replacingOccurrences(of: "{id}", with: URLSafety.encodePathSegment(id.description))) }
    }

    public func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        if let body = item.body { return .body(body, etag: item.etag) }
        guard itemURL != nil else {
            throw UpstreamError.invalidConfiguration("rest upstream without itemURL lists bodies; \(collection)/\(item.id) came without one")
        }
        guard let url = itemURL(for: item.id) else {
            throw UpstreamError.malformedItem(collection: collection, item: item.id.description, reason: "itemURL gives no valid URL")
        }
        return try await session.downloadItem(url, collection: collection, item: item, cachedValidator: cachedETag,
                                              requireObject: false, versionField: modifiedField,
                                              notJSONHint: ": does itemURL lead to the item's JSON?", bodyPath: bodyPath) { body in
            bodyProblem(body, for: item.id)
        }
    }

    /// Why a body `itemURL` served is not the item `id`'s: it names another id in `idField`, or
    /// it is a listing page (it holds an array at a non-empty `itemsPath`): an `itemURL` that
    /// leaves the id out of its path, or a server ignoring a query parameter, would otherwise
    /// store one wrong body for every item.
    private func bodyProblem(_ body: JSONValue, for id: ItemID) -> String? {
        if !itemsPath.isEmpty, case .array? = body.at(pointer: itemsPath) {
            return "served a listing (an array at itemsPath '\(itemsPath)'), not the item: does itemURL lead to the item's own URL?"
        }
        guard case .object(let fields) = body else { return nil }
        let served: String
        switch field(idField, of: fields, whole: body) {
        case .string(let text)?: served = text
        case let number? where number.integerText != nil: served = number.integerText!
        default: return nil
        }
        guard served != id.description else { return nil }
        return "served the item '\(CQuoting.quoted(served))' (its \(idField)), not '\(CQuoting.quoted(id.description))': "
            + "does itemURL put {id} where the item's own URL has it?"
    }

    public func version(ofBody body: Data) -> Timestamp? { modifiedField.flatMap { bodyVersion(of: body, field: $0) } }

    private func firstPage(_ base: URL) -> URL {
        switch paging {
        case .page: return URLSafety.setting([(parameters.page, String(parameters.firstPage)), (parameters.perPage, String(pageSize))], in: base)
        case .offset: return URLSafety.setting([(parameters.offset, "0"), (parameters.limit, String(pageSize))], in: base)
        case .none, .link, .nextField, .cursor: return base
        }
    }

    private func field(_ name: String, of fields: JSONObject, whole: JSONValue) -> JSONValue? {
        name.hasPrefix("/") ? whole.at(pointer: name) : fields[name]
    }

    private func listedItem(_ value: JSONValue, position: Int, collection: String) throws -> ListedItem {
        guard case .object(let fields) = value else {
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)", reason: "listed item is \(value.typeName), not an object")
        }
        let id: String
        switch field(idField, of: fields, whole: value) {
        case .string(let text)? where !text.isEmpty: id = text
        case let number? where number.integerText != nil: id = number.integerText!
        case nil:
            throw UpstreamError.malformedItem(collection: collection, item: "#\(position)",
                                              reason: "field '\(idField)' is missing" + Self.fieldHint("idField", fields))
        case .number(let text)?:
            throw UpstreamError.malformedItem(collection: collection, item: "#\(position)",
                                              reason: "field '\(idField)' is \(text.prefix(40)), not a whole number (nor a string)")
        case let other?:
            throw UpstreamError.malformedItem(
                collection: collection, item: "#\(position)",
                reason: "field '\(idField)' is \(other == .string("") ? "empty" : other.typeName + ", not a string or integer")")
        }
        // `null` (or `modifiedField=none`): undated, downloaded every run or told by its content tag.
        var version = ListedItem.undatedVersion
        var undated = true
        if let modifiedField {
            let listed = field(modifiedField, of: fields, whole: value)
            if listed != .null {
                version = try listedVersion(
                    listed, collection: collection, item: id, field: modifiedField,
                    missingHint: Self.fieldHint("modifiedField", fields, orNone: true), redact: session.credentials.redact)
                undated = false
            }
        }
        if itemURL != nil { return ListedItem(id: ItemID(id), lastModified: version, undated: undated) }
        let body = (ignoredFields.isEmpty ? value : ignoredFields.removing(from: value)).serialized()
        return ListedItem(id: ItemID(id), lastModified: version, etag: RestUpstream.contentTag(body), body: body, undated: undated)
    }

    /// What to do about a missing field: the option naming it, and the fields the item has.
    /// `orNone`: the option may also be `none` (items that carry no such field).
    static func fieldHint(_ option: String, _ fields: JSONObject, orNone: Bool = false) -> String {
        " (set --option \(option)=<field or /json/pointer> to the field that holds it"
            + (orNone ? ", or \(option)=none if items carry none" : "")
            + (JSONValue.object(fields).quotedKeys.map { "; the item has \($0))" } ?? "; the item has no fields)")
    }

    /// The ETag of an item the listing carries whole: `body-` and 16 hex digits of its bytes'
    /// 64-bit FNV-1a hash (keys sorted, so the same item always gives the same bytes). An edit
    /// that leaves `lastModified` as it was (a server that does not bump it, a hand-fixed row)
    /// still changes the tag, and the item is stored again; the date alone would miss it.
    static func contentTag(_ body: Data) -> String {
        let hash = body.withUnsafeBytes { bytes in
            bytes.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        }
        return "body-" + hash.hexDigits
    }
}
