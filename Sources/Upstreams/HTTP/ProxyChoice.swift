import AsyncHTTPClient
import Foundation

/// The proxy requests to an upstream go through, read from the environment as curl (git's HTTP
/// transport) reads it: `https_proxy` (or `HTTPS_PROXY`) for an https upstream, `http_proxy` for
/// an http one (not `HTTP_PROXY`, which a CGI server sets from a request's `Proxy:` header),
/// else `all_proxy` (or `ALL_PROXY`); none for a host `no_proxy` (or `NO_PROXY`) names, nor for
/// this machine (`localhost`, `127.0.0.1`, `::1`).
///
/// A proxy is `[http://][user:password@]host[:port]` (port 1080 when left out, as curl takes it)
/// or `socks5://host[:port]`; requests go through it by `CONNECT`, plain http too.
public struct ProxyChoice: Sendable, Equatable {
    /// The proxy's host and port, for messages (never its credentials).
    public let address: String
    /// The variable it came from, for messages.
    public let variable: String
    let configuration: HTTPClient.Configuration.Proxy
    /// Whether the proxy's variable gives credentials.
    public var hasCredentials: Bool { configuration.authorization != nil }

    /// The proxy for requests to `url`, nil for none.
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` naming the variable when its value is no proxy tidemark can use.
    public static func forURL(_ url: URL, environment: [String: String]) throws -> ProxyChoice? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let names = (scheme == "https" ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy"]) + ["all_proxy", "ALL_PROXY"]
        guard let variable = names.first(where: { !(environment[$0] ?? "").isEmpty }), let value = environment[variable] else { return nil }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        if ["localhost", "127.0.0.1", "::1"].contains(bare) || bare.hasPrefix("127.") { return nil }
        let exceptions = environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
        for entry in exceptions.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) where !entry.isEmpty {
            if entry == "*" { return nil }
            // `example.org` and `.example.org` both take example.org and every name below it.
            let domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            let name = domain.split(separator: ":").first.map(String.init) ?? domain
            if bare == name || bare.hasSuffix("." + name) { return nil }
        }
        return try parse(value, variable: variable)
    }

    static func parse(_ value: String, variable: String) throws -> ProxyChoice {
        func invalid(_ why: String) -> UpstreamError {
            .invalidConfiguration("\(variable) names no proxy tidemark can use: \(why) (it takes [http://][user:password@]host[:port] "
                                  + "or socks5://host[:port])")
        }
        let text = value.contains("://") ? value : "http://" + value
        guard let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(), let host = parts.host, !host.isEmpty else {
            throw invalid("not a URL")
        }
        let port = parts.port ?? 1080
        guard (1...65535).contains(port) else { throw invalid("port \(port) is out of range") }
        let address = "\(host):\(port)"
        switch scheme {
        case "http":
            var proxy = HTTPClient.Configuration.Proxy.server(host: host, port: port)
            // A `%` that starts no `%XX` escape is a `%` (URLComponents escapes it).
            if let user = parts.user {
                proxy.authorization = .basic(username: user, password: parts.password ?? "")
            }
            return ProxyChoice(address: address, variable: variable, configuration: proxy)
        case "socks5", "socks5h":
            guard parts.user == nil else { throw invalid("a SOCKS proxy with a user name") }
            return ProxyChoice(address: address, variable: variable, configuration: .socksServer(host: host, port: port))
        default:
            throw invalid("a \(scheme):// proxy")
        }
    }
}
