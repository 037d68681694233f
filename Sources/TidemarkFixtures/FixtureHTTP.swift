import Foundation

/// A request as the emulated APIs see it.
struct FixtureRequest {
    var method: String
    /// Path as sent (percent-encoded).
    var path: String
    /// Percent-decoded path segments.
    var segments: [String]
    /// Query string as sent.
    var rawQuery: String
    /// Decoded query parameters, in order.
    var queryItems: [(String, String)]
    /// Header fields, names lowercased.
    var headers: [String: String]

    init(method: String, target: String, headers: [String: String]) {
        self.method = method
        self.headers = headers
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = parts.first.map(String.init) ?? "/"
        rawQuery = parts.count > 1 ? String(parts[1]) : ""
        segments = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        queryItems = rawQuery.split(separator: "&").map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s)
            }
            return (decode(kv[0]), kv.count > 1 ? decode(kv[1]) : "")
        }
    }

    /// The first value of query parameter `name`.
    func query(_ name: String) -> String? { queryItems.first(where: { $0.0 == name })?.1 }
}

/// A response before it is handed to Hummingbird.
struct FixtureReply {
    var status: Int
    var headers: [(String, String)]
    var body: Data

    init(status: Int = 200, headers: [(String, String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response of `object` (built from dictionaries, arrays, strings and numbers).
    static func json(_ object: Any, status: Int = 200, headers: [(String, String)] = []) -> FixtureReply {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("null".utf8)
        return FixtureReply(status: status, headers: [("Content-Type", "application/json; charset=UTF-8")] + headers, body: data)
    }

    /// A WordPress-style error: `{"code", "message", "data": {"status"}}`.
    static func wpError(_ status: Int, _ code: String, _ message: String, params: [String: String]? = nil) -> FixtureReply {
        var data: [String: Any] = ["status": status]
        if let params { data["params"] = params }
        return json(["code": code, "message": message, "data": data], status: status)
    }

    /// A DocuSign-style error: `{"errorCode", "message"}`.
    static func docuSignError(_ status: Int, _ code: String, _ message: String) -> FixtureReply {
        json(["errorCode": code, "message": message], status: status)
    }

    static func notFound(_ path: String) -> FixtureReply {
        json(["error": "no route for \(path)"], status: 404)
    }
}
