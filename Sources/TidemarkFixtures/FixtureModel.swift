/// Which emulated API an admin operation targets.
public enum FixtureAPI: String, Sendable, CaseIterable {
    case docusign, wordpress, rest
}

/// A fault the fixture injects into matching requests (admin requests are never affected).
public struct FixtureFault: Sendable, Equatable {
    /// How the response body is spoiled.
    public enum Body: String, Sendable, Equatable {
        /// The normal body.
        case normal
        /// `Content-Length` of the full body, but only half of it, then the connection closes.
        case truncated
        /// Status 200 and a body that is not JSON.
        case malformed
        /// The connection is closed without any response.
        case drop
    }

    /// `Retry-After` sent with the status.
    public enum RetryAfter: Sendable, Equatable {
        case seconds(Int)
        /// An HTTP-date this many seconds after the fixture's current time.
        case httpDate(secondsFromNow: Int)
    }

    /// Status to answer instead of the real response (e.g. 503, 429); nil keeps the real one.
    public var status: Int?
    public var retryAfter: RetryAfter?
    /// Seconds to wait before answering.
    public var delay: Double
    /// Answers only after ``FixtureServer/releaseHeld()`` (at most 120 s later): a test changes the
    /// upstream while the request waits, however late a loaded machine lets it run (a `delay`
    /// can end before the test got to its change).
    public var held: Bool
    public var body: Body
    /// Only requests whose path starts with this are affected (nil: all).
    public var pathPrefix: String?
    /// How many matching requests are affected (nil: unlimited, or `probability`).
    public var count: Int?
    /// Fraction of matching requests affected, drawn from the fixture's seeded generator.
    public var probability: Double?
    /// Only requests whose query string contains this are affected (nil: all).
    public var queryContains: String?
    /// A JSON body served instead of the real one (with `status`, default 200), verbatim but for
    /// `{n}`, replaced by the number of requests the fixture has recorded (this one included), so
    /// that each answer can link a new next page; `{n6}` is that number in six digits (`000012`),
    /// which orders as text as it does as a number (a fraction of a second growing each time).
    public var replacementBody: String?
    /// Headers sent with `replacementBody`, with `{n}` replaced as in it (e.g. a `Link` to a next page).
    public var replacementHeaders: [String: String]
    /// A `Location` header sent with `status` (e.g. 302 and a URL or path to redirect to).
    public var location: String?

    public init(
        status: Int? = nil, retryAfter: RetryAfter? = nil, delay: Double = 0, held: Bool = false, body: Body = .normal,
        pathPrefix: String? = nil, count: Int? = nil, probability: Double? = nil, queryContains: String? = nil,
        replacementBody: String? = nil, replacementHeaders: [String: String] = [:], location: String? = nil
    ) {
        self.replacementHeaders = replacementHeaders
        self.location = location
        self.queryContains = queryContains
        self.replacementBody = replacementBody
        self.status = status
        self.retryAfter = retryAfter
        self.delay = delay
        self.held = held
        self.body = body
        self.pathPrefix = pathPrefix
        self.count = count
        self.probability = probability
    }
}

/// Where the emulated WordPress site serves its REST API (it always answers `?rest_route=` too).
public enum WordPressRoot: String, Sendable, CaseIterable {
    /// Pretty permalinks: `/wp-json/`.
    case wpJSON = "wp-json"
    /// PATHINFO permalinks: `/index.php/wp-json/`; `/wp-json/` is a 404, so only the home page's
    /// `Link` header finds it.
    case pathInfo = "index.php/wp-json"
    /// Plain permalinks: only `/?rest_route=`.
    case plain

    /// The path segments before the route, nil for plain permalinks.
    var prefix: [String]? {
        switch self {
        case .wpJSON: return ["wp-json"]
        case .pathInfo: return ["index.php", "wp-json"]
        case .plain: return nil
        }
    }
}

/// A request the fixture received.
public struct RecordedRequest: Sendable, Equatable {
    public var method: String
    /// Path as sent (percent-encoded).
    public var path: String
    /// Query string as sent, without `?`.
    public var query: String
    /// Header fields, names lowercased.
    public var headers: [String: String]

    /// The `Authorization` header, if one was sent.
    public var authorization: String? { headers["authorization"] }
}

struct Template: Sendable {
    var id: String
    var name: String
    var description: String
    var created: Int64
    var lastModified: Int64
    var inRecycleBin = false
}

struct Post: Sendable {
    var id: Int
    var type: String
    var status: String
    var slug: String
    var title: String
    var content: String
    var date: Int64  // seconds
    var modified: Int64  // seconds
}

struct RestItem: Sendable {
    var id: String
    var name: String
    var value: Int
    var lastModified: Int64  // ticks
}
