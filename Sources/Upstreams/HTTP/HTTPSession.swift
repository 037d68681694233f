import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// The HTTP client of one upstream: GET with timeouts, a body size limit, retries with backoff,
/// `Retry-After` and rate-limit handling, conditional requests, counting, and credentials that
/// are only ever sent to the upstream's own origin.
///
/// Paging links and redirects that point to another origin are followed *without* the
/// `Authorization` header. Redirects are followed here, not by async-http-client, so that each
/// hop is a request of its own: counted, and shown by the request observer (`-v`).
/// Call ``shutdown()`` when done.
public final class HTTPSession: Sendable {
    /// The origin credentials are sent to.
    public let origin: Origin
    /// The tunables in use.
    public let settings: HTTPSettings
    /// The credential source; also redacts secrets from messages.
    public let credentials: Credentials
    /// Whether the upstream takes HTTP Basic credentials (`basicEnv`), which a refusal's advice names.
    public let takesBasic: Bool
    private let client: HTTPClient
    /// The proxy requests go through (from the environment), nil for none.
    public let proxy: ProxyChoice?
    private let state = SessionState()

    /// Creates a session for `base` (whose origin receives the credentials).
    public init(base: URL, credentials: Credentials, settings: HTTPSettings = HTTPSettings(), takesBasic: Bool = true) throws {
        guard let origin = Origin(base) else {
            throw UpstreamError.invalidConfiguration("not an http(s) URL: \(URLSafety.redact(base))")
        }
        self.origin = origin
        self.settings = settings
        self.credentials = credentials
        self.takesBasic = takesBasic
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(
                connect: .milliseconds(Int64(settings.connectTimeout * 1000)),
                read: .milliseconds(Int64(settings.readTimeout * 1000))))
        configuration.httpVersion = .automatic
        // The engine bounds downloads by `--jobs` (at most 256); the pool must not cap them at
        // its default of 8 connections per host.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 256
        // A failed connection fails the request at once, so that `get` retries it with its own
        // backoff and attempt count. Left on, the pool keeps reconnecting until the connect
        // timeout, so a refused connection took the whole timeout on every attempt.
        configuration.connectionPool.retryConnectionEstablishment = false
        if let trusted = settings.trustedCertificates { configuration.tlsConfiguration = try trusted.clientConfiguration() }
        proxy = try ProxyChoice.forURL(base, environment: settings.proxyEnvironment)
        configuration.proxy = proxy?.configuration
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Requests made, bytes received, retries and waits so far.
    public var statistics: HTTPStatistics { state.read() }

    /// Sets the statistics back to zero.
    public func resetStatistics() { state.reset() }

    /// Closes the connections. The session cannot be used afterwards.
    public func shutdown() async {
        try? await client.shutdown()
    }

    /// GETs `url` and returns a 2xx or 304 response, or one whose status is in `acceptStatuses`.
    ///
    /// Retries connection errors, timeouts, 5xx and 429 up to `settings.maxAttempts` attempts (not
    /// a redirect loop or an invalid URL, which fail at once),
    /// waiting `Retry-After` when given (seconds or HTTP-date) and an exponential backoff with
    /// jitter otherwise. When `X-RateLimit-Remaining` or `X-BurstLimit-Remaining` reached 0, later
    /// requests wait for the matching `-Reset` (capped by `settings.maxRetryAfter`, else they fail).
    /// - Parameter validator: from ``HTTPResult/validator`` of an earlier response, for a
    ///   conditional request: an ETag is sent as `If-None-Match`, a `Last-Modified` date as
    ///   `If-Modified-Since` (304 → status 304, empty body).
    /// - Throws: ``UpstreamError/http(status:url:message:)`` naming the URL with secrets redacted
    ///   (status 0 when no response arrived), ``UpstreamError/unreachable(_:)`` ("cannot connect to
    ///   <url>: connection refused; gave up after 5 attempts") when no connection could be made, or
    ///   ``UpstreamError/credentials(_:)``.
    public func get(_ url: URL, validator: String? = nil, acceptStatuses: Set<Int> = []) async throws -> HTTPResult {
        try await redactingErrors { try await attempts(url, validator: validator, acceptStatuses: acceptStatuses) }
    }

