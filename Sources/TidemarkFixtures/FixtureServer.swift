import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HTTPTypes
import Logging
import NIOCore
import ServiceLifecycle

/// A real HTTP server on 127.0.0.1 that emulates the DocuSign templates API, the WordPress REST
/// API and a generic JSON collection, with admin operations to change data and inject faults.
///
/// ```swift
/// let server = try await FixtureServer.start(items: 250, seed: 7, token: "t0k")
/// defer { Task { await server.stop() } }
/// // http://127.0.0.1:\(server.port)/restapi/v2.1/accounts/1/templates
/// ```
/// The same operations are reachable over HTTP under `/_admin/` (see ``AdminAPI``).
public final class FixtureServer: Sendable {
    /// The port it listens on.
    public let port: Int
    /// Whether it speaks HTTPS (started with `tls`).
    public let isTLS: Bool
    let store: FixtureStore
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    /// `http://127.0.0.1:<port>`, or `https://` with TLS.
    public var baseURL: String { "\(isTLS ? "https" : "http")://127.0.0.1:\(port)" }

    private init(port: Int, isTLS: Bool, store: FixtureStore, task: Task<Void, any Error>, group: ServiceGroup) {
        self.port = port
        self.isTLS = isTLS
        self.store = store
        self.task = task
        self.group = group
    }

