import Foundation

/// Tunables of the HTTP layer. Defaults suit real services; tests shrink the delays.
public struct HTTPSettings: Sendable {
    /// Time allowed to open a TCP (and TLS) connection, in seconds.
    public var connectTimeout: Double
    /// Time allowed between two reads on a connection, in seconds.
    public var readTimeout: Double
    /// Time allowed for one whole request (head and body), in seconds.
    public var requestTimeout: Double
    /// Largest response body accepted, in bytes.
    public var maxBodyBytes: Int
    /// Attempts per request, including the first (at least 1).
    public var maxAttempts: Int
    /// Most items one listing of a collection may bring: past it, the listing fails. Paging that
    /// brings new ids page after page would otherwise go on (and take memory) for ever.
    public var maxListedItems: Int
    /// First retry delay, in seconds; doubled at each attempt, with jitter.
    public var baseDelay: Double
    /// Largest computed backoff delay, in seconds.
    public var maxDelay: Double
    /// Largest `Retry-After` (or rate-limit reset) wait honoured, in seconds. A server asking for a
    /// longer wait gets an error instead of a retry storm.
    public var maxRetryAfter: Double
    /// DocuSign's burst window, in seconds: how long requests wait after a response said
    /// `X-BurstLimit-Remaining: 0` without a `-Reset` (DocuSign documents none), or after a
    /// refusal for the burst limit (`BURST_APIINVOCATION_LIMIT_EXCEEDED`): a new window has begun
    /// by then.
    public var burstWindow: Double = 30
    /// Where time is read and waits happen; tests put a virtual clock here.
    public var clock: any HTTPClock
    /// Told about every request once it ends (`tidemark -v`); nil: nobody listens.
    public var requestObserver: HTTPRequestObserver?
    /// The certificates trusted instead of the system's (a private authority's); nil: the system's.
    public var trustedCertificates: TrustedCertificates?
    /// The environment the proxy is read from (``ProxyChoice``): the process's by default.
    public var proxyEnvironment: [String: String] = ProcessInfo.processInfo.environment

    public init(
        connectTimeout: Double = 10, readTimeout: Double = 30, requestTimeout: Double = 120,
        maxBodyBytes: Int = 32 << 20, maxAttempts: Int = 5, maxListedItems: Int = 1_000_000, baseDelay: Double = 0.5,
        maxDelay: Double = 30, maxRetryAfter: Double = 60, clock: any HTTPClock = SystemHTTPClock(),
        requestObserver: HTTPRequestObserver? = nil, trustedCertificates: TrustedCertificates? = nil
    ) {
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.requestTimeout = requestTimeout
        self.maxBodyBytes = maxBodyBytes
        self.maxAttempts = max(1, maxAttempts)
        self.maxListedItems = maxListedItems
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.clock = clock
        self.requestObserver = requestObserver
        self.trustedCertificates = trustedCertificates
    }

    /// These settings with the upstream options `maxAttempts` (1-20), `timeout` (seconds allowed
    /// for one request, 1-3600), `maxItems` (``maxListedItems``, 1-100,000,000) and `sslCAInfo`
    /// (``trustedCertificates``) applied. Without `sslCAInfo`, OpenSSL's variables `SSL_CERT_FILE`
    /// and `SSL_CERT_DIR` in `environment` name the certificates, as OpenSSL reads them
    /// (``TrustedCertificates/fromEnvironment(_:)``).
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` naming the option when a value is out of range.
    public func applying(_ options: [String: String],
                         environment: [String: String] = ProcessInfo.processInfo.environment) throws -> HTTPSettings {
        var settings = self
        settings.proxyEnvironment = environment
        if let path = options["sslCAInfo"] {
            settings.trustedCertificates = TrustedCertificates(path: path, source: "tidemark.sslCAInfo")
        } else if settings.trustedCertificates == nil {
            settings.trustedCertificates = TrustedCertificates.fromEnvironment(environment)
        }
        settings.maxAttempts = try positiveOption(options, "maxAttempts", default: maxAttempts, max: 20)
        settings.requestTimeout = Double(try positiveOption(options, "timeout", default: Int(requestTimeout), max: 3600))
        settings.readTimeout = min(readTimeout, settings.requestTimeout)
        settings.maxListedItems = try positiveOption(options, "maxItems", default: maxListedItems, max: 100_000_000)
        return settings
    }

    /// The backoff before retry number `attempt` (1 = first retry): exponential, capped, with
    /// "equal jitter" (between half and all of the exponential value).
    func backoff(attempt: Int) -> Double {
        let exponential = min(maxDelay, baseDelay * Double(1 << min(attempt - 1, 20)))
        return exponential / 2 + Double.random(in: 0...(exponential / 2))
    }
}
