/// Collects listed items across pages: keeps the first occurrence of an id, drops an exact repeat
/// (same id and version, as when items shift between pages) and rejects an id listed with two
/// different versions.
struct ListingAccumulator {
    let collection: String
    private(set) var items: [ListedItem] = []
    private var versions: [ItemID: Timestamp] = [:]

    init(collection: String) { self.collection = collection }

    /// The number of distinct ids so far.
    var count: Int { items.count }

    mutating func add(_ item: ListedItem) throws {
        if let known = versions[item.id] {
            guard known.raw == item.lastModified.raw || known == item.lastModified else {
                throw UpstreamError.duplicateID(
                    collection: collection,
                    item: "\(item.id) (versions \(known.raw) and \(item.lastModified.raw))")
            }
            return
        }
        versions[item.id] = item.lastModified
        items.append(item)
    }
}

/// Reads the version field of one listed item.
func listedVersion(
    _ value: JSONValue?, collection: String, item: String, field: String
) throws -> Timestamp {
    guard let value else {
        throw UpstreamError.malformedItem(collection: collection, item: item, reason: "field '\(field)' is missing")
    }
    guard let text = value.stringValue else {
        throw UpstreamError.malformedItem(
            collection: collection, item: item, reason: "field '\(field)' is \(value.typeName), not a string")
    }
    guard let timestamp = Timestamp(text) else {
        throw UpstreamError.malformedItem(
            collection: collection, item: item, reason: "field '\(field)' is not a date-time: '\(text.prefix(64))'")
    }
    return timestamp
}

/// Parses a JSON response body or throws `malformedListing` naming the URL.
func parseListingBody(_ result: HTTPResult, collection: String) throws -> JSONValue {
    do {
        return try JSONValue.parse(result.body)
    } catch {
        throw UpstreamError.malformedListing(
            collection: collection, reason: "response from \(URLSafety.redact(result.url)) is not valid JSON")
    }
}
