import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

/// Collects request records from concurrent tasks.
private final class Records: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [HTTPRequestRecord] = []
    var all: [HTTPRequestRecord] { lock.withLock { list } }
    func add(_ record: HTTPRequestRecord) { lock.withLock { list.append(record) } }
}

@Suite struct RequestObserverTests {
    @Test func everyAttemptIsObservedWithSecretsRedacted() async throws {
        try await withFixture(items: 3, token: canary) { server in
            let records = Records()
            let (base, clock) = virtualSettings()
            var settings = base
            settings.requestObserver = { records.add($0) }
            let http = try HTTPSession(
                base: try #require(URL(string: server.baseURL)),
                credentials: try Credentials(options: ["tokenEnv": "T"], environment: ["T": canary]), settings: settings)
            defer { Task { await http.shutdown() } }
            server.inject(FixtureFault(status: 503, pathPrefix: "/rest", count: 1))
            let url = try #require(URL(string: server.baseURL + "/rest/items?api_key=\(canary)&page=1"))
            let result = try await http.get(url)
            #expect(result.status == 200)
            let seen = records.all
            #expect(seen.map(\.status) == [503, 200] && seen.map(\.attempt) == [1, 2])
            #expect(seen.allSatisfy { $0.method == "GET" && $0.url.contains("api_key=***") && $0.url.contains("page=1") })
            #expect(seen[1].bytes == result.body.count && seen[1].failure == nil)
            #expect(!seen.contains { "\($0)".contains(canary) })
            #expect(clock.sleeps.count == 1)
            // A request with no response is observed with status 0 and the reason.
            server.inject(FixtureFault(body: .drop, pathPrefix: "/rest", count: 3))
            _ = try? await http.get(url)
            let failed = records.all.dropFirst(2)
            #expect(failed.count == 3 && failed.allSatisfy { $0.status == 0 && $0.failure != nil })
        }
    }
}
