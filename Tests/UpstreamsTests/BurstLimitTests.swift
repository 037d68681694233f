import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

/// DocuSign's burst limit (`X-BurstLimit-Limit/-Remaining/-Reset`), honoured like the hourly
/// `X-RateLimit-*` pair.
@Suite struct BurstLimitTests {
    static let account = "/restapi/v2.1/accounts/8f2c"

    func upstream(_ server: FixtureServer, settings: HTTPSettings) throws -> DocuSignUpstream {
        try DocuSignUpstream(
            UpstreamConfiguration(spec: "docusign:" + server.baseURL + Self.account,
                                  options: ["tokenEnv": "DS_TOKEN", "pageSize": "2"]),
            settings: settings, environment: ["DS_TOKEN": canary])
    }

    @Test func fixtureSendsBurstHeadersOnlyWhenEnabled() async throws {
        try await withFixture(items: 2, token: canary) { server in
            let session = try HTTPSession(
                base: URL(string: server.baseURL)!,
                credentials: Credentials(options: ["tokenEnv": "DS_TOKEN"], environment: ["DS_TOKEN": canary]))
            let url = URL(string: server.baseURL + Self.account + "/templates")!
            #expect(try await session.get(url).header("X-BurstLimit-Remaining") == nil)
            server.setBurstLimit(200)
            #expect(try await session.get(url).header("X-BurstLimit-Limit") == "200")
            #expect(try await session.get(url).header("X-BurstLimit-Remaining") == "198")
            // DocuSign documents no `X-BurstLimit-Reset`; the fixture sends one on request.
            #expect(try await session.get(url).header("X-BurstLimit-Reset") == nil)
            server.setBurstLimit(200, sendsReset: true)
            let before = Int64(Date().timeIntervalSince1970)
            let page = try await session.get(url)
            let after = Int64(Date().timeIntervalSince1970)
            // 30 s after the request was answered, and `Date` says when that was.
            let reset = try #require(page.header("X-BurstLimit-Reset").flatMap { Int64($0) })
            #expect(reset >= before + 30 && reset <= after + 30, "\(before) \(reset) \(after)")
            let date = try #require(page.header("Date").flatMap(HTTPDate.parse)?.date.timeIntervalSince1970)
            #expect(Int64(date) >= before && Int64(date) <= after, "\(before) \(date) \(after)")
            #expect(page.header("X-RateLimit-Remaining") != nil)
            server.setBurstLimit(nil)
            #expect(try await session.get(url).header("X-BurstLimit-Remaining") == nil)
            await session.shutdown()
        }
    }

    @Test func exhaustedBurstWaitsForTheResetInsteadOfHittingTheLimit() async throws {
        try await withFixture(items: 4, token: canary) { server in
            // Real waiting: the fixture's window runs on the wall clock. One request per 2-second
            // window, opened by the first request; the listing needs two pages.
            server.setBurstLimit(1, window: 2, sendsReset: true)
            try await using(try upstream(server, settings: fastSettings)) { docusign in
                let (listing, seconds) = try await timed { try await docusign.list(collection: "templates", since: nil, cached: .none) }
                #expect(listing.items.count == 4)
                #expect(listing.requests == 2)
                #expect(docusign.statistics.retries == 0)
                // It waited for the reset, unless the machine took that long itself before the
                // second page (at least 1 s: `Date` counts whole seconds, so a first answer at
                // the end of one reads as a window of a second).
                #expect(docusign.statistics.waitedSeconds > 0 || seconds >= 1, "\(seconds) s")
                #expect(docusign.statistics.waitedSeconds <= 2)
            }
            #expect(server.burstRejections == 0)
        }
    }

    /// The first page says 2 burst requests remain of 3 per 2-second window: the other 5 pages,
    /// fetched up to 8 at once otherwise, go out 2, then 1 at a time after each reset, and none
    /// is refused.
    @Test func parallelPagesStayWithinTheBurstLimit() async throws {
        try await withFixture(items: 12, token: canary) { server in
            server.setBurstLimit(3, window: 2, sendsReset: true)
            var settings = fastSettings
            settings.maxRetryAfter = 60
            let docusign = try DocuSignUpstream(
                UpstreamConfiguration(spec: "docusign:" + server.baseURL + Self.account,
                                      options: ["tokenEnv": "DS_TOKEN", "pageSize": "2"], jobs: 8),
                settings: settings, environment: ["DS_TOKEN": canary])
            try await using(docusign) { docusign in
                let listing = try await docusign.list(collection: "templates", since: nil, cached: .none)
                #expect(listing.items.count == 12)
                #expect(listing.requests == 6)
                #expect(docusign.statistics.retries == 0)
            }
            #expect(server.burstRejections == 0)
        }
    }

    @Test func burstResetBeyondTheCapFailsClearlyWithoutWaiting() async throws {
        try await withFixture(items: 4, token: canary) { server in
            server.setBurstLimit(1, window: 600, sendsReset: true)
            let (settings, clock) = virtualSettings()
            try await using(try upstream(server, settings: settings)) { docusign in
                let (error, elapsed) = await timed {
                    await upstreamError { _ = try await docusign.list(collection: "templates", since: nil, cached: .none) }
                }
                let text = error?.description ?? ""
                // The reset is 600 s after the window opened (by the response's Date, in whole
                // seconds: up to one less), less the time the run took since (rounded up).
                // Not sent: no 429 came (it said "HTTP 429 from" a URL never asked for).
                let marker = "not sent: the server's burst limit is exhausted (X-BurstLimit-Remaining: 0 in an earlier response) for another "
                let seconds = text.range(of: marker).flatMap { Int(text[$0.upperBound...].prefix { $0.isNumber }) }
                #expect(seconds.map { Double($0) >= 599 - elapsed && $0 <= 600 } == true, "\(text), \(elapsed) s")
                #expect(text.contains("more than the 5 s this run waits"), "\(text)")
                #expect(clock.sleeps.isEmpty)
                #expect(server.requestCount() == 1)
            }
            #expect(server.burstRejections == 0)
        }
    }

