import AsyncHTTPClient
import Foundation
import Testing
import TidemarkFixtures
@testable import Upstreams

/// Transport failures: which ones are retried, how long they take and what the error says.
@Suite struct HTTPSessionTests {
    /// A refused connection fails each attempt at once (no pool reconnecting until the connect
    /// timeout), so five attempts with short backoffs end long before a single connect timeout,
    /// and the error says what happened instead of "HTTP 0". (Alone this takes 0.1 s; in the full
    /// suite, starved of threads on a 2-core machine, up to 20 s, hence the 60 s timeout.)
    @Test func refusedConnectionFailsFastAndSaysSo() async throws {
        var settings = fastSettings
        settings.connectTimeout = 60
        settings.maxAttempts = 5
        let rest = try RestUpstream(UpstreamConfiguration(spec: "rest:http://127.0.0.1:1/items"), settings: settings)
        try await using(rest) { rest in
            let (error, seconds) = await timed {
                await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
            }
            #expect(error == .unreachable("cannot connect to http://127.0.0.1:1/items: connection refused; gave up after 5 attempts"))
            #expect(rest.statistics.requests == 5)
            #expect(seconds < 45)
        }
    }

    /// A redirect loop cannot end well on another attempt: it fails after one request.
    @Test func redirectLoopIsNotRetried() async throws {
        try await withFixture(items: 3) { server in
            server.inject(FixtureFault(status: 302, pathPrefix: "/rest/items", location: "/rest/items"))
            let rest = try RestUpstream(UpstreamConfiguration(spec: "rest:" + server.baseURL + "/rest/items"),
                                        settings: fastSettings)
            try await using(rest) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error == .http(status: 0, url: server.baseURL + "/rest/items", message: "redirect loop"))
                #expect(error?.description == "request to \(server.baseURL)/rest/items failed: redirect loop")
                #expect(server.requestCount() == 1)
                #expect(rest.statistics.retries == 0)
            }
        }
    }

    @Test func transportFailuresAreClassified() {
        #expect(HTTPSession.transportFailure(HTTPClientError.readTimeout).isRetryable)
        #expect(HTTPSession.transportFailure(HTTPClientError.remoteConnectionClosed).isRetryable)
        #expect(HTTPSession.transportFailure(HTTPClientError.connectTimeout).isConnecting)
        #expect(!HTTPSession.transportFailure(HTTPClientError.redirectLimitReached).isRetryable)
        #expect(!HTTPSession.transportFailure(HTTPClientError.redirectCycleDetected).isRetryable)
        #expect(!HTTPSession.transportFailure(HTTPClientError.invalidURL).isRetryable)
        #expect(!HTTPSession.transportFailure(HTTPClientError.unsupportedScheme("ftp")).isRetryable)
    }
}