    /// `body`, whose ``UpstreamError`` loses the secrets of ``credentials``: whatever the server
    /// echoed into it (an error body, a URL of its paging, a listed field) is quoted without them.
    func redactingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as UpstreamError {
            throw error.redacted(by: credentials)
        }
    }

    /// Whether `url` still serves something: false on a 404 or 410, or a 400 whose error code is
    /// one of `goneCodes` (the item is gone); another failure throws, as
    /// ``get(_:validator:acceptStatuses:)`` does.
    func answers(_ url: URL, goneCodes: Set<String> = []) async throws -> Bool {
        try await answering(url, goneCodes: goneCodes) != nil
    }

    /// The response of `url` while it still serves something; nil on a 404 or 410, or a 400
    /// whose error code is one of `goneCodes` (the item is gone: DocuSign documents only 400 for
    /// a template id it does not know, `TEMPLATE_ID_INVALID`). Another failure throws, as
    /// ``get(_:validator:acceptStatuses:)`` does.
    func answering(_ url: URL, goneCodes: Set<String> = []) async throws -> HTTPResult? {
        let result = try await get(url, acceptStatuses: goneCodes.isEmpty ? [404, 410] : [400, 404, 410])
        return try result.status == 404 || result.status == 410 || isGone(result, goneCodes: goneCodes) ? nil : result
    }

    /// True for a 400 answer whose error code is one of `goneCodes` (accepted to read it); a 400
    /// with another code throws (``badRequest(_:)``); false for any other status.
    private func isGone(_ result: HTTPResult, goneCodes: Set<String>) throws -> Bool {
        guard result.status == 400 else { return false }
        guard let code = result.errorCode, goneCodes.contains(code) else { throw badRequest(result) }
        return true
    }

    /// The error a 400 answer `result` (accepted to read its error code) is otherwise thrown as.
    private func badRequest(_ result: HTTPResult) -> UpstreamError {
        .http(status: 400, url: URLSafety.redact(result.finalURL),
              message: CQuoting.quoted("Bad Request") + result.shownErrorCode(redacting: credentials))
    }

    private func attempts(_ url: URL, validator: String?, acceptStatuses: Set<Int>) async throws -> HTTPResult {
        guard Origin(url) != nil else {
            throw UpstreamError.http(status: 0, url: URLSafety.redact(url), message: "not an http(s) URL")
        }
        // Where the request goes now: `url`, or where redirects led.
        var current = url
        var visited: Set<String> = [url.absoluteString]
        var attempt = 0
        var redirected = false
        // The wait before the request about to be made (a retry's, a rate limit's), for `-v`.
        var waited: String?
        // Whether a refused token was renewed for this request (once at most).
        var renewed = false
        while true {
            // A redirect is the same attempt, going elsewhere; so is a request made again with a
            // renewed token.
            if !redirected { attempt += 1 }
            redirected = false
            let shownURL = URLSafety.redact(current)
            let credential = Origin(current) == origin ? try await credentials.resolve() : nil
            // Said once, by this request's record (a redirect's next hop waited for nothing).
            let waitedBefore = try await waitForRateLimit(url: shownURL) ?? waited
            waited = nil
            var request = HTTPClientRequest(url: current.absoluteString)
            request.method = .GET
            request.headers.add(name: "Accept", value: "application/json")
            request.headers.add(name: "User-Agent", value: "tidemark")
            if let credential { request.headers.add(name: "Authorization", value: credential.authorizationHeader) }
            if let validator, !validator.isEmpty {
                if validator.hasPrefix(HTTPResult.lastModifiedPrefix) {
                    request.headers.add(name: "If-Modified-Since", value: String(validator.dropFirst(HTTPResult.lastModifiedPrefix.count)))
                } else {
                    request.headers.add(name: "If-None-Match", value: validator)
                }
            }
            state.update {
                $0.requests += 1
                if attempt > 1 { $0.retries += 1 }
            }

            let failure: String
            var transport: TransportFailure?
            var retryAfter: Double?
            var status = 0
            let started = ContinuousClock.now
            let observe = { (status: Int, bytes: Int, failure: String?) in
                guard let observer = self.settings.requestObserver else { return }
                let elapsed = ContinuousClock.now - started
                let ms = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
                var record = HTTPRequestRecord(method: "GET", url: self.credentials.redact(shownURL), status: status,
                                               bytes: bytes, milliseconds: ms, attempt: attempt, failure: failure)
                record.waited = waitedBefore
                observer(record)
            }
            do {
                // `requestTimeout` covers the whole request: the client's own timeout ends with
                // the response head, and a body sent a byte at a time would hold a run forever.
                let deadline = ContinuousClock.now + .milliseconds(Int64(settings.requestTimeout * 1000))
                let response = try await client.execute(
                    request, timeout: .milliseconds(Int64(settings.requestTimeout * 1000)))
                status = Int(response.status.code)
                let body = try await Self.collect(response.body, upTo: settings.maxBodyBytes, deadline: deadline)
                let headers = response.headers.map { ($0.name, $0.value) }
                state.update { $0.bytesReceived += body.count }
                observe(status, body.count, nil)
                let result = HTTPResult(url: url, finalURL: current, status: status, headers: headers, body: body)
                noteRateLimit(result)
                if Self.redirectStatuses.contains(status), let location = result.header("Location") {
                    current = try Self.redirectTarget(location, from: current, visited: &visited, shownURL: shownURL)
                    redirected = true
                    continue
                }
                if (200..<300).contains(status), let encoding = result.header("Content-Encoding"),
                   !["", "identity"].contains(encoding.trimmingCharacters(in: .whitespaces).lowercased()) {
                    // Asked for without Accept-Encoding: a compressed body would only fail as "not JSON".
                    throw UpstreamError.http(status: status, url: shownURL,
                                             message: "the body came encoded (Content-Encoding: \(CQuoting.quoted(encoding))), "
                                                + "which tidemark does not ask for and cannot read")
                }
                // DocuSign refuses a request past its limits by error code, with 429 or (as some
                // of its services still do) 400: retried as a 429 is, after the burst window
                // (never an answer a caller accepts, a 400 it reads the code of).
                let limitCode = (status == 400 || status == 429) && (result.errorCode.map(Self.limitErrorCodes.contains) ?? false)
                if (200..<300).contains(status) || (acceptStatuses.contains(status) && !limitCode) {
                    if let credential { credentials.accepted(credential) }
                    return result
                }
                if status == 304 {
                    state.update { $0.notModified += 1 }
                    return result
                }
                let shown = CQuoting.quoted(credentials.redact(response.status.reasonPhrase)) + result.shownErrorCode(redacting: credentials)
                if limitCode, result.errorCode == Self.burstLimitCode { startBurstWindow() }
                // A token refused during a long run (expired): a `tokenCommand` gives a new one,
                // and the request is made again with it at once.
                if status == 401, !renewed, let credential, try await credentials.renewed(after: credential) != nil {
                    renewed = true
                    redirected = true
                    waited = "a new token from tokenCommand"
                    continue
                }
                guard status == 429 || (500..<600).contains(status) || (status == 400 && limitCode) else {
                    // Refused for want of credentials that were never given: say how to give them;
                    // refused with those given: say where they came from.
                    var hint = ""
                    if (status == 400 || status == 401 || status == 403) && Origin(current) != origin && credentials.isConfigured {
                        // A link, redirect or item URL to another origin, followed without the credentials.
                        hint = "; tidemark sends credentials only to the upstream's origin (\(origin)), "
                            + "not to this one, which a link, a redirect or tidemark.itemURL (after the upstream moved?) led to"
                    } else if (status == 401 || status == 403) && !credentials.isConfigured {
                        hint = "; no credentials are configured: give --token-env VAR"
                            + (takesBasic ? ", --token-command CMD or --basic-env USER_VAR:PASS_VAR " : " or --token-command CMD ")
                            + "to clone (git config tidemark.tokenEnv VAR, ... in a mirror)"
                    } else if status == 401 {
                        hint = "; the credentials \(credentials.origin) were refused\(renewed ? " (also the new token it printed when run again)" : ""): check them, or give others "
                            + (takesBasic ? "(git config tidemark.tokenEnv, tidemark.tokenCommand or tidemark.basicEnv)"
                                          : "(git config tidemark.tokenEnv or tidemark.tokenCommand)")
                    }
                    throw UpstreamError.http(status: status, url: shownURL, message: shown + hint)
                }
                failure = shown
                if let value = result.header("Retry-After") {
                    retryAfter = Self.retryAfterSeconds(value, serverDate: result.header("Date"), now: settings.clock.now)
                }
            } catch let error as UpstreamError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch let error as NIOTooManyBytesError {
                _ = error
                observe(status, 0, "body over the size limit")
                throw UpstreamError.http(
                    status: status, url: shownURL,
                    message: "response body larger than the \(settings.maxBodyBytes)-byte limit")
            } catch {
                var found = Self.transportFailure(error, trusting: settings.trustedCertificates)
                if let proxy, found.isConnecting {
                    if proxy.hasCredentials, (error as? HTTPClientError) == .proxyAuthenticationRequired {
                        found.text = "the proxy refused the credentials its variable gives (407)"
                    }
                    found.text += " (through the proxy \(proxy.address) that \(proxy.variable) names)"
                }
                transport = found
                failure = credentials.redact(found.text)
                observe(status, 0, failure)
                guard found.isRetryable else { throw found.error(url: shownURL, message: failure) }
            }

            guard attempt < settings.maxAttempts else {
                let message = "\(failure); gave up after \(attempt) attempt\(attempt == 1 ? "" : "s")"
                if let transport { throw transport.error(url: shownURL, message: message) }
                throw UpstreamError.http(status: status, url: shownURL, message: message)
            }
            let delay: Double
            if let retryAfter {
                guard retryAfter <= settings.maxRetryAfter else {
                    throw UpstreamError.http(
                        status: status, url: shownURL,
                        message: "\(failure); server asks to retry after \(formatSeconds(retryAfter.rounded(.up))) s, "
                            + "more than the \(formatSeconds(settings.maxRetryAfter)) s this run waits; try again later")
                }
                delay = max(0, retryAfter)
                state.update { $0.waitedSeconds += delay }
                waited = "\(formatSeconds(delay)) s for Retry-After"
            } else {
                delay = settings.backoff(attempt: attempt)
                waited = "\(formatSeconds((delay * 10).rounded() / 10)) s backoff"
            }
            try await settings.clock.sleep(seconds: delay)
        }
    }

    /// The whole body, or `HTTPClientError.deadlineExceeded` once `deadline` passes (the
    /// reading task is cancelled, which ends the request).
    static func collect(_ body: HTTPClientResponse.Body, upTo limit: Int, deadline: ContinuousClock.Instant) async throws -> Data {
        try await withThrowingTaskGroup(of: Data?.self) { group in
            group.addTask { Data(try await body.collect(upTo: limit).readableBytesView) }
            group.addTask {
                try await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let data = first else { throw HTTPClientError.deadlineExceeded }
            return data
        }
    }

    /// Seconds to wait for a `Retry-After` value: delay-seconds, or an HTTP-date measured against
    /// the response's `Date` header when present (so local clock skew does not matter).
    static func retryAfterSeconds(_ value: String, serverDate: String?, now localNow: Date = Date()) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return Double(max(0, seconds)) }
        // Digits past Int's range: a wait longer than any run takes (it was read as no header).
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ (48...57).contains($0) }) { return Double(trimmed) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        let now = serverDate.flatMap(HTTPDate.parse)?.date ?? localNow
        return max(0, date.date.timeIntervalSince(now))
    }

    /// The rate-limit header pairs honoured: DocuSign's hourly `X-RateLimit-*` and its 30-second
    /// `X-BurstLimit-*`.
    static let limitHeaders = ["X-RateLimit", "X-BurstLimit"]

    /// DocuSign's error code for a request refused past its burst limit (30 s windows).
    static let burstLimitCode = "BURST_APIINVOCATION_LIMIT_EXCEEDED"
    /// DocuSign's error codes for a request refused past one of its limits: retried as a 429.
    static let limitErrorCodes: Set<String> = [burstLimitCode, "HOURLY_APIINVOCATION_LIMIT_EXCEEDED"]

    /// Requests that may still be sent before a rate limit is reached: the fewest any limit pair
    /// announced as `Remaining` in its current window; nil when no response announced one.
    public var requestBudget: Int? { state.fewestRemaining }

    /// Records `<limit>-Remaining: 0` with its `<limit>-Reset` (epoch seconds) for each limit pair;
    /// a positive `Remaining` clears that limit. Within one window (the same `-Reset`) the fewest
    /// remaining counts, so a late response of a parallel request cannot undo a 0.
    private func noteRateLimit(_ result: HTTPResult) {
        for limit in Self.limitHeaders {
            guard let announced = result.header(limit + "-Remaining")
                .flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
            else { continue }
            let resetText = result.header(limit + "-Reset")?.trimmingCharacters(in: .whitespaces)
            let remaining = state.noteRemaining(limit, announced, reset: resetText)
            guard remaining <= 0 else {
                state.setLimitReset(limit, nil)
                continue
            }
            guard let reset = resetText.flatMap(Double.init) else {
                // DocuSign sends no `X-BurstLimit-Reset`: a new window has begun one window on.
                if limit == "X-BurstLimit" { startBurstWindow() }
                continue
            }
            // Measure the wait against the server's clock, then apply it to ours.
            let localNow = settings.clock.now
            let serverNow = result.header("Date").flatMap(HTTPDate.parse)?.date ?? localNow
            state.setLimitReset(limit, localNow.addingTimeInterval(max(0, reset - serverNow.timeIntervalSince1970)))
        }
    }

    /// Holds requests for one burst window from now, unless a reset is due already: DocuSign
    /// announces an exhausted burst limit, or refuses a request past it, without saying when it resets.
    private func startBurstWindow() {
        let now = settings.clock.now
        state.setLimitResetIfNone("X-BurstLimit", now.addingTimeInterval(settings.burstWindow), now: now)
    }

    /// Waits until every announced limit reset has passed, or fails when one is too far away;
    /// returns the wait in words (`12 s for X-BurstLimit`), nil when there was none.
    private func waitForRateLimit(url: String) async throws -> String? {
        guard let (limit, reset) = state.latestLimitReset else { return nil }
        let wait = reset.timeIntervalSince(settings.clock.now)
        guard wait > 0 else {
            for name in Self.limitHeaders { state.setLimitReset(name, nil) }
            return nil
        }
        guard wait <= settings.maxRetryAfter else {
            let kind = limit == "X-BurstLimit" ? "burst limit" : "rate limit"
            // The request is not sent: no 429 came, an earlier response announced the limit.
            throw UpstreamError.http(
                status: 0, url: url,
                message: "not sent: the server's \(kind) is exhausted (\(limit)-Remaining: 0 in an earlier response) for another "
                    + "\(formatSeconds(wait.rounded(.up))) s, more than the \(formatSeconds(settings.maxRetryAfter)) s this run waits; "
                    + "try again after the reset")
        }
        state.update { $0.waitedSeconds += wait }
        try await settings.clock.sleep(seconds: wait)
        return "\(formatSeconds(wait.rounded(.up))) s for \(limit)"
    }

    /// Why a request got no response, in a few words, and whether to try again.
    struct TransportFailure: Equatable {
        /// E.g. "connection refused", "read timed out".
        var text: String
        /// True when no connection could be made (refused, unreachable, DNS, connect timeout).
        var isConnecting: Bool
        /// False when another attempt cannot succeed (a redirect loop, an invalid URL).
        var isRetryable: Bool

        /// The error to throw: ``UpstreamError/unreachable(_:)`` ("cannot connect to <url>: ...")
        /// when no connection was made, else ``UpstreamError/http(status:url:message:)`` with status 0.
        func error(url: String, message: String) -> UpstreamError {
            isConnecting ? .unreachable("cannot connect to \(url): \(message)") : .http(status: 0, url: url, message: message)
        }
    }

    /// Classifies a transport error; `trusted` names the certificates trusted instead of the system's.
    static func transportFailure(_ error: any Error, trusting trusted: TrustedCertificates? = nil) -> TransportFailure {
        func connecting(_ text: String) -> TransportFailure { TransportFailure(text: text, isConnecting: true, isRetryable: true) }
        func transient(_ text: String) -> TransportFailure { TransportFailure(text: text, isConnecting: false, isRetryable: true) }
        func final(_ text: String) -> TransportFailure { TransportFailure(text: text, isConnecting: false, isRetryable: false) }
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return connecting("connection timed out")
            case .tlsHandshakeTimeout: return connecting("TLS handshake timed out")
            case .readTimeout: return transient("read timed out")
            case .deadlineExceeded: return transient("request timed out")
            case .remoteConnectionClosed: return transient("connection closed by the server")
            case .redirectLimitReached: return final("too many redirects (more than \(maxRedirects))")
            case .redirectCycleDetected: return final("redirect loop")
            case .proxyAuthenticationRequired: return TransportFailure(text: "the proxy asks for credentials (407): give them in its "
                                                                      + "variable, http://user:password@host:port", isConnecting: true, isRetryable: false)
            case .invalidProxyResponse: return connecting("the proxy refused the connection (CONNECT)")
            case .httpProxyHandshakeTimeout: return connecting("the proxy did not answer in time")
            case .invalidURL, .emptyHost, .emptyScheme: return final("invalid URL")
            case _ where String(describing: error).hasPrefix("HTTPClientError.unsupportedScheme"):
                return final("redirect to a URL that is not http(s)")
            default: return transient("connection failed (\(error))")
            }
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil { return connecting("cannot resolve host '\(error.host)'") }
            let reasons = error.connectionErrors.compactMap { ($0.error as? IOError).flatMap { socketReason($0.errnoCode) } }
            return connecting(reasons.first ?? "connection failed (\(error))")
        case let error as IOError:
            if error.errnoCode == ECONNREFUSED || error.errnoCode == ENETUNREACH || error.errnoCode == EHOSTUNREACH {
                return connecting(socketReason(error.errnoCode) ?? "connection failed")
            }
            return transient(socketReason(error.errnoCode) ?? "connection failed (\(error))")
        default:
            let text = String(describing: error)
            // BoringSSL's words for a server that answered the TLS handshake in plain HTTP: no
            // other attempt speaks TLS to it.
            if text.contains("WRONG_VERSION_NUMBER") {
                return TransportFailure(text: "the server does not speak TLS on this port (https:// for a plain-http server?)",
                                        isConnecting: true, isRetryable: false)
            }
            // A certificate this machine does not trust, or not for this host: no other attempt
            // trusts it either (it was retried five times, and shown as BoringSSL's words with
            // the path of a source file of the build).
            if text.contains("CERTIFICATE_VERIFY_FAILED") {
                let why = trusted.map { (trusted) -> String in
                    "against \(trusted.described): expired, self-signed, or issued by an authority not among them"
                        + (trusted.source == "tidemark.sslCAInfo" ? "" : " (name its certificate in tidemark.sslCAInfo: "
                            + "clone --option sslCAInfo=<file.pem>, or git config tidemark.sslCAInfo <file.pem> in a mirror)")
                }
                    ?? "(expired, self-signed, or issued by an authority this machine does not trust: add the authority to the "
                    + "system's (/etc/ssl/certs), or name its certificate in tidemark.sslCAInfo: clone --option sslCAInfo=<file.pem>, "
                    + "or git config tidemark.sslCAInfo <file.pem> in a mirror)"
                return TransportFailure(text: "the server's TLS certificate could not be verified " + why,
                                        isConnecting: true, isRetryable: false)
            }
            if text.contains("failedToValidateHostname") {
                return TransportFailure(text: "the server's TLS certificate is not for this host name",
                                        isConnecting: true, isRetryable: false)
            }
            return transient("connection failed (\(withoutSourcePaths(text)))")
        }
    }

    /// `text` without the source file paths BoringSSL's errors name (` at /.../handshake.cc:393`).
    static func withoutSourcePaths(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let range = rest.range(of: " at /") {
            result += rest[..<range.lowerBound]
            rest = rest[range.upperBound...].drop { !"])\n,".contains($0) }
        }
        return result + rest
    }

    /// A socket error number in words, for the ones users meet.
    private static func socketReason(_ code: Int32) -> String? {
        switch code {
        case ECONNREFUSED: return "connection refused"
        case ECONNRESET: return "connection reset by the server"
        case ENETUNREACH: return "network unreachable"
        case EHOSTUNREACH: return "host unreachable"
        case ETIMEDOUT: return "connection timed out"
        default: return nil
        }
    }

    /// Redirects followed per request.
    static let maxRedirects = 5

    /// The statuses whose `Location` is followed.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Where a redirect from `current` to `location` leads; throws, naming `shownURL`, for a
    /// target that is not http(s), one already visited (a loop), or one hop too many.
    static func redirectTarget(_ location: String, from current: URL, visited: inout Set<String>,
                               shownURL: String) throws -> URL {
        func failure(_ message: String) -> UpstreamError { .http(status: 0, url: shownURL, message: message) }
        guard let target = URL(string: location, relativeTo: current)?.absoluteURL, Origin(target) != nil else {
            throw failure("redirect to a URL that is not http(s)")
        }
        guard visited.insert(target.absoluteString).inserted else { throw failure("redirect loop") }
        guard visited.count <= maxRedirects + 1 else { throw failure("too many redirects (more than \(maxRedirects))") }
        return target
    }
}

