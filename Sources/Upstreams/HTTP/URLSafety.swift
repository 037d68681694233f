import Foundation

/// An origin (RFC 6454): scheme, host and port. Credentials are only sent to the upstream's own.
public struct Origin: Sendable, Hashable, CustomStringConvertible {
    public let scheme: String
    public let host: String
    public let port: Int

    /// The origin of `url`, or nil when it has no http(s) scheme or no host.
    public init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
    }

    public var description: String { "\(scheme)://\(host):\(port)" }
}

/// Checks and redaction of URLs that come from configuration or from upstream.
public enum URLSafety {
    /// Whether query parameter `name` carries a secret: refused in a spec URL, its value redacted
    /// from messages and logs (one rule for both). Names are compared lowercased with everything
    /// but letters and digits removed (`X-Amz-Signature`, `api-key`, `Private_Token`), against
    /// ``secretNames`` and the endings in ``secretSuffixes``; paging cursors such as `pageToken`
    /// (``cursorNames``) are not secrets.
    static func isSecretParameter(_ name: String) -> Bool {
        let key = String(name.lowercased().unicodeScalars.filter { ("a"..."z").contains($0) || ("0"..."9").contains($0) })
        if secretNames.contains(key) { return true }
        if cursorNames.contains(key) { return false }
        return secretSuffixes.contains { key.hasSuffix($0) }
    }

    /// Normalized parameter names that are secrets as a whole word (`key`, but not `sortkey`).
    static let secretNames: Set<String> = [
        "key", "auth", "authorization", "bearer", "sig", "jwt", "pass", "pwd", "session", "otp",
    ]

    /// Normalized endings of secret parameter names (`access_token`, `X-Amz-Credential`, `jsessionid`).
    static let secretSuffixes = [
        "token", "secret", "password", "passwd", "passphrase", "signature", "apikey", "credential", "credentials",
        "sessionid", "sessid", "sessionkey", "privatekey", "secretkey", "accesskey", "authkey",
    ]

    /// Normalized names of paging cursors that end like a secret but are not one.
    static let cursorNames: Set<String> = [
        "pagetoken", "nextpagetoken", "nexttoken", "continuationtoken", "resumptiontoken", "synctoken",
        "skiptoken", "deltatoken",
    ]

