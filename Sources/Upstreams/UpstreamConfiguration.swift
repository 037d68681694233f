import Foundation

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
    /// Fields left out of every stored item (`tidemark.ignoreField`): JSON pointers (see
    /// ``IgnoredFields``). The engine leaves them out of what it stores; an adapter whose listing
    /// carries bodies leaves them out before it tags them, so that one changing alone is no change.
    public var ignoredFields: [String] = []

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

    /// The host the credentials among ``options`` go to over plain `http://`, when ``location``
    /// names one other than this machine: they cross the network unencrypted. Nil for https,
    /// loopback, or no credentials.
    package var hostGettingCredentialsInClear: String? {
        guard Credentials.optionKeys.contains(where: { options[$0] != nil }), let url = URL(string: location),
              url.scheme?.lowercased() == "http", let host = url.host?.lowercased() else { return nil }
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let loopback = bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1" || bare.hasPrefix("127.")
        return loopback ? nil : host
    }

    /// Whether two specs name the same upstream however they are spelled: the same kind, and the
    /// same location but for trailing slashes, or for `dir` the same folder once links are
    /// resolved (`dir:/srv/items/`, `dir:/mnt/link-to-srv/items`, `dir:../items` from
    /// `/srv/mirror`). Two clones of a mirror configured by hand on two machines often spell one
    /// folder or site differently.
    /// - Parameter base: the folder a relative `dir` location is relative to (the mirror's
    ///   working tree); without it a relative location matches only the same spelling.
    public static func sameUpstream(_ one: String, _ other: String, relativeTo base: String? = nil) -> Bool {
        guard one != other else { return true }
        let (a, b) = (UpstreamConfiguration(spec: one), UpstreamConfiguration(spec: other))
        guard a.kind == b.kind else { return false }
        func trimmed(_ location: String) -> Substring {
            var text = Substring(location)
            while text.count > 1, text.hasSuffix("/") { text = text.dropLast() }
            return text
        }
        if trimmed(a.location) == trimmed(b.location) { return true }
        guard a.kind == "dir", !a.location.isEmpty, !b.location.isEmpty else { return false }
        func folder(_ location: String) -> String? {
            let absolute = location.hasPrefix("/") ? location : base.map { URL(fileURLWithPath: location, relativeTo: URL(fileURLWithPath: $0, isDirectory: true)).path }
            return absolute.map { DirectoryUpstream.realPath(URL(fileURLWithPath: $0).standardizedFileURL.path) }
        }
        guard let first = folder(a.location), let second = folder(b.location) else { return false }
        return first == second
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
