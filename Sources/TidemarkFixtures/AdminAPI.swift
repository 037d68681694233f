import Foundation

/// Admin endpoints under `/_admin/`, for tests and demos driving a fixture over HTTP (any method):
/// - `/_admin/{docusign|wordpress|rest}/create[?type=posts|pages]` → `{"id": ...}`
/// - `/_admin/{api}/modify?id=X`, `/_admin/{api}/trash?id=X`, `/_admin/{api}/purge?id=X`
/// - `/_admin/wordpress/status?id=X&status=future|publish|...` (a scheduled post set to `publish`
///   keeps its modified date, as WordPress's cron publishes it)
/// - `/_admin/{api}/ids[?type=]` → `{"ids": [...]}`
/// - `/_admin/fault?status=503&retryAfter=1&retryAfterDate=1&delay=0.5&body=truncated|malformed|drop&prefix=/x&count=K&probability=p&query=TEXT&replace=JSON&location=URL`
/// - `/_admin/faults/clear`, `/_admin/foreign-next?origin=http://...` (no origin: off)
/// - `/_admin/rest-page-cap?rows=N` (no rows: off): REST listing pages hold at most N rows
/// - `/_admin/permalinks?pretty=0|1|pathinfo&advertise=0|1`, `/_admin/timezone?offset=SECONDS`, `/_admin/ratelimit?remaining=N&reset=SECONDS`
/// - `/_admin/burstlimit?limit=N&window=SECONDS[&remaining=N&reset=SECONDS]` (no limit: off; no reset: the
///   next request opens a window)
/// - `/_admin/requests[?prefix=/wp-json&last=N]` → `{"count": n, "last": [{method, path, query, authorization}],
///   "maxConcurrent": m}`
/// - `/_admin/reset-counts`
enum AdminAPI {
    static func handle(_ request: FixtureRequest, server store: FixtureStore) -> FixtureReply {
        let s = Array(request.segments.dropFirst())
        func bad(_ message: String) -> FixtureReply { .json(["error": message], status: 400) }
        if s.count == 2, let api = FixtureAPI(rawValue: s[0]) {
            let type = request.query("type") ?? "posts"
            if s[1] == "create" {
                let id = store.withLock { () -> String in
                    switch api {
                    case .docusign: return store.createTemplate()
                    case .wordpress: return String(store.createPost(type: type))
                    case .rest: return store.createRestItem()
                    }
                }
                return .json(["id": id])
            }
            if s[1] == "ids" {
                let ids = store.withLock { () -> [String] in
                    switch api {
                    case .docusign: return store.templates.map(\.id)
                    case .wordpress: return store.posts.filter { $0.type == type }.map { String($0.id) }
                    case .rest: return store.restItems.map(\.id)
                    }
                }
                return .json(["ids": ids])
            }
            guard let id = request.query("id") else { return bad("missing id") }
            let found: Bool
            switch s[1] {
            case "modify": found = store.withLock { store.modify(api, id: id) }
            case "trash": found = store.withLock { store.trash(api, id: id) }
            case "purge", "delete": found = store.withLock { store.purge(api, id: id) }
            case "status" where api == .wordpress:
                guard let status = request.query("status"), WordPressAPI.knownStatuses.contains(status) else { return bad("bad status") }
                found = store.withLock { store.setStatus(postID: id, to: status) }
            default: return bad("unknown operation \(s[1])")
            }
            return found ? .json(["ok": true]) : .json(["error": "no such item"], status: 404)
        }
        switch s.joined(separator: "/") {
        case "fault":
            var fault = FixtureFault()
            fault.status = request.query("status").flatMap(Int.init)
            if let seconds = request.query("retryAfter").flatMap(Int.init) { fault.retryAfter = .seconds(seconds) }
            if let seconds = request.query("retryAfterDate").flatMap(Int.init) { fault.retryAfter = .httpDate(secondsFromNow: seconds) }
            if fault.retryAfter != nil && fault.status == nil { fault.status = 429 }
            fault.delay = request.query("delay").flatMap(Double.init) ?? 0
            if let body = request.query("body") {
                guard let kind = FixtureFault.Body(rawValue: body) else { return bad("body must be normal, truncated, malformed or drop") }
                fault.body = kind
            }
            fault.pathPrefix = request.query("prefix")
            fault.count = request.query("count").flatMap(Int.init)
            fault.probability = request.query("probability").flatMap(Double.init)
            fault.queryContains = request.query("query")
            fault.replacementBody = request.query("replace")
            fault.location = request.query("location")
            store.withLock { store.faults.append(fault) }
            return .json(["ok": true])
        case "faults/clear":
            store.withLock { store.faults.removeAll() }
            return .json(["ok": true])
        case "foreign-next":
            store.withLock { store.foreignOrigin = request.query("origin").flatMap { $0.isEmpty ? nil : $0 } }
            return .json(["ok": true])
        case "rest-page-cap":
            store.withLock { store.restPageCap = request.query("rows").flatMap(Int.init).flatMap { $0 >= 1 ? $0 : nil } }
            return .json(["ok": true])
        case "permalinks":
            let root: WordPressRoot
            switch request.query("pretty") {
            case "0": root = .plain
            case "pathinfo": root = .pathInfo
            default: root = .wpJSON
            }
            store.withLock {
                store.wordPressRoot = root
                store.advertisesRoot = request.query("advertise") != "0"
            }
            return .json(["ok": true])
        case "timezone":
            store.withLock { store.timezoneOffset = request.query("offset").flatMap(Int64.init) ?? 0 }
            return .json(["ok": true])
        case "ratelimit":
            guard let remaining = request.query("remaining").flatMap(Int.init) else { return bad("missing remaining") }
            let reset = request.query("reset").flatMap(Int64.init) ?? 3600
            store.withLock {
                store.rateRemaining = remaining
                store.rateReset = Int64(Date().timeIntervalSince1970) + reset
            }
            return .json(["ok": true])
        case "burstlimit":
            let limit = request.query("limit").flatMap(Int.init)
            let window = request.query("window").flatMap(Int64.init) ?? 30
            store.withLock {
                store.burstLimit = limit
                store.burstWindow = max(1, window)
                store.burstRemaining = request.query("remaining").flatMap(Int.init) ?? limit ?? 0
                store.burstReset = request.query("reset").flatMap(Int64.init).map { Int64(Date().timeIntervalSince1970) + $0 } ?? 0
            }
            return .json(["ok": true])
        case "requests":
            let prefix = request.query("prefix") ?? "/"
            let last = request.query("last").flatMap(Int.init) ?? 20
            let matching = store.withLock { store.requests.filter { $0.path.hasPrefix(prefix) } }
            let shown: [[String: Any]] = matching.suffix(last).map {
                ["method": $0.method, "path": $0.path, "query": $0.query, "authorization": $0.authorization != nil]
            }
            let concurrent = store.withLock { store.maxInFlight }
            return .json(["count": matching.count, "last": shown, "maxConcurrent": concurrent])
        case "reset-counts":
            store.withLock {
                store.requests.removeAll()
                store.maxInFlight = store.inFlight
            }
            return .json(["ok": true])
        default:
            return .json(["error": "unknown admin endpoint"], status: 404)
        }
    }
}
