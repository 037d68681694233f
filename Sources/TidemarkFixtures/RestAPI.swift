import Foundation

/// A generic JSON REST collection:
/// - `GET /rest/items`: a JSON array; `page`/`per_page` or `offset`/`limit` page it (an empty
///   array past the end; `Link rel="next"` while more remain); `modified_since` filters (`>`).
///   ``FixtureServer/setRestPageCap(_:)`` caps `per_page` and `limit`.
/// - `GET /rest/envelope?cursor=N&limit=L`: `{"data": {"items": [...]}, "links": {"next": url|null}}`.
/// - `GET /rest/items/{id}`: one item, with an ETag and `If-None-Match` support.
enum RestAPI {
    static func handle(_ request: FixtureRequest, store: FixtureStore, origin: String) -> FixtureReply {
        if let token = store.token, request.headers["authorization"] != "Bearer " + token {
            return .json(["error": "unauthorized"], status: 401)
        }
        let s = request.segments
        return store.withLock {
            func capped(_ size: Int) -> Int { store.restPageCap.map { min($0, size) } ?? size }
            var rows = store.restItems.sorted { $0.id < $1.id }
            if let since = request.query("modified_since") {
                guard let ticks = FixtureTime.parse(since) else { return .json(["error": "bad modified_since"], status: 400) }
                rows = rows.filter { $0.lastModified > ticks }
            }
            if s == ["rest", "items"] {
                let nextOrigin = store.foreignOrigin ?? origin
                if let page = request.query("page").flatMap(Int.init) {
                    let size = capped(request.query("per_page").flatMap(Int.init) ?? 10)
                    guard page >= 1, size >= 1 else { return .json(["error": "bad paging"], status: 400) }
                    let slice = Array(rows.dropFirst((page - 1) * size).prefix(size))
                    var headers: [(String, String)] = []
                    if page * size < rows.count {
                        headers.append(("Link", "<\(nextOrigin)/rest/items?\(replacing(request, "page", String(page + 1)))>; rel=\"next\""))
                    }
                    return .json(slice.map(render), headers: headers)
                }
                if let offset = request.query("offset").flatMap(Int.init) {
                    let limit = capped(request.query("limit").flatMap(Int.init) ?? 10)
                    guard offset >= 0, limit >= 1 else { return .json(["error": "bad paging"], status: 400) }
                    return .json(Array(rows.dropFirst(offset).prefix(limit)).map(render))
                }
                return .json(rows.map(render))
            }
            if s == ["rest", "envelope"] {
                let cursor = request.query("cursor").flatMap(Int.init) ?? 0
                let limit = request.query("limit").flatMap(Int.init) ?? 10
                let slice = Array(rows.dropFirst(cursor).prefix(limit))
                let next: Any = cursor + limit < rows.count
                    ? "\(store.foreignOrigin ?? origin)/rest/envelope?\(replacing(request, "cursor", String(cursor + limit)))"
                    : NSNull()
                return .json(["data": ["items": slice.map(render)], "links": ["next": next]])
            }
            if s.count == 3, s[0] == "rest", s[1] == "items" {
                guard let item = store.restItems.first(where: { $0.id == s[2] }) else {
                    return .json(["error": "not found"], status: 404)
                }
                let etag = "\"r\(item.lastModified)\""
                if request.headers["if-none-match"] == etag { return FixtureReply(status: 304, headers: [("ETag", etag)]) }
                return .json(render(item), headers: [("ETag", etag)])
            }
            return .notFound(request.path)
        }
    }

    static func render(_ item: RestItem) -> [String: Any] {
        ["id": item.id, "name": item.name, "value": item.value, "lastModified": FixtureTime.rest(item.lastModified)]
    }

    private static func replacing(_ request: FixtureRequest, _ name: String, _ value: String) -> String {
        var items = request.queryItems.filter { $0.0 != name }
        items.append((name, value))
        return items.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }
            .joined(separator: "&")
    }
}