extension HTTPSession {
    /// Downloads one item's body: a conditional GET when `cachedValidator` allows it for the
    /// listed version (see ``HTTPResult/conditional(_:listedVersion:)``), 304 as `.notModified`,
    /// and a body that is not JSON (or, with `requireObject`, not a JSON object) as a malformed item,
    /// as is one whose `versionField` (a key, or a JSON pointer; nil: none) dates it before the listed version.
    /// `notJSONHint` ends the message refusing markup (an HTML page) as the body. With `bodyPath`
    /// (a JSON pointer) the item is the value there, not the whole response (JSON:API's `/data`):
    /// the checks read it, and it is what is returned.
    /// A 404 or 410, or a 400 whose error code is one of `goneCodes`, is
    /// ``UpstreamError/goneSinceListed(collection:item:reason:)``: the item was deleted after the
    /// listing named it. `problem` finds what else makes a body another item's
    /// (a malformed item, its text saying why).
    func downloadItem(_ url: URL, collection: String, item: ListedItem, cachedValidator: String?,
                      requireObject: Bool, versionField: String?, notJSONHint: String = "", bodyPath: String? = nil,
                      goneCodes: Set<String> = [],
                      problem: (JSONValue) -> String? = { _ in nil }) async throws -> FetchedBody {
        let result: HTTPResult
        do {
            result = try await get(url, validator: HTTPResult.conditional(cachedValidator, listedVersion: item.lastModified),
                                   acceptStatuses: goneCodes.isEmpty ? [] : [400])
        } catch UpstreamError.http(let status, let shownURL, let message) where status == 404 || status == 410 {
            throw UpstreamError.goneSinceListed(
                collection: collection, item: CQuoting.quoted(item.id),
                reason: UpstreamError.http(status: status, url: shownURL, message: message).description
                    + " after the listing named it (deleted upstream meanwhile)")
        }
        if try isGone(result, goneCodes: goneCodes) {
            throw UpstreamError.goneSinceListed(collection: collection, item: CQuoting.quoted(item.id),
                                                reason: badRequest(result).description + " after the listing named it (deleted upstream meanwhile)")
        }
        if result.status == 304 { return .notModified }
        var value: JSONValue
        switch Result(catching: { () throws(JSONParseError) in try JSONValue.parse(result.body, maxValues: JSONValue.maxItemValues) }) {
        case .success(let parsed): value = parsed
        case .failure(let error):
            // Markup (a login page, a single-page app's index for every path) says where it came from.
            let context = result.looksLikeMarkup || result.finalURL != result.url
                ? " from \(URLSafety.redact(result.url))" + result.notJSONContext(redact: credentials.redact) + notJSONHint : ""
            throw UpstreamError.malformedItem(collection: collection, item: CQuoting.quoted(item.id), reason: "body is \(error.summary)\(context)")
        }
        var body = result.body
        if let bodyPath {
            guard let inner = value.at(pointer: bodyPath) else {
                throw UpstreamError.malformedItem(
                    collection: collection, item: CQuoting.quoted(item.id),
                    reason: "\(URLSafety.redact(url)) has no value at bodyPath '\(bodyPath)'" + (value.quotedKeys.map { " (it has \($0))" } ?? "")
                        + "; not stored")
            }
            value = inner
            body = inner.serialized()
        }
        if requireObject, case .object = value {} else if requireObject {
            throw UpstreamError.malformedItem(collection: collection, item: CQuoting.quoted(item.id), reason: "body is not a JSON object")
        }
        if let problem = problem(value) {
            throw UpstreamError.malformedItem(collection: collection, item: CQuoting.quoted(item.id),
                                              reason: "\(URLSafety.redact(url)) \(problem); not stored")
        }
        // A body older than the listing says (a cache or replica in front of the item URL that
        // lags): stored under the listed version, it would never be downloaded again. Compared at
        // the coarser of the two resolutions: a body may write the listed instant less precisely.
        if let versionField, let served = bodyVersion(of: value, field: versionField),
           served.isBefore(atCoarserResolution: item.lastModified) {
            throw UpstreamError.malformedItem(
                collection: collection, item: CQuoting.quoted(item.id),
                reason: "\(URLSafety.redact(url)) served an older version (\(versionField) \(served.raw)) than the listing "
                    + "names (\(item.lastModified.raw)), from a cache in front of it maybe; not stored, asked for again next run")
        }
        // A validator holding a credential (a server echoing the token) is not kept: it would be
        // written into the manifest, and so into every snapshot.
        return .body(body, etag: result.validator.flatMap { credentials.redact($0) == $0 ? $0 : nil })
    }
}