    /// Starts a server on 127.0.0.1.
    /// - Parameters:
    ///   - port: the port, 0 for any free one.
    ///   - items: how many items to seed in each API (DocuSign templates, WordPress posts and
    ///     pages (one in five is a page), REST items).
    ///   - seed: seed of the data and of random faults.
    ///   - token: when set, DocuSign and REST require `Authorization: Bearer <token>`; WordPress
    ///     accepts it as authentication.
    ///   - basic: WordPress application-password credentials; needed for non-public statuses.
    ///   - tls: PEM files of the server's certificate (chain) and private key: the server then
    ///     speaks HTTPS only (a private authority's upstream, for `tidemark.sslCAInfo`).
    public static func start(
        port: Int = 0, items: Int = 0, seed: UInt64 = 1, token: String? = nil,
        basic: (user: String, password: String)? = nil, tls: (certificate: String, key: String)? = nil
    ) async throws -> FixtureServer {
        let store = FixtureStore(items: items, seed: seed, token: token, basic: basic)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let responder = FixtureResponder(store: store)
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [AnswerDateHandler()])
        var server = HTTPServerBuilder.http1(configuration: http1)
        if let tls {
            let configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.key, format: .pem)))
            server = try .tls(.http1(configuration: http1), tlsConfiguration: configuration)
        }
        let app = Application(
            responder: responder,
            server: server,
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: { var l = Logger(label: "tidemark-fixture"); l.logLevel = .critical; return l }())
        // Run in a service group of its own, which stops it by a graceful shutdown: cancelling the
        // task instead deadlocked now and then in the Swift runtime (a cancellation handler of
        // swift-async-algorithms' merge taking its lock under the task's status lock, while a
        // thread holding that lock switched tasks, which with an executor preference takes the
        // status lock), and the test run hung.
        let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "tidemark-fixture-group")))
        let task = Task { try await withTaskExecutorPreference(ThreadPoolExecutor.fixture) { try await group.run() } }
        var bound = 0
        for await value in ports {
            bound = value
            break
        }
        guard bound > 0 else {
            await group.triggerGracefulShutdown()
            _ = await task.result
            throw FixtureError.cannotStart(port: port)
        }
        responder.setOrigin("\(tls == nil ? "http" : "https")://127.0.0.1:\(bound)")
        return FixtureServer(port: bound, isTLS: tls != nil, store: store, task: task, group: group)
    }

    /// Stops the server (a graceful shutdown: no new connections, open ones closed once their
    /// requests are answered) and waits for it to close.
    /// If that takes more than 5 s (a client keeping a connection open), the task is cancelled.
    public func stop() async {
        await group.triggerGracefulShutdown()
        let watchdog = Task { [task] in
            try await Task.sleep(nanoseconds: 5_000_000_000)
            task.cancel()
        }
        _ = await task.result
        watchdog.cancel()
    }

    /// Waits until the server stops (used by the executable).
    public func wait() async {
        _ = await task.result
    }

    // MARK: Data

    /// Ids currently held by `api` (WordPress: of post type `type`, with one of `statuses` when
    /// given), in creation order. DocuSign templates in the recycle bin are left out.
    public func ids(_ api: FixtureAPI, type: String = "posts", statuses: Set<String>? = nil) -> [String] {
        store.withLock {
            switch api {
            case .docusign: return store.templates.filter { !$0.inRecycleBin }.map(\.id)
            case .wordpress:
                return store.posts.filter { $0.type == type && (statuses?.contains($0.status) ?? true) }.map { String($0.id) }
            case .rest: return store.restItems.map(\.id)
            }
        }
    }

    /// Creates an item; returns its id.
    @discardableResult
    public func create(_ api: FixtureAPI, type: String = "posts") -> String {
        store.withLock {
            switch api {
            case .docusign: return store.createTemplate()
            case .wordpress: return String(store.createPost(type: type))
            case .rest: return store.createRestItem()
            }
        }
    }

    /// Changes an item and moves its version forward. Returns false for an unknown id.
    @discardableResult
    public func modify(_ api: FixtureAPI, id: String) -> Bool { store.withLock { store.modify(api, id: id) } }

    /// Accepts `token` from now on instead of the one given at start (an access token that
    /// expired during a run; a client must get the new one).
    public func setToken(_ token: String?) { store.withLock { store.token = token } }

    /// Makes a WordPress post readable but not editable with the credentials (another author's
    /// post, to an Author): its `context=edit` answers 403 `rest_forbidden_context`.
    public func forbidEditing(postID id: Int) { store.withLock { _ = store.notEditable.insert(id) } }

    /// Makes a WordPress post one the credentials may not read (another author's draft, to an
    /// Author): WordPress counts it in `X-WP-Total`, leaves it out of the page, and refuses its URL.
    public func hideFromCredentials(postID id: Int) { store.withLock { _ = store.unreadable.insert(id) } }

    /// Edits WordPress posts in one `modified` second, as a bulk edit does.
    @discardableResult
    public func bulkModify(postIDs ids: [String]) -> Bool { store.withLock { store.bulkModify(postIDs: ids) } }

    /// Orders WordPress posts tied on `modified` differently for each page asked for, as MySQL
    /// may (``FixtureStore/unstableTies``).
    public func setUnstableTies(_ on: Bool) { store.withLock { store.unstableTies = on } }

    /// Sets a WordPress post's status; a scheduled (`future`) post set to `publish` keeps its
    /// modified date, as WordPress's cron publishes it. Returns false for an unknown id.
    @discardableResult
    public func setStatus(postID id: String, to status: String) -> Bool { store.withLock { store.setStatus(postID: id, to: status) } }

    /// Trashes an item (WordPress: status `trash`; DocuSign: recycle bin; REST: deleted).
    @discardableResult
    public func trash(_ api: FixtureAPI, id: String) -> Bool { store.withLock { store.trash(api, id: id) } }

    /// Deletes an item for good.
    @discardableResult
    public func purge(_ api: FixtureAPI, id: String) -> Bool { store.withLock { store.purge(api, id: id) } }

    // MARK: Behaviour

    /// Adds a fault; faults are tried in the order added.
    public func inject(_ fault: FixtureFault) { store.withLock { store.faults.append(fault) } }

    /// Removes every fault.
    public func clearFaults() { store.withLock { store.faults.removeAll() } }

    /// Lets the requests waiting on a ``FixtureFault/held`` fault answer.
    public func releaseHeld() { store.withLock { store.releases += 1 } }

    /// How many requests wait on a ``FixtureFault/held`` fault now.
    public var heldRequests: Int { store.withLock { store.held } }

    /// When set, paging links (DocuSign `nextUri`, WordPress and REST `Link rel=next`, REST
    /// `links.next`) point to this origin (e.g. another fixture) instead of this server.
    public func setForeignNextOrigin(_ origin: String?) { store.withLock { store.foreignOrigin = origin } }

    /// Caps REST listing pages at `rows` rows, whatever `per_page` or `limit` asks, as servers
    /// with a maximum page size do; nil removes the cap.
    public func setRestPageCap(_ rows: Int?) { store.withLock { store.restPageCap = rows } }

    /// When false, `/wp-json/` answers 404 as on a site without pretty permalinks.
    public func setPrettyPermalinks(_ enabled: Bool) { setWordPressRoot(enabled ? .wpJSON : .plain) }

    /// Where the WordPress REST API is served, and whether the home page advertises it in a
    /// `Link: <root>; rel="https://api.w.org/"` header (`<origin>/?rest_route=/` for plain permalinks).
    public func setWordPressRoot(_ root: WordPressRoot, advertised: Bool = true) {
        store.withLock {
            store.wordPressRoot = root
            store.advertisesRoot = advertised
        }
    }

    /// The WordPress site's time zone, in seconds east of UTC (for `modified_after` without offset).
    public func setTimezoneOffset(_ seconds: Int) { store.withLock { store.timezoneOffset = Int64(seconds) } }

    /// Sets the DocuSign rate-limit window: `remaining` calls until `resetIn` seconds from now.
    public func setRateLimit(remaining: Int, resetIn seconds: Int) {
        store.withLock {
            store.rateRemaining = remaining
            store.rateReset = Int64(Date().timeIntervalSince1970) + Int64(seconds)
        }
    }

    /// Turns on the DocuSign burst limit (`X-BurstLimit-Limit/-Remaining`, and with `sendsReset`
    /// `X-BurstLimit-Reset` in epoch seconds, which DocuSign documents none of): `limit` requests
    /// per `window` seconds; a request beyond them gets `refusalStatus` (429, or 400 as some of
    /// DocuSign's services answer) with `BURST_APIINVOCATION_LIMIT_EXCEEDED`. The next request
    /// opens a fresh window, unless `resetIn` is given: then the current window ends that many
    /// seconds from now with `remaining` requests left. `nil` turns the limit off.
    public func setBurstLimit(_ limit: Int?, window: Int = 30, remaining: Int? = nil, resetIn: Int? = nil,
                              sendsReset: Bool = false, refusalStatus: Int = 429) {
        store.withLock {
            store.burstResetSent = sendsReset
            store.burstRefusalStatus = refusalStatus
            store.burstLimit = limit
            store.burstWindow = Int64(max(1, window))
            store.burstRemaining = remaining ?? limit ?? 0
            store.burstReset = resetIn.map { Int64(Date().timeIntervalSince1970) + Int64($0) } ?? 0
        }
    }

    /// Writes DocuSign's `nextUri` starting with `prefix` (e.g. `/accounts/`, or `/v2.1/accounts/`)
    /// instead of the account's base path `/restapi/v2.1/accounts/`; nil: the base path.
    public func setNextUriPrefix(_ prefix: String?) { store.withLock { store.nextUriPrefix = prefix } }

    /// DocuSign requests refused because the burst window was used up.
    public var burstRejections: Int { store.withLock { store.burstRejections } }

    // MARK: Observation

    /// The most requests the fixture was answering at once since the counts were last reset.
    public var maxConcurrentRequests: Int { store.withLock { store.maxInFlight } }

    /// Requests received (admin requests excluded), oldest first.
    public var requests: [RecordedRequest] { store.withLock { store.requests } }

    /// How many requests had a path starting with `prefix`.
    public func requestCount(prefix: String = "/") -> Int {
        store.withLock { store.requests.filter { $0.path.hasPrefix(prefix) }.count }
    }

    /// Forgets the recorded requests.
    public func resetCounts() {
        store.withLock {
            store.requests.removeAll()
            store.maxInFlight = store.inFlight
        }
    }
}

