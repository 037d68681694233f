import Foundation

/// A response the HTTP layer accepted: 2xx, 304, or a status the caller asked to see.
public struct HTTPResult: Sendable {
    /// The URL that was requested (after paging-link resolution, before redirects).
    public var url: URL
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data

    /// Values of header `name` (case-insensitive), in order.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.caseInsensitiveCompare(name) == .orderedSame }.map(\.1)
    }

    /// The first value of header `name`.
    public func header(_ name: String) -> String? { headerValues(name).first }

    /// The `code` field of a JSON error body (WordPress `rest_*` codes, DocuSign `errorCode`).
    public var errorCode: String? {
        guard case .object(let fields)? = try? JSONValue.parse(body) else { return nil }
        if case .string(let code)? = fields["code"] { return code }
        if case .string(let code)? = fields["errorCode"] { return code }
        return nil
    }
}
