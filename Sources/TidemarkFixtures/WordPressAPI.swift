import Foundation

/// Emulation of the WordPress REST API (`wp/v2` posts, pages), reached as `/<prefix>/<route>`
/// (`wp-json` or `index.php/wp-json`) or `/?rest_route=<route>`.
enum WordPressAPI {
    static let knownStatuses: Set<String> = ["publish", "future", "draft", "pending", "private", "trash"]
    static let attachmentStatuses: Set<String> = ["inherit", "private", "trash"]

    /// The status a listing shows without a `status` filter (and anyone may read).
    static func defaultStatus(_ type: String) -> String { type == "media" ? "inherit" : "publish" }

    /// Handles REST route `route` (e.g. `/wp/v2/posts`) reached under `prefix` (nil: `?rest_route=`).
    static func handle(_ request: FixtureRequest, route: String, prefix: String?, store: FixtureStore, origin: String) -> FixtureReply {
        var authenticated = false
        if let header = request.headers["authorization"] {
            let bearerOK = store.token.map { header == "Bearer " + $0 } ?? false
            let basicOK = store.basic.map {
                header == "Basic " + Data("\($0.user):\($0.password)".utf8).base64EncodedString()
            } ?? false
            guard bearerOK || basicOK else {
                return .wpError(401, "incorrect_password", "The provided password is an invalid application password.")
            }
            authenticated = true
        }
        let parts = route.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        if parts.isEmpty {
            return .json([
                "name": "Tidemark Fixture", "url": origin, "namespaces": ["wp/v2"],
                "routes": ["/wp/v2/posts": [:], "/wp/v2/pages": [:], "/wp/v2/media": [:]],
            ])
        }
        guard parts.count >= 3, parts[0] == "wp", parts[1] == "v2", ["posts", "pages", "media"].contains(parts[2]), parts.count <= 4 else {
            return .wpError(404, "rest_no_route", "No route was found matching the URL and request method.")
        }
        return store.withLock {
            parts.count == 3
                ? list(request, type: parts[2], route: route, prefix: prefix, authenticated: authenticated, store: store, origin: origin)
                : single(request, type: parts[2], id: parts[3], authenticated: authenticated, store: store)
        }
    }