    @Test func burstWaitIsMeasuredOnTheSessionClock() async throws {
        try await withFixture(items: 4, token: canary) { server in
            // Virtual clock: the wait is recorded, not slept. The fixture still enforces its
            // 20-second window on the wall clock, so the request after the (virtual) wait is
            // refused; what is checked is the wait asked for: the reset, 20 s after the first request.
            server.setBurstLimit(1, window: 20, sendsReset: true)
            var (settings, clock) = virtualSettings()
            settings.maxAttempts = 1
            settings.maxRetryAfter = 60
            try await using(try upstream(server, settings: settings)) { docusign in
                let (error, elapsed) = await timed {
                    await upstreamError { _ = try await docusign.list(collection: "templates", since: nil, cached: .none) }
                }
                let first = try #require(clock.sleeps.first, "\(String(describing: error))")
                // The reset (by the response's Date, in whole seconds: up to one less) less the
                // real time between that response and the next request (the virtual clock moves
                // with the real one until it waits).
                #expect(first >= 19 - elapsed && first <= 20, "\(clock.sleeps), \(elapsed) s")
                #expect(docusign.statistics.waitedSeconds == first)
                #expect(error?.description.contains("BURST_APIINVOCATION_LIMIT_EXCEEDED") == true)
            }
            #expect(server.burstRejections == 1)
        }
    }

    /// DocuSign sends `X-BurstLimit-Remaining` without a reset: at 0, later requests wait one
    /// burst window (`HTTPSettings.burstWindow`) instead of meeting the refusal.
    @Test func withoutAResetTheNextRequestWaitsOneWindow() async throws {
        try await withFixture(items: 4, token: canary) { server in
            server.setBurstLimit(1, window: 2)
            var settings = fastSettings
            settings.burstWindow = 3
            try await using(try upstream(server, settings: settings)) { docusign in
                let (listing, seconds) = try await timed { try await docusign.list(collection: "templates", since: nil, cached: .none) }
                #expect(listing.items.count == 4)
                #expect(listing.requests == 2)
                #expect(docusign.statistics.retries == 0)
                // It waited, unless the machine took that long itself before the second page.
                #expect(docusign.statistics.waitedSeconds > 0 || seconds >= 3, "\(seconds) s")
                #expect(docusign.statistics.waitedSeconds <= 3)
            }
            #expect(server.burstRejections == 0)
        }
    }

    /// A refusal for the burst limit, answered 429 or (as some of DocuSign's services do) 400
    /// with `BURST_APIINVOCATION_LIMIT_EXCEEDED` and no header saying when, is retried once a
    /// burst window has passed (a 400 was not retried at all).
    @Test(arguments: [429, 400])
    func aBurstRefusalIsRetriedAfterOneWindow(status: Int) async throws {
        try await withFixture(items: 4, token: canary) { server in
            server.inject(FixtureFault(status: status, pathPrefix: Self.account + "/templates", count: 1, replacementBody:
                #"{"errorCode": "BURST_APIINVOCATION_LIMIT_EXCEEDED", "message": "The maximum number of API invocations per burst window has been exceeded."}"#))
            var settings = fastSettings
            settings.burstWindow = 1.5
            try await using(try upstream(server, settings: settings)) { docusign in
                let (listing, seconds) = try await timed { try await docusign.list(collection: "templates", since: nil, cached: .none) }
                #expect(listing.items.count == 4)
                #expect(docusign.statistics.retries == 1)
                // A wait for the burst window (a backoff is not counted as one), unless the machine
                // took that long itself before the retry (a full test run's load once did).
                #expect(docusign.statistics.waitedSeconds > 0 || seconds >= 1.5, "\(seconds) s")
                #expect(docusign.statistics.waitedSeconds <= 1.5)
            }
        }
    }

    /// A template's download refused for the burst limit with 400 is retried too (the download
    /// reads 400 answers for `TEMPLATE_ID_INVALID`, and took this one for a failure).
    @Test func aDownloadRefusedWith400ForTheBurstIsRetried() async throws {
        try await withFixture(items: 2, token: canary) { server in
            var settings = fastSettings
            settings.burstWindow = 1.5
            try await using(try upstream(server, settings: settings)) { docusign in
                let listing = try await docusign.list(collection: "templates", since: nil, cached: .none)
                let item = try #require(listing.items.first)
                server.inject(FixtureFault(status: 400, pathPrefix: Self.account + "/templates/" + item.id.description, count: 1,
                                           replacementBody: #"{"errorCode": "BURST_APIINVOCATION_LIMIT_EXCEEDED", "message": "burst"}"#))
                guard case .body = try await docusign.fetch(collection: "templates", item: item, cachedETag: nil) else {
                    Issue.record("expected a body"); return
                }
                #expect(docusign.statistics.retries == 1)
                #expect(docusign.statistics.waitedSeconds > 0)
            }
        }
    }
}