extension HTTPResult {
    /// ``errorCode`` for a message, ` (code)`, or empty: the secrets of `credentials` taken out
    /// first (an echoed token), then at most 100 characters, quoted like git quotes names when it
    /// holds a control character (the server's text must not drive a terminal).
    /// ` (code: message; param: why)` from a JSON error body, redacted and at most 300
    /// characters; empty when the body says nothing of the kind. Read as the common shapes write
    /// them: WordPress's `code`, `message` and `data.params`; DocuSign's `errorCode`; `error` as a
    /// code beside `message` or `error_description` (OAuth), or as an object of `code` and
    /// `message`; RFC 7807's `title` and `detail`; JSON:API's and GraphQL's `errors` list.
    func shownErrorCode(redacting credentials: Credentials) -> String {
        guard case .object(let fields)? = try? JSONValue.parse(body) else { return "" }
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let text)? where !text.isEmpty: return text
            case .integer(let number)?: return String(number)
            default: return nil
            }
        }
        var inner = fields
        if case .object(let error)? = fields["error"] { inner = error }
        if case .array(let errors)? = fields["errors"], case .object(let first)? = errors.first { inner = first }
        let code = text(fields["code"]) ?? text(fields["errorCode"]) ?? text(fields["error"]) ?? text(inner["code"]) ?? text(inner["title"])
        let message = text(fields["message"]) ?? text(fields["error_description"]) ?? text(fields["detail"])
            ?? text(inner["message"]) ?? text(inner["detail"])
        var shown = [code, message].compactMap({ $0 }).joined(separator: ": ")
        guard !shown.isEmpty else { return "" }
        if case .object(let data)? = fields["data"], case .object(let params)? = data["params"] {
            for (name, why) in params.members {
                if case .string(let reason) = why { shown += "; \(name): \(reason)" }
            }
        }
        return " (\(CQuoting.excerpt(shown, limit: 300, redact: credentials.redact)))"
    }
}