    /// Caller holds the lock.
    private static func list(
        _ request: FixtureRequest, type: String, route: String, prefix: String?, authenticated: Bool, store: FixtureStore,
        origin: String
    ) -> FixtureReply {
        func invalid(_ name: String, _ message: String) -> FixtureReply {
            .wpError(400, "rest_invalid_param", "Invalid parameter(s): \(name)", params: [name: message])
        }
        guard let perPage = Int(request.query("per_page") ?? "10"), (1...100).contains(perPage) else {
            return invalid("per_page", "per_page must be between 1 (inclusive) and 100 (inclusive)")
        }
        guard let page = Int(request.query("page") ?? "1"), page >= 1 else {
            return invalid("page", "page must be greater than or equal to 1")
        }
        // Attachments (`media`) have statuses of their own, `inherit` by default, as WordPress's
        // attachments controller has them.
        let known = type == "media" ? attachmentStatuses : knownStatuses
        let shown = defaultStatus(type)
        var statuses: Set<String> = [shown]
        if let value = request.query("status") {
            statuses = Set(value.split(separator: ",").map(String.init))
            if statuses.contains("any") { statuses = known.subtracting(["trash"]) }
            guard statuses.isSubset(of: known) else { return invalid("status", "status is not one of \(known.sorted())") }
            if statuses != [shown] && !authenticated {
                return invalid("status", "Status is forbidden.")
            }
        }
        var rows = store.posts.filter { $0.type == type && statuses.contains($0.status) }
        if let after = request.query("modified_after") {
            guard let ticks = FixtureTime.parse(after, defaultOffset: store.timezoneOffset) else {
                return invalid("modified_after", "Invalid date.")
            }
            let seconds = FixtureTime.floorDiv(ticks, FixtureTime.ticksPerSecond)
            rows = rows.filter { $0.modified > seconds }
        }
        switch request.query("orderby") ?? "date" {
        case "modified" where store.unstableTies:
            // Ties in an order that depends on the page (a hash of id and page), as MySQL's may.
            func rank(_ post: Post) -> UInt64 {
                var z = UInt64(post.id) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(page) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 30)) &* 0x94D0_49BB_1331_11EB
                return z ^ (z >> 31)
            }
            rows.sort { ($0.modified, rank($0)) < ($1.modified, rank($1)) }
        case "modified": rows.sort { ($0.modified, $0.id) < ($1.modified, $1.id) }
        case "id": rows.sort { $0.id < $1.id }
        case "date": rows.sort { ($0.date, $0.id) < ($1.date, $1.id) }
        default: return invalid("orderby", "orderby is not one of date, id, modified.")
        }
        if (request.query("order") ?? "desc") == "desc" { rows.reverse() }
        let total = rows.count
        let totalPages = (total + perPage - 1) / perPage
        if page > totalPages && total > 0 {
            return .wpError(400, "rest_post_invalid_page_number",
                            "The page number requested is larger than the number of pages available.")
        }
        // Posts the credentials may not read count in the total and are dropped from the page, as
        // WordPress's check_read_permission drops them after the query.
        let slice = rows.dropFirst((page - 1) * perPage).prefix(perPage).filter { !(authenticated && store.unreadable.contains($0.id)) }
        let fields = request.query("_fields").map { Set($0.split(separator: ",").map(String.init)) }
        let body: [[String: Any]] = slice.map { post in
            let object = render(post, edit: false, offset: store.timezoneOffset)
            guard let fields else { return object }
            return object.filter { fields.contains($0.key) }
        }
        func link(_ target: Int) -> String {
            var items = request.queryItems.filter { $0.0 != "page" && $0.0 != "rest_route" }
            items.append(("page", String(target)))
            let query = items.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }
            guard let prefix else { return "/?rest_route=\(route)&" + query.joined(separator: "&") }
            return "/\(prefix)\(route)?" + query.joined(separator: "&")
        }
        var links: [String] = []
        if page > 1 { links.append("<\(origin)\(link(page - 1))>; rel=\"prev\"") }
        if page < totalPages { links.append("<\(store.foreignOrigin ?? origin)\(link(page + 1))>; rel=\"next\"") }
        var headers = [("X-WP-Total", String(total)), ("X-WP-TotalPages", String(totalPages))]
        if !links.isEmpty { headers.append(("Link", links.joined(separator: ", "))) }
        return .json(body, headers: headers)
    }

    /// Caller holds the lock.
    private static func single(
        _ request: FixtureRequest, type: String, id: String, authenticated: Bool, store: FixtureStore
    ) -> FixtureReply {
        guard let number = Int(id), let post = store.posts.first(where: { $0.id == number && $0.type == type }) else {
            return .wpError(404, "rest_post_invalid_id", "Invalid post ID.")
        }
        let edit = request.query("context") == "edit"
        if authenticated && store.unreadable.contains(post.id) {
            return .wpError(403, "rest_forbidden", "Sorry, you are not allowed to do that.")
        }
        if edit && authenticated && store.notEditable.contains(post.id) {
            return .wpError(403, "rest_forbidden_context", "Sorry, you are not allowed to edit this post.")
        }
        if (edit || post.status != defaultStatus(type)) && !authenticated {
            return .wpError(401, edit ? "rest_forbidden_context" : "rest_forbidden",
                            "Sorry, you are not allowed to do that.")
        }
        // Like a caching plugin or proxy in front of WordPress: Last-Modified, and 304 for a
        // conditional request when the post has not changed since.
        let lastModified = FixtureTime.httpDate(post.modified)
        if let since = request.headers["if-modified-since"], since == lastModified {
            return FixtureReply(status: 304, headers: [("Last-Modified", lastModified)])
        }
        return .json(render(post, edit: edit, offset: store.timezoneOffset), headers: [("Last-Modified", lastModified)])
    }

    static func render(_ post: Post, edit: Bool, offset: Int64) -> [String: Any] {
        var title: [String: Any] = ["rendered": post.title]
        var content: [String: Any] = ["rendered": post.content, "protected": false]
        if edit {
            title["raw"] = post.title
            content["raw"] = post.content
        }
        return [
            "id": post.id, "type": ["posts": "post", "pages": "page", "media": "attachment"][post.type] ?? post.type,
            "status": post.status, "slug": post.slug,
            "date": FixtureTime.wordPress(post.date, offset: offset), "date_gmt": FixtureTime.wordPress(post.date),
            "modified": FixtureTime.wordPress(post.modified, offset: offset),
            "modified_gmt": FixtureTime.wordPress(post.modified),
            "guid": ["rendered": "http://fixture.invalid/?p=\(post.id)"], "link": "http://fixture.invalid/\(post.slug)/",
            "title": title, "content": content, "author": 1,
        ]
    }
}