/// Errors of the fixture itself.
public enum FixtureError: Error, CustomStringConvertible {
    case cannotStart(port: Int)
    public var description: String {
        switch self {
        case .cannotStart(let port): return "fixture server could not listen on 127.0.0.1:\(port)"
        }
    }
}

/// Request context that keeps the channel, so a fault can drop the connection.
struct FixtureContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel
    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

struct DroppedConnection: Error {}

/// Routes every request: admin, fault injection, then the emulated APIs.
final class FixtureResponder: HTTPResponder, @unchecked Sendable {
    typealias Context = FixtureContext
    let store: FixtureStore
    private let lock = NSLock()
    private var origin = ""

    init(store: FixtureStore) { self.store = store }

    func setOrigin(_ value: String) { lock.withLock { origin = value } }

    func respond(to request: Request, context: FixtureContext) async throws -> Response {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
        let incoming = FixtureRequest(method: request.method.rawValue, target: request.uri.string, headers: headers)
        let origin = lock.withLock { self.origin }
        if incoming.segments.first == "_admin" {
            return Self.response(AdminAPI.handle(incoming, server: store))
        }
        store.withLock {
            store.inFlight += 1
            store.maxInFlight = max(store.maxInFlight, store.inFlight)
        }
        defer { store.withLock { store.inFlight -= 1 } }
        let (fault, number, releases) = store.withLock { () -> (FixtureFault?, Int, Int) in
            if store.requests.count >= 100_000 { store.requests.removeFirst(50_000) }
            store.requests.append(RecordedRequest(
                method: incoming.method, path: incoming.path, query: incoming.rawQuery, headers: headers))
            return (store.takeFault(path: incoming.path, query: incoming.rawQuery), store.requests.count, store.releases)
        }
        if let fault {
            if fault.delay > 0 { try await Task.sleep(nanoseconds: UInt64(fault.delay * 1e9)) }
            if fault.held {
                store.withLock { store.held += 1 }
                defer { store.withLock { store.held -= 1 } }
                let deadline = Date().addingTimeInterval(120)
                while store.withLock({ store.releases == releases }) && Date() < deadline {
                    try await Task.sleep(nanoseconds: 5_000_000)
                }
            }
            switch fault.body {
            case .drop:
                try? await context.channel.close()
                throw DroppedConnection()
            case .malformed:
                return Self.response(FixtureReply(status: 200, headers: [("Content-Type", "application/json")],
                                                  body: Data("{\"envelopeTemplates\": [{\"templateId\": ".utf8)))
            case .truncated, .normal:
                if let replacement = fault.replacementBody {
                    func numbered(_ text: String) -> String {
                        let digits = String(number)
                        return text.replacingOccurrences(of: "{n6}", with: String(repeating: "0", count: max(0, 6 - digits.count)) + digits)
                            .replacingOccurrences(of: "{n}", with: digits)
                    }
                    // JSON unless the fault names its own type (an HTML login or error page).
                    let typed = fault.replacementHeaders.keys.contains { $0.lowercased() == "content-type" }
                    let headers = (typed ? [] : [("Content-Type", "application/json")])
                        + fault.replacementHeaders.sorted { $0.key < $1.key }.map { ($0.key, numbered($0.value)) }
                    return Self.response(FixtureReply(status: fault.status ?? 200, headers: headers, body: Data(numbered(replacement).utf8)),
                                         truncate: fault.body == .truncated)
                }
                if let status = fault.status {
                    var reply = FixtureReply.json(["code": "fixture_fault", "message": "injected fault"], status: status)
                    if let location = fault.location { reply.headers.append(("Location", location)) }
                    switch fault.retryAfter {
                    case .seconds(let seconds)?: reply.headers.append(("Retry-After", String(seconds)))
                    case .httpDate(let offset)?:
                        let now = Int64(Date().timeIntervalSince1970)
                        reply.headers.append(("Retry-After", FixtureTime.httpDate(now + Int64(offset))))
                        reply.headers.append(("Date", FixtureTime.httpDate(now)))
                    case nil: break
                    }
                    return Self.response(reply, truncate: fault.body == .truncated)
                }
                if fault.body == .truncated {
                    return Self.response(route(incoming, origin: origin), truncate: true)
                }
            }
        }
        return Self.response(route(incoming, origin: origin))
    }

