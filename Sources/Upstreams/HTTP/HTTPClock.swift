import Foundation

/// Where the HTTP layer reads the time and waits (backoff, `Retry-After`, rate-limit resets).
///
/// The default is the system clock. Tests substitute a virtual clock to check each wait exactly
/// without sleeping, so their results do not depend on how loaded the machine is.
public protocol HTTPClock: Sendable {
    /// The current time.
    var now: Date { get }
    /// Waits `seconds` (or returns at once when the clock is virtual). Throws on cancellation.
    func sleep(seconds: Double) async throws
}

/// The system's wall clock and `Task.sleep`.
public struct SystemHTTPClock: HTTPClock {
    public init() {}
    public var now: Date { Date() }
    public func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
    }
}
