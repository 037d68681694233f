/// One HTTP request as a session saw it, for `--verbose` logs and progress lines.
///
/// It never holds credentials: the URL has user info and secret query parameters redacted, and
/// the `Authorization` header is not part of it.
public struct HTTPRequestRecord: Sendable, Equatable {
    /// The HTTP method, e.g. `GET`.
    public var method: String
    /// The URL, secrets redacted.
    public var url: String
    /// The response status; 0 when no response arrived.
    public var status: Int
    /// Response body bytes received.
    public var bytes: Int
    /// Milliseconds from sending the request to the end of the body (or the failure).
    public var milliseconds: Int
    /// The attempt number: 1 for the first, 2 and more for retries.
    public var attempt: Int
    /// Why no usable response arrived (timeout, connection error), secrets redacted.
    public var failure: String?
    /// The wait before this request, when there was one (`3 s for Retry-After`, `1.2 s backoff`,
    /// `30 s for X-BurstLimit`): a run that pauses says why.
    public var waited: String?

    public init(method: String, url: String, status: Int, bytes: Int, milliseconds: Int,
                attempt: Int = 1, failure: String? = nil) {
        self.method = method
        self.url = url
        self.status = status
        self.bytes = bytes
        self.milliseconds = milliseconds
        self.attempt = attempt
        self.failure = failure
    }
}

/// Receives a record after each HTTP request; called from concurrent tasks.
public typealias HTTPRequestObserver = @Sendable (HTTPRequestRecord) -> Void