    private func route(_ request: FixtureRequest, origin: String) -> FixtureReply {
        guard request.method == "GET" else { return .json(["error": "method not allowed"], status: 405) }
        let s = request.segments
        if s.first == "restapi" { return DocuSignAPI.handle(request, store: store, origin: origin) }
        if s.first == "rest" { return RestAPI.handle(request, store: store, origin: origin) }
        let (root, advertised) = store.withLock { (store.wordPressRoot, store.advertisesRoot) }
        if let prefix = root.prefix, s.starts(with: prefix) {
            let route = "/" + request.path.split(separator: "/").dropFirst(prefix.count).joined(separator: "/")
            return WordPressAPI.handle(request, route: route, prefix: prefix.joined(separator: "/"), store: store, origin: origin)
        }
        if s.first == "wp-json" || s.starts(with: ["index.php", "wp-json"]) {
            return FixtureReply(status: 404, headers: [("Content-Type", "text/html")], body: Data("<html>Not Found</html>".utf8))
        }
        if s.isEmpty, let route = request.query("rest_route") {
            return WordPressAPI.handle(request, route: route, prefix: nil, store: store, origin: origin)
        }
        if s.isEmpty {
            var headers = [("Content-Type", "text/html")]
            if advertised {
                let link = root.prefix.map { "\(origin)/\($0.joined(separator: "/"))/" } ?? "\(origin)/?rest_route=/"
                headers.append(("Link", "<\(link)>; rel=\"https://api.w.org/\""))
            }
            return FixtureReply(status: 200, headers: headers, body: Data("<html>Tidemark fixture</html>".utf8))
        }
        return .notFound(request.path)
    }

    static func response(_ reply: FixtureReply, truncate: Bool = false) -> Response {
        var fields = HTTPFields()
        for (name, value) in reply.headers {
            // A `Date` of the reply's own (DocuSign's limits, a Retry-After date) or now: the
            // channel's AnswerDateHandler sends it, as Hummingbird would overwrite it.
            let key = name.lowercased() == "date" ? AnswerDateHandler.field : HTTPField.Name(name)
            if let key { fields.append(HTTPField(name: key, value: value)) }
        }
        if fields[AnswerDateHandler.field] == nil {
            fields[AnswerDateHandler.field] = FixtureTime.httpDate(Int64(Date().timeIntervalSince1970))
        }
        let status = HTTPResponse.Status(code: reply.status)
        let bytes = reply.body
        if truncate {
            return Response(status: status, headers: fields, body: ResponseBody(contentLength: bytes.count) { writer in
                try await writer.write(ByteBuffer(bytes: bytes.prefix(bytes.count / 2)))
                throw DroppedConnection()
            })
        }
        if reply.status == 304 { return Response(status: status, headers: fields) }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
