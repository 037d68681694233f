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
    /// Each redirect hop is a request of its own: observed (so `-v` shows it) and counted. The
    /// token goes to the upstream's origin only: a hop to another origin gets no Authorization.
    @Test func redirectHopsAreObservedAndTheTokenStaysHome() async throws {
        try await withFixture(items: 3, token: canary) { server in
            try await withFixture(items: 3) { foreign in
                let records = Records()
                var settings = fastSettings
                settings.requestObserver = { records.add($0) }
                let http = try HTTPSession(
                    base: try #require(URL(string: server.baseURL)),
                    credentials: try Credentials(options: ["tokenEnv": "T"], environment: ["T": canary]), settings: settings)
                defer { Task { await http.shutdown() } }
                server.inject(FixtureFault(status: 301, pathPrefix: "/rest/old", count: 1, location: "/rest/items?page=1"))
                let moved = try await http.get(try #require(URL(string: server.baseURL + "/rest/old")))
                #expect(moved.status == 200)
                // Where the response came from, which its relative links resolve against.
                #expect(moved.url.absoluteString == server.baseURL + "/rest/old")
                #expect(moved.finalURL.absoluteString == server.baseURL + "/rest/items?page=1")
                #expect(records.all.map(\.status) == [301, 200] && records.all.allSatisfy { $0.attempt == 1 })
                #expect(records.all.last?.url == server.baseURL + "/rest/items?page=1")
                #expect(http.statistics.requests == 2 && http.statistics.retries == 0)
                #expect(server.requests.allSatisfy { $0.authorization == "Bearer " + canary })

                server.inject(FixtureFault(status: 302, pathPrefix: "/rest/away", count: 1, location: foreign.baseURL + "/rest/items"))
                let away = try await http.get(try #require(URL(string: server.baseURL + "/rest/away")))
                #expect(away.status == 200)
                #expect(foreign.requestCount() == 1 && foreign.requests.allSatisfy { $0.authorization == nil })
                #expect(records.all.suffix(2).map(\.status) == [302, 200])
                // A 401 there is not blamed on credentials it was never sent.
                server.inject(FixtureFault(status: 302, pathPrefix: "/rest/locked", count: 1, location: foreign.baseURL + "/rest/locked"))
                foreign.inject(FixtureFault(status: 401, pathPrefix: "/rest/locked", count: 1))
                let locked = await upstreamError { _ = try await http.get(try #require(URL(string: server.baseURL + "/rest/locked"))) }
                #expect(locked?.description.contains("tidemark sends credentials only to the upstream's origin") == true, "\(String(describing: locked))")
                #expect(locked?.description.contains("were refused") == false)
                // Nor is a 400 (WordPress refuses a private status to a request without them).
                server.inject(FixtureFault(status: 302, pathPrefix: "/rest/status", count: 1, location: foreign.baseURL + "/rest/status"))
                foreign.inject(FixtureFault(status: 400, pathPrefix: "/rest/status", count: 1,
                                            replacementBody: #"{"code": "rest_invalid_param", "message": "Invalid parameter(s): status"}"#))
                let refused = await upstreamError { _ = try await http.get(try #require(URL(string: server.baseURL + "/rest/status"))) }
                #expect(refused?.description.contains("(rest_invalid_param: Invalid parameter(s): status); tidemark sends credentials only to "
                                                      + "the upstream's origin") == true, "\(String(describing: refused))")

                // Six hops are one too many.
                for hop in 0..<6 {
                    server.inject(FixtureFault(status: 307, pathPrefix: "/rest/hop\(hop)", count: 1, location: "/rest/hop\(hop + 1)"))
                }
                let error = await upstreamError { _ = try await http.get(try #require(URL(string: server.baseURL + "/rest/hop0"))) }
                #expect(error == .http(status: 0, url: server.baseURL + "/rest/hop5", message: "too many redirects (more than 5)"))
            }
        }
    }

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
