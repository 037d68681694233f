import Foundation

/// What an upstream's HTTP traffic amounted to, for tests, `--dry-run` and benchmarks.
public struct HTTPStatistics: Sendable, Equatable {
    /// HTTP requests sent, retries included.
    public var requests: Int = 0
    /// Retries among them.
    public var retries: Int = 0
    /// Response body bytes received.
    public var bytesReceived: Int = 0
    /// 304 Not Modified answers.
    public var notModified: Int = 0
    /// Seconds spent waiting for `Retry-After` or a rate-limit reset.
    public var waitedSeconds: Double = 0

    public init() {}
}

/// Mutable state shared by concurrent requests of one session: statistics and the rate-limit
/// window the server announced.
final class SessionState: @unchecked Sendable {
    private let lock = NSLock()
    private var statistics = HTTPStatistics()
    /// When the server said the rate limit is exhausted: the instant (local monotonic-ish clock)
    /// it resets.
    private var rateLimitedUntil: Date?

    func read() -> HTTPStatistics { lock.withLock { statistics } }
    func update(_ change: (inout HTTPStatistics) -> Void) { lock.withLock { change(&statistics) } }
    func reset() { lock.withLock { statistics = HTTPStatistics() } }

    var rateLimitReset: Date? {
        get { lock.withLock { rateLimitedUntil } }
        set { lock.withLock { rateLimitedUntil = newValue } }
    }
}
