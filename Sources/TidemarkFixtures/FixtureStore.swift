import Foundation

/// All mutable state of a fixture server, behind one lock.
final class FixtureStore: @unchecked Sendable {
    private let lock = NSLock()
    private var generator: SeededGenerator
    private var clock: Int64 = FixtureTime.epochStart
    private var nextPostID = 1
    private var nextRestID = 1

    var templates: [Template] = []
    var posts: [Post] = []
    var restItems: [RestItem] = []

    var faults: [FixtureFault] = []
    /// How many times ``FixtureServer/releaseHeld()`` was called: a held request answers once
    /// this passes the value it saw when it arrived.
    var releases = 0
    /// Requests waiting on a held fault now.
    var held = 0
    var requests: [RecordedRequest] = []
    /// Requests being answered now, and the most at once since the last reset (admin excluded).
    var inFlight = 0
    var maxInFlight = 0
    var foreignOrigin: String?
    /// The most rows one REST listing page holds, whatever `per_page` or `limit` asks (nil: no cap).
    var restPageCap: Int?
    /// Where the WordPress REST API is served besides `?rest_route=`.
    var wordPressRoot: WordPressRoot = .wpJSON
    /// Whether the home page advertises the REST root in a `Link: rel="https://api.w.org/"` header.
    var advertisesRoot = true
    /// Seconds east of UTC of the emulated WordPress site.
    var timezoneOffset: Int64 = 0
    /// WordPress posts of one `modified` second come in an order that depends on the page asked
    /// for, as MySQL may order rows tied on `ORDER BY post_modified` differently for each `LIMIT`
    /// (WordPress adds no tie-breaker); off: ordered by id.
    var unstableTies = false
    /// WordPress posts the credentials may read but not edit (another author's, to an Author):
    /// their `context=edit` answers 403 `rest_forbidden_context`.
    var notEditable: Set<Int> = []
    /// WordPress posts the credentials may not read at all (another author's drafts, to an
    /// Author): counted in `X-WP-Total`, left out of the pages, 403 at their URL.
    var unreadable: Set<Int> = []
    var rateLimit = 3000
    var rateRemaining = 3000
    var rateReset: Int64 = 0
    /// DocuSign burst limit: requests per `burstWindow` seconds; nil sends no `X-BurstLimit-*`.
    var burstLimit: Int?
    var burstWindow: Int64 = 30
    var burstRemaining = 0
    var burstReset: Int64 = 0
    /// DocuSign requests refused because the burst window was used up.
    var burstRejections = 0
    /// Whether `X-BurstLimit-Reset` is sent (DocuSign documents none), and the status of a
    /// refusal past the burst limit (429; some of DocuSign's services answer 400).
    var burstResetSent = false
    var burstRefusalStatus = 429
    /// What `nextUri` starts with instead of the account's base path (`/accounts/...`), to stand
    /// for a DocuSign writing it another way; nil: the base path.
    var nextUriPrefix: String?

    /// The bearer token accepted (``FixtureServer/setToken(_:)`` changes it, as an access
    /// token expires and a new one is issued).
    var token: String?
    let basic: (user: String, password: String)?

