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
    /// For each exhausted limit (`X-RateLimit`, `X-BurstLimit`): the instant (on the session's
    /// clock) it resets.
    private var limitedUntil: [String: Date] = [:]
    /// For each limit announced: the fewest requests left in its current window (named by its
    /// `-Reset` value), however the responses of parallel requests arrive.
    private var windows: [String: (remaining: Int, reset: String?)] = [:]

    func read() -> HTTPStatistics { lock.withLock { statistics } }
    func update(_ change: (inout HTTPStatistics) -> Void) { lock.withLock { change(&statistics) } }
    func reset() { lock.withLock { statistics = HTTPStatistics() } }

    /// Sets (or with nil clears) when the limit named by header prefix `limit` resets.
    func setLimitReset(_ limit: String, _ date: Date?) { lock.withLock { limitedUntil[limit] = date } }

    /// Sets `limit`'s reset to `date` unless one after `now` is set already (each response of a
    /// window without a reset of its own would push it later).
    func setLimitResetIfNone(_ limit: String, _ date: Date, now: Date) {
        lock.withLock {
            if let set = limitedUntil[limit], set > now { return }
            limitedUntil[limit] = date
        }
    }

    /// Records that a response said `remaining` requests are left of `limit` in the window ending
    /// at `reset`; returns the fewest left in that window so far.
    func noteRemaining(_ limit: String, _ remaining: Int, reset: String?) -> Int {
        lock.withLock {
            if let window = windows[limit], window.reset == reset, reset != nil {
                windows[limit] = (min(window.remaining, remaining), reset)
            } else {
                windows[limit] = (remaining, reset)
            }
            return windows[limit]?.remaining ?? remaining
        }
    }

    /// The fewest requests left in any announced limit's window; nil when none was announced.
    var fewestRemaining: Int? { lock.withLock { windows.values.map(\.remaining).min() } }

    /// The exhausted limit that resets last, if any.
    var latestLimitReset: (limit: String, until: Date)? {
        lock.withLock { limitedUntil.max { $0.value < $1.value }.map { ($0.key, $0.value) } }
    }
}