    /// Parses an upstream location given in a spec and refuses URLs that carry credentials.
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` for a non-http(s) URL, a URL with
    ///   `user:pass@`, or a token in a query, a path parameter (`;name=`) or the fragment. The
    ///   message never repeats the secret.
    ///   `option`: the option the URL comes from (`itemURL`), named instead of the spec's location.
    public static func specURL(_ text: String, kind: String, example: String, option: String? = nil) throws -> URL {
        guard !text.isEmpty else {
            throw UpstreamError.invalidConfiguration("\(kind) upstream needs a URL: \(kind):\(example)")
        }
        guard let components = URLComponents(string: text), let url = components.url, Origin(url) != nil else {
            throw UpstreamError.invalidConfiguration(option.map { "option \($0) is not an http(s) URL with a host: '\(redact(text))' (expected \(example))" }
                ?? "\(kind) upstream location is not an http(s) URL with a host: '\(redact(text))' (expected \(kind):\(example))")
        }
        // "rest upstream URL", or "rest option itemURL".
        let kind = option.map { "\(kind) option \($0)" } ?? "\(kind) upstream URL"
        if components.user != nil || components.password != nil {
            throw UpstreamError.invalidConfiguration(
                "\(kind) must not embed credentials (user:password@); "
                    + "use the tokenEnv, tokenCommand or basicEnv option instead")
        }
        if let name = queryNames(components.percentEncodedQuery).first(where: isSecretParameter) {
            throw UpstreamError.invalidConfiguration(
                "\(kind) must not carry a secret in its query ('\(name)='); "
                    + "use the tokenEnv, tokenCommand or basicEnv option instead")
        }
        // Path parameters (`;access_token=...`) carry secrets as a query does.
        let pathParameters = components.percentEncodedPath.split(separator: "/").flatMap { $0.split(separator: ";").dropFirst() }
        if let name = pathParameters.map({ String($0.prefix { $0 != "=" }) }).first(where: isSecretParameter) {
            throw UpstreamError.invalidConfiguration(
                "\(kind) must not carry a secret in its path (';\(name)='); "
                    + "use the tokenEnv, tokenCommand or basicEnv option instead")
        }
        // A fragment never reaches the server; a token in it (`#access_token=`, as OAuth's
        // implicit flow returns one) would only be stored.
        if let name = queryNames(components.percentEncodedFragment).first(where: isSecretParameter) {
            throw UpstreamError.invalidConfiguration(
                "\(kind) must not carry a secret in its fragment ('#\(name)='): a server never sees it; "
                    + "use the tokenEnv, tokenCommand or basicEnv option instead")
        }
        return url
    }

    /// `url` as text with user info and the values of secret-looking query parameters replaced
    /// by `***`.
    public static func redact(_ url: URL) -> String { redact(url.absoluteString) }

    /// Like ``redact(_:)-(URL)`` for URL text; text that is not a URL is returned unchanged.
    public static func redact(_ text: String) -> String {
        guard var components = URLComponents(string: text) else { return text }
        var changed = false
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
            changed = true
        }
        if let query = components.percentEncodedQuery {
            var redacted = ""
            for parameter in query.split(omittingEmptySubsequences: false, whereSeparator: separatesParameters) {
                if parameter.contains("="), isSecretParameter(parameterName(parameter)) {
                    redacted += parameter.prefix { $0 != "=" } + "=***"
                    changed = true
                } else {
                    redacted += parameter
                }
                if parameter.endIndex < query.endIndex { redacted.append(query[parameter.endIndex]) }
            }
            components.percentEncodedQuery = redacted
        }
        guard changed else { return text }
        return components.string ?? text
    }

    /// The names of a percent-encoded query's parameters, decoded (``parameterName(_:)``).
    static func queryNames(_ query: String?) -> [String] {
        (query ?? "").split(whereSeparator: separatesParameters).map(parameterName)
    }

    /// Whether `character` ends a query parameter: `&`, and `;`, which many servers take as a
    /// separator too (`?x=1;access_token=...` carries a token).
    private static func separatesParameters(_ character: Character) -> Bool { character == "&" || character == ";" }

    /// The name of a percent-encoded parameter (`name=value`), decoded.
    private static func parameterName(_ parameter: Substring) -> String {
        let name = String(parameter.prefix { $0 != "=" })
        return name.removingPercentEncoding ?? name
    }

    /// `url` with the query parameters in `parameters` set (replacing any of the same name).
    static func setting(_ parameters: [(String, String)], in url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        var items = components.queryItems ?? []
        for (name, value) in parameters {
            items.removeAll { $0.name == name }
            items.append(URLQueryItem(name: name, value: value))
        }
        components.percentEncodedQuery = items.map {
            encodeQuery($0.name) + ($0.value.map { "=" + encodeQuery($0) } ?? "")
        }.joined(separator: "&")
        return components.url ?? url
    }

    /// Percent-encodes a query name or value (everything but RFC 3986 unreserved characters and `,`).
    static func encodeQuery(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~,/:")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Percent-encodes `text` as one path segment (so `/`, `?`, `#`, `%` and `..` stay data). Dots
    /// stay as they are (`v1.2`, `a.b.c`: servers that match routes undecoded find them) unless
    /// the text is `.` or holds `..`: then all are encoded, so that no server decoding `%2F`
    /// before it resolves dot segments reads a `../` in it.
    static func encodePathSegment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-_~.")
        let encoded = text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
        guard text == "." || text.contains("..") else { return encoded }
        return encoded.replacingOccurrences(of: ".", with: "%2E")
    }

    /// `base` with `segments` appended, each percent-encoded as one path segment.
    static func appending(_ segments: [String], to base: URL) -> URL {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else { return base }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        for segment in segments { path += "/" + encodePathSegment(segment) }
        components.percentEncodedPath = path
        return components.url ?? base
    }
}
