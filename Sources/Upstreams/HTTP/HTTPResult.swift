import Foundation

/// A response the HTTP layer accepted: 2xx, 304, or a status the caller asked to see.
public struct HTTPResult: Sendable {
    /// The URL that was requested (after paging-link resolution, before redirects).
    public var url: URL
    /// The URL the response came from: `url`, or where redirects led. Links in the response
    /// that are relative resolve against it, as a browser resolves them.
    public var finalURL: URL
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data

    public init(url: URL, finalURL: URL? = nil, status: Int, headers: [(String, String)], body: Data) {
        self.url = url
        self.finalURL = finalURL ?? url
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Values of header `name` (case-insensitive), in order.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.caseInsensitiveCompare(name) == .orderedSame }.map(\.1)
    }

    /// The first value of header `name`.
    public func header(_ name: String) -> String? { headerValues(name).first }

    /// What a message refusing this body as not JSON adds, in parentheses (empty when nothing
    /// helps): where redirects led, a `Content-Type` that is not JSON's, and an HTML page's title
    /// (a login page, a proxy's error page, a single-page app's index served for every path).
    func notJSONContext(redact: (String) -> String = { $0 }) -> String {
        var parts: [String] = []
        if finalURL != url { parts.append("redirected to \(URLSafety.redact(finalURL))") }
        if let type = header("Content-Type"), !type.lowercased().contains("json") {
            parts.append("Content-Type '\(CQuoting.excerpt(type, limit: 80, redact: redact))'")
        }
        if let title = htmlTitle { parts.append("page title '\(CQuoting.excerpt(title, limit: 80, redact: redact))'") }
        return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
    }

    /// True when the body starts (after white space) with `<`: markup, not JSON.
    var looksLikeMarkup: Bool { body.first { ![9, 10, 13, 32].contains($0) } == UInt8(ascii: "<") }

    /// The text of an HTML body's `<title>`, white space collapsed; nil when it has none.
    private var htmlTitle: String? {
        guard looksLikeMarkup else { return nil }
        let text = String(decoding: body.prefix(64 << 10), as: UTF8.self)
        guard let open = text.range(of: "<title", options: .caseInsensitive),
              let start = text[open.upperBound...].firstIndex(of: ">"),
              let close = text[start...].range(of: "</title", options: .caseInsensitive) else { return nil }
        let title = text[text.index(after: start)..<close.lowerBound].split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return title.isEmpty ? nil : title
    }

    /// The validator to store for a conditional request next time: the `ETag`, else the
    /// `Last-Modified` date as `Last-Modified: <date>` (never mistaken for an ETag, which is quoted).
    /// None over ``maxValidatorBytes``: it is stored in the manifest for every item.
    public var validator: String? {
        let validator = header("ETag") ?? header("Last-Modified").map { HTTPResult.lastModifiedPrefix + $0 }
        return validator.flatMap { $0.utf8.count <= HTTPResult.maxValidatorBytes ? $0 : nil }
    }

    /// The longest validator stored (real ones are tens of bytes). A server sending 79 KB ETags
    /// made a 2,000-item mirror's manifest 158 MB; without one, the item is downloaded whole
    /// when its listed version changes, as from a server that sends none.
    public static let maxValidatorBytes = 1024

    static let lastModifiedPrefix = "Last-Modified: "

    /// `validator` when a conditional request with it is safe for an item now listed at
    /// `version`: always for an ETag (a strong validator); for a `Last-Modified` date (one-second
    /// resolution, so weak) only when the listed version is a second or more after it. The server
    /// then dates a changed body after the cached one's date, and a 304 means the body did not
    /// change. A version within the date's second (a second edit in that second) or before it
    /// (an item restored from a backup, a clock set right) could get a 304 for another body: the
    /// body is then fetched unconditionally.
    public static func conditional(_ validator: String?, listedVersion version: Timestamp) -> String? {
        guard let validator, validator.hasPrefix(lastModifiedPrefix) else { return validator }
        guard let date = HTTPDate.parse(String(validator.dropFirst(lastModifiedPrefix.count))) else { return nil }
        return version >= date.adding(seconds: 1) ? validator : nil
    }

    /// The `code` field of a JSON error body (WordPress `rest_*` codes, DocuSign `errorCode`).
    public var errorCode: String? {
        guard case .object(let fields)? = try? JSONValue.parse(body) else { return nil }
        if case .string(let code)? = fields["code"] { return code }
        if case .string(let code)? = fields["errorCode"] { return code }
        return nil
    }
}
