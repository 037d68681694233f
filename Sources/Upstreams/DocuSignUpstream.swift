import Foundation

/// The `docusign` upstream: eSignature REST API v2.1 templates of one account.
///
/// Spec: `docusign:<account base URL>`, e.g.
/// `docusign:https://demo.docusign.net/restapi/v2.1/accounts/<accountId>`. Collection: `templates`.
/// Credentials: a bearer token (`tokenEnv` or `tokenCommand`).
///
/// Every listing is a full listing (`GET <base>/templates?order_by=modified&order=asc`, 100 per
/// page, following `nextUri`): it carries only ids and dates, so it stays cheap, and it is the only
/// way to see templates that were deleted or purged. `since` is therefore not used. The listing is
/// complete only when every page arrived and the number of distinct ids equals `totalSetSize`.
public struct DocuSignUpstream: Upstream {
    public let spec: String
    public let collections: [String]
    /// Templates per listing page.
    public let pageSize: Int
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
        session = try HTTPSession(base: base, credentials: credentials, settings: settings)
    }

    public var statistics: HTTPStatistics { session.statistics }
    public func shutdown() async { await session.shutdown() }

    public func list(collection: String, since: Timestamp?, cached: some CachedVersions) async throws -> Listing {
        try checkCollection(collection)
        let before = session.statistics.requests
        var accumulator = ListingAccumulator(collection: collection)
        let first = URLSafety.setting(
            [("count", String(pageSize)), ("start_position", "0"), ("order_by", "modified"), ("order", "asc")],
            in: URLSafety.appending(["templates"], to: base))
        var next: URL? = first
        var visited: Set<String> = []
        var total: Int?
        var listedRows = 0
        while let url = next {
            guard visited.insert(url.absoluteString).inserted else {
                throw UpstreamError.malformedListing(
                    collection: collection, reason: "paging loops back to \(URLSafety.redact(url))")
            }
            let page = try await session.get(url)
            let json = try parseListingBody(page, collection: collection)
            guard case .object(let fields) = json else {
                throw UpstreamError.malformedListing(collection: collection, reason: "response is not a JSON object")
            }
            total = try count(fields["totalSetSize"], "totalSetSize", collection) ?? total
            let resultSetSize = try count(fields["resultSetSize"], "resultSetSize", collection)
            let startPosition = try count(fields["startPosition"], "startPosition", collection)
            let templates: [JSONValue]
            switch fields["envelopeTemplates"] {
            case nil, .null?: templates = []
            case .array(let array)?: templates = array
            case let other?:
                throw UpstreamError.malformedListing(
                    collection: collection, reason: "'envelopeTemplates' is \(other.typeName), not an array")
            }
            for (index, template) in templates.enumerated() {
                let position = (startPosition ?? listedRows) + index
                try accumulator.add(listedTemplate(template, position: position, collection: collection))
            }
            listedRows += templates.count
            let size = resultSetSize ?? templates.count
            if size == 0 || templates.isEmpty {
                next = nil
            } else if case .string(let uri)? = fields["nextUri"], !uri.isEmpty {
                guard let resolved = URL(string: uri, relativeTo: base)?.absoluteURL else {
                    throw UpstreamError.malformedListing(collection: collection, reason: "nextUri is not a URL")
                }
                next = resolved
            } else if let total, (startPosition ?? listedRows - templates.count) + size < total {
                next = URLSafety.setting(
                    [("start_position", String((startPosition ?? listedRows - templates.count) + size))], in: first)
            } else {
                next = nil
            }
        }
        let complete = total.map { $0 == accumulator.count } ?? true
        return Listing(items: accumulator.items, isComplete: complete,
                       requests: session.statistics.requests - before)
    }

    public func fetch(collection: String, item: ListedItem, cachedETag: String?) async throws -> FetchedBody {
        try checkCollection(collection)
        let url = URLSafety.appending(["templates", item.id.description], to: base)
        return try await session.downloadItem(url, collection: collection, item: item, cachedValidator: cachedETag,
                                              requireObject: true)
    }

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
            fields["lastModified"], collection: collection, item: "\(id) (#\(position))", field: "lastModified")
        return ListedItem(id: ItemID(id), lastModified: version)
    }

    /// DocuSign counts are strings ("100"); numbers are accepted too.
    private func count(_ value: JSONValue?, _ field: String, _ collection: String) throws -> Int? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let number = Int(text), number >= 0 else {
                throw UpstreamError.malformedListing(collection: collection, reason: "'\(field)' is not a count: '\(text.prefix(32))'")
            }
            return number
        case .integer(let number)? where number >= 0: return Int(number)
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
