/// How to reach an upstream: what `tidemark clone` was given, as stored under `[tidemark]` in
/// `.git/config`. It names where credentials come from, never the credentials themselves.
public struct UpstreamConfiguration: Sendable, Equatable {
    /// `<kind>:<location>`, e.g. `dir:/srv/items` or `wordpress:https://example.org`.
    public var spec: String
    /// Collections to mirror; empty means the kind's default.
    public var collections: [String]
    /// Kind-specific options (`itemsPath`, `idField`, `tokenEnv`, ...), by git config key name.
    public var options: [String: String]
    /// Requests at once: item downloads, and DocuSign listing pages (at most 8).
    public var jobs: Int

    public init(spec: String, collections: [String] = [], options: [String: String] = [:], jobs: Int = 8) {
        self.spec = spec
        self.collections = collections
        self.options = options
        self.jobs = jobs
    }

    /// The kind: the text before the first `:` of the spec.
    public var kind: String { spec.split(separator: ":", maxSplits: 1).first.map(String.init) ?? "" }
    /// The location: the text after the first `:` of the spec.
    public var location: String {
        guard let colon = spec.firstIndex(of: ":") else { return "" }
        return String(spec[spec.index(after: colon)...])
    }
}

/// Builds the adapter a configuration names.
public enum UpstreamFactory {
    /// The upstream kinds tidemark knows.
    public static let kinds = ["dir", "docusign", "wordpress", "rest"]

    /// Makes the adapter for `configuration`.
    /// - Parameter settings: HTTP tunables and the request observer of the HTTP adapters
    ///   (`dir` makes no requests and ignores them).
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` for an unknown kind or bad options.
    public static func make(_ configuration: UpstreamConfiguration,
                            settings: HTTPSettings = HTTPSettings()) throws -> any Upstream {
        switch configuration.kind {
        case "dir":
            return try DirectoryUpstream(configuration)
        case "docusign":
            return try DocuSignUpstream(configuration, settings: try settings.applying(configuration.options))
        case "wordpress":
            return try WordPressUpstream(configuration, settings: try settings.applying(configuration.options))
        case "rest":
            return try RestUpstream(configuration, settings: try settings.applying(configuration.options))
        default:
            throw UpstreamError.invalidConfiguration(
                "unknown upstream kind '\(configuration.kind)' in '\(configuration.spec)' (known: \(kinds.joined(separator: ", ")))")
        }
    }
}