    init(items: Int, seed: UInt64, token: String?, basic: (user: String, password: String)?) {
        self.generator = SeededGenerator(seed: seed)
        self.token = token
        self.basic = basic
        for _ in 0..<items { _ = createTemplate() }
        for index in 0..<items { _ = createPost(type: index % 5 == 4 ? "pages" : "posts") }
        for _ in 0..<items { _ = createRestItem() }
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Moves the server clock forward by at least one second and returns it (ticks).
    private func tick() -> Int64 {
        clock += FixtureTime.ticksPerSecond + Int64.random(in: 0..<(600 * FixtureTime.ticksPerSecond), using: &generator)
        return clock
    }

    private func random(_ range: Range<Int>) -> Int { Int.random(in: range, using: &generator) }

    // MARK: Mutations (callers hold the lock)

    func createTemplate() -> String {
        var hex = ""
        for _ in 0..<32 { hex.append(Character(String(random(0..<16), radix: 16))) }
        let b = Array(hex)
        let id = String(b[0..<8]) + "-" + String(b[8..<12]) + "-" + String(b[12..<16]) + "-" + String(b[16..<20]) + "-" + String(b[20..<32])
        let now = tick()
        templates.append(Template(
            id: id, name: "Template \(templates.count + 1)", description: "Seeded template \(random(0..<100_000))",
            created: now, lastModified: now))
        return id
    }

    func createPost(type: String) -> Int {
        let now = tick() / FixtureTime.ticksPerSecond
        let id = nextPostID
        nextPostID += 1
        let statuses = ["publish", "publish", "publish", "draft", "private", "future", "pending"]
        let status = type == "media" ? (id % 11 == 0 ? "private" : "inherit")
            : id % 11 == 0 ? statuses[random(3..<statuses.count)] : "publish"
        posts.append(Post(
            id: id, type: type, status: status, slug: "\(type)-\(id)", title: "\(type.capitalized) \(id)",
            content: "<p>Content \(random(0..<1_000_000)) of \(type) \(id).</p>", date: now, modified: now))
        return id
    }

    func createRestItem() -> String {
        let id = "item-" + FixtureTime.pad(nextRestID, 5)
        nextRestID += 1
        restItems.append(RestItem(id: id, name: "Item \(id)", value: random(0..<1000), lastModified: tick() / 10_000 * 10_000))
        return id
    }

    /// Bumps the version of an item. Returns false when there is no such item.
    func modify(_ api: FixtureAPI, id: String) -> Bool {
        switch api {
        case .docusign:
            guard let index = templates.firstIndex(where: { $0.id == id }) else { return false }
            templates[index].lastModified = tick()
            templates[index].description += " (edited)"
        case .wordpress:
            guard let index = posts.firstIndex(where: { String($0.id) == id }) else { return false }
            posts[index].modified = tick() / FixtureTime.ticksPerSecond
            posts[index].content += "<p>Edited.</p>"
        case .rest:
            guard let index = restItems.firstIndex(where: { $0.id == id }) else { return false }
            restItems[index].lastModified = tick() / 10_000 * 10_000  // served with millisecond precision
            restItems[index].value += 1
        }
        return true
    }

    /// Edits WordPress posts at once, as a bulk edit or an import does: one `modified` second for
    /// all. Returns false when one is missing (none is edited then).
    func bulkModify(postIDs ids: [String]) -> Bool {
        let indices = ids.compactMap { id in posts.firstIndex { String($0.id) == id } }
        guard indices.count == ids.count else { return false }
        let now = tick() / FixtureTime.ticksPerSecond
        for index in indices {
            posts[index].modified = now
            posts[index].content += "<p>Bulk edited.</p>"
        }
        return true
    }

    /// Sets a WordPress post's status as an edit does (modified bumped); `future` schedules it an
    /// hour after that (its date); `publish` of a scheduled post is WordPress's cron publishing it
    /// (`wp_publish_post`: the status alone, modified and date kept). Returns false when there is
    /// no such post.
    func setStatus(postID id: String, to status: String) -> Bool {
        guard let index = posts.firstIndex(where: { String($0.id) == id }) else { return false }
        let scheduled = posts[index].status == "future" && status == "publish"
        posts[index].status = status
        // Published by the cron at its date: the site's time is past it from now on.
        guard !scheduled else {
            clock = max(clock, posts[index].date * FixtureTime.ticksPerSecond)
            return true
        }
        posts[index].modified = tick() / FixtureTime.ticksPerSecond
        if status == "future" { posts[index].date = posts[index].modified + 3600 }
        return true
    }

    /// Trashes an item: WordPress status `trash` (modified bumped), DocuSign recycle bin (out of
    /// the listing), REST: removed.
    func trash(_ api: FixtureAPI, id: String) -> Bool {
        switch api {
        case .docusign:
            guard let index = templates.firstIndex(where: { $0.id == id }) else { return false }
            templates[index].inRecycleBin = true
            templates[index].lastModified = tick()
        case .wordpress:
            guard let index = posts.firstIndex(where: { String($0.id) == id }) else { return false }
            posts[index].status = "trash"
            posts[index].modified = tick() / FixtureTime.ticksPerSecond
        case .rest:
            return purge(api, id: id)
        }
        return true
    }

    /// Deletes an item for good.
    func purge(_ api: FixtureAPI, id: String) -> Bool {
        switch api {
        case .docusign:
            guard let index = templates.firstIndex(where: { $0.id == id }) else { return false }
            templates.remove(at: index)
        case .wordpress:
            guard let index = posts.firstIndex(where: { String($0.id) == id }) else { return false }
            posts.remove(at: index)
        case .rest:
            guard let index = restItems.firstIndex(where: { $0.id == id }) else { return false }
            restItems.remove(at: index)
        }
        return true
    }

    /// The fault to apply to a request on `path`, consuming one use of it.
    func takeFault(path: String, query: String) -> FixtureFault? {
        for index in faults.indices {
            let fault = faults[index]
            if let prefix = fault.pathPrefix, !path.hasPrefix(prefix) { continue }
            if let part = fault.queryContains, !query.contains(part) { continue }
            if let probability = fault.probability {
                guard Double.random(in: 0..<1, using: &generator) < probability else { continue }
            }
            if let count = fault.count {
                if count <= 1 { faults.remove(at: index) } else { faults[index].count = count - 1 }
            }
            return fault
        }
        return nil
    }

    var now: Int64 { clock }
}
