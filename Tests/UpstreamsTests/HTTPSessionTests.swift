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
    /// suite, starved of threads on a 2-core machine, 20 s and once 51 s; five connect timeouts
    /// would take 300 s, so the limit is 120 s.)
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
            #expect(seconds < 120)
        }
    }

    /// `https://` to a server that speaks plain HTTP is named as such, once: it was BoringSSL's
    /// `WRONG_VERSION_NUMBER` with a build path, after five attempts.
    @Test func httpsToAPlainHTTPServerSaysSoAtOnce() async throws {
        try await withFixture(items: 1) { server in
            let url = server.baseURL.replacingOccurrences(of: "http://", with: "https://") + "/rest/items"
            let rest = try RestUpstream(UpstreamConfiguration(spec: "rest:" + url), settings: fastSettings)
            try await using(rest) { rest in
                let error = await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
                #expect(error?.description.contains("the server does not speak TLS on this port (https:// for a plain-http server?)") == true,
                        "\(String(describing: error))")
                #expect(rest.statistics.requests == 1)
            }
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

    /// `timeout` bounds the whole request: a server that sends its body a byte at a time (each
    /// byte well within the read timeout) fails the attempt once the request timeout has passed.
    /// The body never ends, so without that bound the listing would never return. Two attempts
    /// of 1 s take about 2.5 s alone; in the full suite on a 2-core machine, starved of threads,
    /// one CI run took 23.6 s, so the limit is 50 s, under the test's 1-minute time limit.
    @Test(.timeLimit(.minutes(1))) func aBodySentSlowlyTimesOutAsAWhole() async throws {
        let server = try DripServer()
        defer { server.stop() }
        var settings = fastSettings
        settings.requestTimeout = 1
        settings.readTimeout = 5
        settings.maxAttempts = 2
        let rest = try RestUpstream(UpstreamConfiguration(spec: "rest:http://127.0.0.1:\(server.port)/items"), settings: settings)
        try await using(rest) { rest in
            let (error, seconds) = await timed {
                await upstreamError { _ = try await rest.list(collection: "items", since: nil, cached: .none) }
            }
            #expect(error == .http(status: 0, url: "http://127.0.0.1:\(server.port)/items", message: "request timed out; gave up after 2 attempts"))
            #expect(seconds >= 2 && seconds < 50, "\(seconds) s")
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
        // TLS: an untrusted certificate, or one for another host, is said so, once, without the
        // build's source paths BoringSSL's errors carry.
        struct Described: Error, CustomStringConvertible { let description: String }
        let untrusted = HTTPSession.transportFailure(Described(description: "handshakeFailed(sslError([Error: 268435581 "
            + "error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at /work/x/.build/checkouts/swift-nio-ssl/handshake.cc:393]))"))
        #expect(!untrusted.isRetryable && untrusted.text.hasPrefix("the server's TLS certificate could not be verified"))
        let otherHost = HTTPSession.transportFailure(Described(description: "NIOSSLExtraError.failedToValidateHostname: x"))
        #expect(!otherHost.isRetryable && otherHost.text == "the server's TLS certificate is not for this host name")
        let other = HTTPSession.transportFailure(Described(description: "sslError([Error: 1 error:SOMETHING at /a/b/c.cc:12])"))
        #expect(other.isRetryable && other.text == "connection failed (sslError([Error: 1 error:SOMETHING]))", "\(other.text)")
    }
}

/// A server on 127.0.0.1 that answers every request with a chunked JSON body sent one byte every
/// 0.2 s, forever (until the client goes away or ``stop()``).
final class DripServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let stopped = NSLock()
    private var isStopped = false

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 8) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in
            while case let client = accept(listener, nil, nil), client >= 0 {
                Thread { self.drip(client) }.start()
            }
        }.start()
    }

    private func drip(_ client: Int32) {
        defer { close(client) }
        var request = [UInt8](repeating: 0, count: 4096)
        _ = recv(client, &request, request.count, 0)
        let head = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n[\r\n".utf8)
        guard send(client, head, head.count, Int32(MSG_NOSIGNAL)) == head.count else { return }
        let chunk = Array("1\r\n \r\n".utf8)
        while !stopped.withLock({ isStopped }), send(client, chunk, chunk.count, Int32(MSG_NOSIGNAL)) == chunk.count {
            usleep(200_000)
        }
    }

    func stop() {
        stopped.withLock { isStopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
