import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

/// HTTP settings with tiny backoff delays so retry tests stay fast. The timeouts are generous:
/// the full suite starves the fixture's threads for seconds on a 2-core machine, and a timeout
/// there is a retry that changes the request counts tests check (tests of timeouts set their own).
let fastSettings = HTTPSettings(
    connectTimeout: 10, readTimeout: 30, requestTimeout: 60, maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.05,
    maxRetryAfter: 5)

let canary = "CANARY-7f3a9c-SECRET"

/// A clock that never sleeps: each wait is recorded and moves its time forward, so tests check
/// the exact waits the HTTP layer asked for, however loaded the machine is.
final class VirtualClock: HTTPClock, @unchecked Sendable {
    private let lock = NSLock()
    private var offset: Double = 0
    private var recorded: [Double] = []

    /// The waits asked for so far, in order.
    var sleeps: [Double] { lock.withLock { recorded } }
    var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
    func sleep(seconds: Double) async throws {
        try Task.checkCancellation()
        lock.withLock {
            recorded.append(seconds)
            offset += max(0, seconds)
        }
    }
}

/// `fastSettings` on a fresh virtual clock.
func virtualSettings() -> (HTTPSettings, VirtualClock) {
    let clock = VirtualClock()
    var settings = fastSettings
    settings.clock = clock
    return (settings, clock)
}

/// Starts a fixture, runs `body`, stops the fixture even when `body` throws.
func withFixture<T>(
    items: Int = 0, seed: UInt64 = 1, token: String? = nil, basic: (user: String, password: String)? = nil,
    _ body: (FixtureServer) async throws -> T
) async throws -> T {
    let server = try await FixtureServer.start(items: items, seed: seed, token: token, basic: basic)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// Runs `body` with an upstream and shuts it down afterwards.
func using<U: Upstream, T>(_ upstream: U, _ body: (U) async throws -> T) async throws -> T {
    do {
        let result = try await body(upstream)
        await upstream.shutdown()
        return result
    } catch {
        await upstream.shutdown()
        throw error
    }
}

/// The error `body` throws, or a test failure if it throws none.
func upstreamError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> UpstreamError? {
    do {
        try await body()
        Issue.record("expected an UpstreamError, got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as UpstreamError {
        return error
    } catch {
        Issue.record("expected an UpstreamError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

extension Listing {
    var idStrings: [String] { items.map(\.id.description) }
}

/// Seconds elapsed while running `body`.
func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
    let start = Date()
    let value = try await body()
    return (value, Date().timeIntervalSince(start))
}

/// Polls `condition` every 10 ms until it holds; fails after `seconds` (a minute: a loaded
/// 2-core machine has kept test tasks from running for 20 s and more).
func waitUntil(seconds: Double = 60, _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("condition not met within \(seconds) s", sourceLocation: sourceLocation)
            return
        }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
}

/// Cached versions holding `ids` (no validators), as a mirror's manifest would list them.
struct ListedIDs: CachedVersions {
    let ids: [ItemID]
    var count: Int { ids.count }
    func position(of id: ItemID) -> Int? { ids.firstIndex(of: id) }
    func id(at position: Int) -> ItemID { ids[position] }
    func etag(at position: Int) -> String? { nil }
    func loaded() throws -> any CachedVersions { self }
}
